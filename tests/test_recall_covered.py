"""A covered event (its memories cover what matched) passes its place in the ranking to its memory."""

from __future__ import annotations

from typing import Any

from memlikehuman import clock
from memlikehuman.archive import events, memories
from memlikehuman.engine import Engine
from memlikehuman.records import Candidate, Scope
from memlikehuman.retrieval.recall import recall

HOME = Scope("ana", "home")
TWIN = Scope("ana", "twin")  # the same events without memories: what raw fallback alone makes of them

TURNS = (
    "Are you still making music these days?",
    "I play the cello in a quartet on Sundays.",
    "Our quartet rehearses in the old church hall.",
    "The quartet needs a new viola player.",
)


def record(engine: Engine, scope: Scope, number: int, text: str) -> int:
    return engine.record(scope, f"{scope.project_id}-e{number}", text, "user", "Ana", session_id="s1").sequence


def musician(quote: str) -> Candidate:
    return Candidate(
        content="Ana is a musician in a string ensemble.",
        quote=quote,
        kind="fact",
        basis="stated",
        subject=None,
        valid_from=clock.stamp("2024-01-01T00:00:00Z", "valid_from"),
    )


def archive(engine: Engine) -> None:
    for scope in (HOME, TWIN):
        for number, text in enumerate(TURNS, start=1):
            sequence = record(engine, scope, number, text)
            if scope == HOME and number == 2:
                event = events.load(engine.db, sequence)
                memories.store(engine.db, event, [musician(text)], "2024-06-01T00:00:00.000000Z")


def merged(result: Any) -> list[tuple[float, str]]:
    """Memories (as the event they come from) and raw hits in one list by score, as bench/extraction does."""
    hits = [(hit.score, hit.memory.event_id.split("-")[-1]) for hit in result.memories]
    hits += [(hit.score, hit.event.event_id.split("-")[-1]) for hit in result.raw_fallback]
    return sorted(hits, key=lambda pair: -pair[0])


def test_a_covered_event_is_represented_by_its_memory_even_when_the_memory_shares_no_query_word(engine: Engine):
    archive(engine)
    result = recall(engine, HOME, "cello")
    assert [hit.memory.content for hit in result.memories] == ["Ana is a musician in a string ensemble."]
    assert "home-e2" not in [hit.event.event_id for hit in result.raw_fallback]  # covered: shown as its memory


def test_the_memory_of_a_covered_event_scores_what_its_event_scores_in_raw_fallback(engine: Engine):
    archive(engine)
    for query in ("cello", "quartet Sundays", "music quartet"):
        alone = {event_id: score for score, event_id in merged(recall(engine, TWIN, query))}
        with_memory = recall(engine, HOME, query)
        assert [hit.score for hit in with_memory.memories] == [alone["e2"]], query
        assert [event_id for _, event_id in merged(with_memory)] == list(alone), query


def test_a_memory_not_yet_valid_does_not_hide_its_event_and_a_corrected_one_still_does(tmp_path: Any) -> None:
    from conftest import connected, make_settings

    from memlikehuman.server import build_server

    plan = "I start my new job at Acme on 1 March 2099."
    given = {"content": "The user works at Acme", "quote": "I start my new job at Acme", "subject": "user.employer"}
    with connected(build_server(make_settings(tmp_path / "m.sqlite3"))) as client:
        future = [{**given, "valid_from": "2099-03-01T00:00:00Z"}]
        made = client.ok("memory_record", event_id="j1", text=plan, role="user", source="ana", memories=future)
        before = client.ok("memory_recall", query="Acme job")
        withdrawn = "The user is not joining Acme"
        client.ok("memory_correct", memory_id=made["memory_ids"][0], content=withdrawn, reason="offer withdrawn")
        after = client.ok("memory_recall", query="Acme job")
    # Not valid before 2099, so not shown; its event is, or the plan would be nowhere in recall.
    assert before["memories"] == [] and [hit["excerpt"] for hit in before["raw_fallback"]] == [plan]
    # Corrected away: the revoked memory's quote still keeps the statement from coming back raw.
    assert plan not in [hit["excerpt"] for hit in after["raw_fallback"]]
