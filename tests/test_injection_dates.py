"""A date the prompt names, in what the prompt hook is handed (retrieval/injection.py): it counts as one
word, held by the items that occurred then, whatever words they use for it."""

from __future__ import annotations

import pytest

from memlikehuman.engine import Engine
from memlikehuman.records import Scope

HOME = Scope("ana", "home")
# Six turns on databases, so that the word weighs little; each in a session of its own, so that no
# turn's coverage borrows the words of the turn before it.
TURNS = [
    ("mar-3", "We settled on Postgres for the billing database today.", "2026-03-03T10:00:00Z"),
    ("may-10", "The database backups run nightly at two.", "2026-05-10T10:00:00Z"),
    ("apr-1", "The reporting database is read-only for analysts.", "2026-04-01T10:00:00Z"),
    ("apr-8", "Database migrations go through the review queue.", "2026-04-08T10:00:00Z"),
    ("apr-15", "Our staging database is refreshed every Monday.", "2026-04-15T10:00:00Z"),
    ("apr-22", "The database password lives in the vault.", "2026-04-22T10:00:00Z"),
    ("mar-5", "Lunch at the Thai place was great.", "2026-03-05T10:00:00Z"),
]


def _record(engine: Engine) -> None:
    for event_id, text, at in TURNS:
        engine.record(HOME, event_id, text, "user", "Ana", session_id=event_id, occurred_at=at)


@pytest.mark.parametrize(("day", "expected"), [("3 March 2026", "mar-3"), ("April 22, 2026", "apr-22")])
def test_a_prompt_naming_a_date_is_handed_the_turn_of_that_date_and_no_other(
    engine: Engine, day: str, expected: str
) -> None:
    _record(engine)
    handed = engine.inject(HOME, f"What did we decide about the database on {day}?")
    # The other database turns hold no more of the prompt than "database"; the turn of 5 March, nothing.
    assert [item.record_id for item in handed] == [expected]
