"""Dates in the forms dates.py reads lift the events that occurred then, through recall()."""

from __future__ import annotations

import pytest

from memlikehuman.engine import Engine
from memlikehuman.lifecycle import forget
from memlikehuman.records import Scope
from memlikehuman.retrieval.recall import recall

HOME = Scope("ana", "home")


@pytest.mark.parametrize(
    "query",
    ["the concert on 12.01.2024", "the concert on Jan 12", "the concert in January", "the concert on 2024-01-12"],
)
def test_a_date_form_in_the_query_lifts_the_event_of_that_time(engine: Engine, query: str) -> None:
    engine.record(
        HOME, "jan", "What a concert that was!", "user", "Ana", session_id="s1", occurred_at="2024-01-12T20:00:00Z"
    )
    engine.record(
        HOME, "mar", "What a concert that was!", "user", "Ana", session_id="s2", occurred_at="2024-03-20T20:00:00Z"
    )
    assert [hit.event.event_id for hit in recall(engine, HOME, "the concert").raw_fallback][0] == "mar"
    assert [hit.event.event_id for hit in recall(engine, HOME, query).raw_fallback][0] == "jan"


def test_an_event_that_says_last_month_is_found_under_that_month(engine: Engine) -> None:
    said = "I went to the support group last month, it was great."
    engine.record(HOME, "then", said, "user", "Ana", session_id="s1", occurred_at="2023-06-10T12:00:00Z")
    engine.record(
        HOME, "other", "The support group is great.", "user", "Ana", session_id="s2", occurred_at="2023-06-11T12:00:00Z"
    )
    assert [hit.event.event_id for hit in recall(engine, HOME, "support group").raw_fallback][0] == "other"
    result = recall(engine, HOME, "the support group in May 2023")
    assert [hit.event.event_id for hit in result.raw_fallback][0] == "then"
    assert result.raw_fallback[0].excerpt == said  # the stored text is never rewritten


def test_forgetting_an_event_removes_its_resolved_dates(engine: Engine) -> None:
    engine.record(HOME, "e1", "We moved yesterday.", "user", "Ana", occurred_at="2023-06-10T12:00:00Z")
    assert engine.db.scalar("SELECT count(*) FROM event_dates") == 1
    forget.forget(engine.db, HOME, "e1")
    assert engine.db.scalar("SELECT count(*) FROM event_dates") == 0
