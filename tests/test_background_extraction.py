"""Background extraction: memory_record answers before the model does; a worker catches up.

The provider is the real OpenAI-compatible one, talking HTTP to the scripted server on 127.0.0.1;
a "gate" holds its answers until the test opens it, so a test sees the in-flight state for sure.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import SyncClient, connected, make_settings, serving
from openai_stub import Reply, ScriptedOpenAI, chat_reply, extraction_reply, memory_item

from memlikehuman.admin import stats
from memlikehuman.archive import claims
from memlikehuman.clock import Clock
from memlikehuman.engine import Engine
from memlikehuman.records import Scope

WAIT_SECONDS = 60  # how long a test waits for the worker before it fails (never a speed check)


def wait_until(check: Callable[[], Any], what: str) -> Any:
    """Poll until check() is truthy; fail after WAIT_SECONDS."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"gave up waiting for {what}")


def quote_answer(body: dict[str, Any]) -> Reply:
    """One memory quoting the event's "I like X (ID)" (the EVENT block comes last in the prompt)."""
    thing, event_id = re.findall(r"I like (\w+) \((\w+)\)", body["messages"][1]["content"])[-1]
    return extraction_reply(memory_item(f"The user likes {thing} ({event_id}).", f"I like {thing} ({event_id})"))


def event_ids(api: ScriptedOpenAI) -> list[str]:
    """The event of each chat request, in the order the model was asked."""
    return [
        re.findall(r"I like \w+ \((\w+)\)", body["messages"][1]["content"])[-1]
        for path, body in api.requests
        if path.endswith("/chat/completions")
    ]


class Gate:
    """A default_chat that holds every answer until open() (or the test ends)."""

    def __init__(self, answer: Callable[[dict[str, Any]], Reply] = quote_answer) -> None:
        self.answer = answer
        self.opened = threading.Event()
        self.waiting = threading.Semaphore(0)

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.waiting.release()
        self.opened.wait(WAIT_SECONDS)
        return self.answer(body)

    def open(self) -> None:
        self.opened.set()


def env(base_url: str, wait: str = "0", timeout: str = "20") -> dict[str, str]:
    return {
        "MEMLIKEHUMAN_EXTRACTOR": "openai",
        "MEMLIKEHUMAN_EXTRACTOR_BASE_URL": base_url,
        "MEMLIKEHUMAN_EXTRACTOR_API_KEY": "test",
        "MEMLIKEHUMAN_TIMEOUT": timeout,
        "MEMLIKEHUMAN_EXTRACTION_WAIT": wait,
    }


class MovedClock(Clock):
    """A clock that stands still until `advance` moves it and wakes the worker's waits: a backoff
    passes when the test says, at once."""

    def __init__(self) -> None:
        self.start, self.ahead = time.time(), 0.0
        self.waits: set[threading.Condition] = set()

    def time(self) -> float:
        return self.start + self.ahead

    def wait(self, condition: threading.Condition, until: Callable[[], bool], seconds: float) -> None:
        self.waits.add(condition)
        ahead = self.ahead
        condition.wait_for(lambda: until() or self.ahead != ahead, seconds)

    def advance(self, seconds: float) -> None:
        self.ahead += seconds
        for condition in list(self.waits):
            with condition:
                condition.notify_all()


@contextmanager
def stub_engine(
    db_path: Path, wait: str = "0", clock: Clock | None = None, **stub: Any
) -> Iterator[tuple[ScriptedOpenAI, Engine]]:
    with (
        ScriptedOpenAI(default_chat=quote_answer, **stub) as api,
        Engine(make_settings(db_path, **env(api.base_url, wait=wait)), clock=clock) as engine,
    ):
        yield api, engine


@contextmanager
def gated_stub() -> Iterator[tuple[ScriptedOpenAI, Gate]]:
    gate = Gate()
    with ScriptedOpenAI(default_chat=gate) as api:
        try:
            yield api, gate
        finally:
            gate.open()


def record(client: SyncClient, event_id: str, thing: str = "tea", **scope: str) -> dict[str, Any]:
    text = f"I like {thing} ({event_id})."
    return client.ok("memory_record", event_id=event_id, text=text, role="user", source="chat", **scope)


def state_of(client: SyncClient, event_id: str) -> str:
    return str(client.ok("memory_read", record_id=event_id)["event"]["extraction_state"])


def record_in(engine: Engine, event_id: str, thing: str = "tea", scope: Scope | None = None) -> str:
    return engine.record(scope or Scope(), event_id, f"I like {thing} ({event_id}).", "user", "chat").extraction_state


def memories_of(db_path: Path, event_id: str) -> int:
    with Engine(make_settings(db_path)) as engine:
        return int(
            engine.db.scalar(
                "SELECT count(*) FROM memories m JOIN events e ON e.sequence = m.event_sequence WHERE e.event_id = ?",
                (event_id,),
            )
        )


# -- over stdio, where a host sees it -------------------------------------------------------------


def test_memory_record_over_stdio_answers_pending_while_the_model_works_and_memory_read_shows_it_complete_later(
    db_path,
):
    with gated_stub() as (api, gate), connected(serving(db_path, **env(api.base_url))) as client:
        first = record(client, "e1")
        assert gate.waiting.acquire(timeout=WAIT_SECONDS), "the worker never asked the model"
        # The model has the request and has not answered: memory_record did not wait for it.
        assert (first["extraction_state"], first["memory_ids"]) == ("pending", [])
        assert "queued in the background" in first["error"]
        coverage = client.ok("memory_recall", query="tea")["coverage"]
        assert (coverage["events_pending"], coverage["events_in_flight"]) == (1, 1)
        gate.open()
        wait_until(lambda: state_of(client, "e1") == "complete", "e1 to complete")
        read = client.ok("memory_read", record_id="e1")
        memory = client.ok("memory_read", record_id=read["event"]["memory_ids"][0])["memory"]
        coverage = client.ok("memory_recall", query="tea")["coverage"]
    assert memory["source"]["quote"] == "I like tea (e1)"
    assert (coverage["events_pending"], coverage["events_in_flight"]) == (0, 0)


def test_a_server_started_over_an_archive_with_pending_events_extracts_them_without_new_calls(db_path):
    with Engine(make_settings(db_path)) as engine:  # recorded without an extractor: pending
        for event_id in ("e1", "e2"):
            assert record_in(engine, event_id) == "pending"
    with ScriptedOpenAI(default_chat=quote_answer) as api, connected(serving(db_path, **env(api.base_url))) as c:
        wait_until(lambda: state_of(c, "e2") == "complete", "the pending events to complete")
        assert state_of(c, "e1") == "complete"


def test_a_large_wait_answers_complete_with_the_memories_as_inline_extraction_did(db_path):
    with (
        ScriptedOpenAI(default_chat=quote_answer) as api,
        connected(serving(db_path, **env(api.base_url, wait="60"))) as client,
    ):
        result = record(client, "e1")
    assert result["extraction_state"] == "complete"
    assert len(result["memory_ids"]) == 1 and result["error"] is None


# -- order, retries, failures ---------------------------------------------------------------------


def test_events_of_one_scope_are_extracted_one_at_a_time_in_recording_order(db_path):
    with gated_stub() as (api, gate), Engine(make_settings(db_path, **env(api.base_url))) as engine:
        engine.start_extraction()
        ids = [f"e{i}" for i in range(5)]
        for event_id in ids:
            assert record_in(engine, event_id) == "pending"
        assert gate.waiting.acquire(timeout=WAIT_SECONDS)
        assert claims.in_flight(engine.db, Scope()) == 1  # two worker threads, one scope: one at a time
        gate.open()
        wait_until(lambda: len(event_ids(api)) == 5 and claims.in_flight(engine.db, Scope()) == 0, "all five")
    assert event_ids(api) == ids
    assert [memories_of(db_path, event_id) for event_id in ids] == [1] * 5


def test_a_transient_failure_is_retried_after_a_backoff_and_the_event_completes(db_path):
    busy = Reply(status=503, body={"error": {"message": "overloaded"}})
    clock = MovedClock()
    with stub_engine(db_path, clock=clock, chat=[busy, busy]) as (api, engine):
        engine.start_extraction()
        record_in(engine, "e1")
        failed = "SELECT * FROM extraction_claims WHERE attempts = 1 AND claimed_by IS NULL AND retry_at IS NOT NULL"
        claim = wait_until(lambda: engine.db.one(failed), "the failed attempt")
        assert claim["retry_at"] == clock.time() + claims.BACKOFF[0]  # the backoff runs on the worker's clock
        assert len(api.requests) == 2 and engine.read(Scope(), "e1").event.extraction_state == "pending"
        clock.advance(claims.BACKOFF[0])  # the worker's clock: no 2 s sleep
        wait_until(lambda: engine.read(Scope(), "e1").event.extraction_state == "complete", "the retry")
        # The claim goes in the transaction after the one that completes the event: wait for it too
        # (a completed event leaves no claim behind; a claim never released fails the wait).
        wait_until(lambda: engine.db.one("SELECT * FROM extraction_claims") is None, "the claim's release")
    assert len(api.requests) == 3  # the provider's own quick retry, then the worker's after its backoff


def test_an_unusable_answer_leaves_the_event_failed_and_it_is_not_asked_for_again(db_path):
    with stub_engine(db_path, wait="60", chat=[chat_reply("not json at all")]) as (api, engine):
        first = engine.record(Scope(), "e1", "I like tea (e1).", "user", "chat")
        second = engine.record(Scope(), "e2", "I like milk (e2).", "user", "chat")
    assert (first.extraction_state, second.extraction_state) == ("failed", "complete")
    assert "not valid JSON" in (first.error or "")
    assert event_ids(api)[1:] == ["e2"]


def test_recording_a_failed_event_again_queues_it_again(db_path):
    with stub_engine(db_path, wait="60", chat=[chat_reply("not json at all")]) as (_, engine):
        assert record_in(engine, "e1") == "failed"
        again = engine.record(Scope(), "e1", "I like tea (e1).", "user", "chat")
    assert (again.duplicate, again.extraction_state, len(again.memory_ids)) == (True, "complete", 1)


def test_an_event_refused_for_good_stays_pending_without_blocking_the_next_event_of_its_scope(db_path):
    too_long = Reply(status=400, body={"error": {"message": "prompt exceeds the context window"}})
    with stub_engine(db_path, wait="60", chat=[too_long] * 3) as (_, engine):
        first = engine.record(Scope(), "e1", "I like tea (e1).", "user", "chat")
        second = engine.record(Scope(), "e2", "I like milk (e2).", "user", "chat")
    assert (first.extraction_state, second.extraction_state) == ("pending", "complete")
    assert "context window" in (first.error or "")


# -- claims shared by processes, shutdown ---------------------------------------------------------


@pytest.mark.heavy
def test_two_servers_on_one_archive_extract_every_event_exactly_once(db_path):
    with ScriptedOpenAI(default_chat=quote_answer) as api:
        params = serving(db_path, **env(api.base_url))
        with connected(params) as first, connected(params) as second:
            for i in range(8):
                record(first if i % 2 else second, f"e{i}", project_id=f"p{i % 3}")
            wait_until(lambda: all(state_of_any(first, f"e{i}", f"p{i % 3}") == "complete" for i in range(8)), "all")
    asked = event_ids(api)
    assert sorted(asked) == [f"e{i}" for i in range(8)]  # no event went to the model twice
    assert [memories_of(db_path, f"e{i}") for i in range(8)] == [1] * 8


def state_of_any(client: SyncClient, event_id: str, project: str) -> str:
    return str(client.ok("memory_read", record_id=event_id, project_id=project)["event"]["extraction_state"])


def test_closing_the_engine_does_not_wait_for_a_running_model_call_and_leaves_the_event_to_the_next_worker(
    db_path,
):
    with gated_stub() as (api, gate):
        engine = Engine(make_settings(db_path, **env(api.base_url)))
        engine.start_extraction()
        record_in(engine, "e1")
        assert gate.waiting.acquire(timeout=WAIT_SECONDS)
        engine.close()  # returns with the model call still held by the gate
        assert not gate.opened.is_set()
        with Engine(make_settings(db_path)) as reopened:
            claim = reopened.db.one("SELECT claimed_by, claimed_until FROM extraction_claims")
            assert reopened.read(Scope(), "e1").event.extraction_state == "pending"
        assert claim == {"claimed_by": None, "claimed_until": None}
        gate.open()
        with Engine(make_settings(db_path, **env(api.base_url))) as restarted:
            restarted.start_extraction()
            wait_until(lambda: restarted.read(Scope(), "e1").event.extraction_state == "complete", "the restart")
    assert memories_of(db_path, "e1") == 1


def test_a_claim_of_a_killed_process_on_this_host_is_taken_over_at_once_and_an_expired_one_after_its_lease(
    db_path,
):
    with Engine(make_settings(db_path)) as engine:
        for event_id in ("e1", "e2"):
            record_in(engine, event_id, scope=Scope("p", event_id))
        dead = subprocess_pid_that_exited()
        now = time.time()
        engine.db.conn.execute(
            "INSERT INTO extraction_claims (event_sequence, persona_id, project_id, claimed_by, claimed_until)"
            " VALUES (1, 'p', 'e1', ?, ?), (2, 'p', 'e2', 'elsewhere:1:x', ?)",
            (f"{claims.owner_id().rsplit(':', 2)[0]}:{dead}:x", now + 3600, now - 1),
        )
        assert claims.in_flight(engine.db, Scope("p", "e1")) == 1
        assert claims.reap_dead(engine.db, time.time()) == 1
        taken = [claims.claim_next(engine.db, "me:1:y", 60.0, now=time.time()) for _ in range(3)]
    assert taken == [1, 2, None]


def subprocess_pid_that_exited() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stats_count_the_events_in_flight(db_path):
    with gated_stub() as (api, gate), Engine(make_settings(db_path, **env(api.base_url))) as engine:
        engine.start_extraction()
        record_in(engine, "e1")
        record_in(engine, "e2")
        assert gate.waiting.acquire(timeout=WAIT_SECONDS)
        counts = stats.collect(engine.db, vector_model=None).totals()
        gate.open()
    assert (counts.events, counts.extraction_pending, counts.extraction_in_flight) == (2, 2, 1)
