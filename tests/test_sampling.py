"""MEMLIKEHUMAN_EXTRACTOR=sampling over real stdio: the client's model makes the memories."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from conftest import make_settings, serving
from sampling_support import answer, hanging, quoting_model, refusing, sampling_client

from memlikehuman.archive import claims
from memlikehuman.archive.db import open_database
from memlikehuman.engine import Engine
from memlikehuman.lifecycle import worker
from memlikehuman.records import Scope

TEXT = "I prefer pnpm over npm for this repo. Lodash is fine."


def _params(db: Path | str, **env: str) -> Any:
    return serving(db, MEMLIKEHUMAN_EXTRACTOR="sampling", **env)


def _state_soon(client: Any, event_id: str, wanted: set[str], seconds: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        event = client.ok("memory_read", record_id=event_id)["event"]
        if event["extraction_state"] in wanted or time.monotonic() > deadline:
            return event
        time.sleep(0.05)


def _attempted(db_path: Path | str, seconds: float = 20.0) -> int:
    """The attempts counted on the (one) event's claim, once there is one."""
    deadline = time.monotonic() + seconds
    db = open_database(db_path)
    try:
        while (found := db.scalar("SELECT max(attempts) FROM extraction_claims")) is None or not found:
            assert time.monotonic() < deadline, "no attempt was counted"
            time.sleep(0.05)
        return int(found)
    finally:
        db.close()


def test_a_client_with_sampling_gets_asked_and_its_answer_becomes_memories_labelled_with_its_model(db_path):
    asked: list[Any] = []
    with sampling_client(_params(db_path, MEMLIKEHUMAN_EXTRACTION_WAIT="20"), quoting_model(asked)) as client:
        out = client.ok("memory_record", event_id="s-1", text=TEXT, role="user", source="user")
        assert out["extraction_state"] == "complete" and len(out["memory_ids"]) == 1, out
        memory = client.ok("memory_read", record_id=out["memory_ids"][0])["memory"]
    assert memory["content"] == "The user said: I prefer pnpm over npm for this repo."
    assert memory["extractor"] == "sampling:host-model-1"
    assert len(asked) == 1 and asked[0].system_prompt.startswith("You extract long-term memories")
    assert asked[0].include_context == "none" and asked[0].max_tokens >= 1000


def test_memory_record_answers_pending_at_once_and_the_worker_completes_the_event_later(db_path):
    asked: list[Any] = []
    model, answered = quoting_model(asked), threading.Event()

    async def after_the_answer(ctx: Any, params: Any) -> Any:
        # The model answers once memory_record has: a worker faster than the call's own answer (under
        # load) would otherwise make it `complete`. A call that waited for the model waits 20 s here.
        await anyio.to_thread.run_sync(answered.wait, 20)
        return await model(ctx, params)

    with sampling_client(_params(db_path), after_the_answer) as client:
        out = client.ok("memory_record", event_id="s-2", text=TEXT, role="user", source="user")
        answered.set()
        assert out["extraction_state"] == "pending"
        assert _state_soon(client, "s-2", {"complete"})["extraction_state"] == "complete"
        assert client.ok("memory_recall", query="pnpm")["memories"][0]["extractor"] == "sampling:host-model-1"


def test_the_model_preference_hint_is_the_configured_extractor_model(db_path):
    asked: list[Any] = []
    env = {"MEMLIKEHUMAN_EXTRACTION_WAIT": "20", "MEMLIKEHUMAN_EXTRACTOR_MODEL": "claude-sonnet"}
    with sampling_client(_params(db_path, **env), quoting_model(asked)) as client:
        client.ok("memory_record", event_id="s-3", text=TEXT, role="user", source="user")
    assert [hint.name for hint in asked[0].model_preferences.hints] == ["claude-sonnet"]


def test_a_client_without_sampling_gets_no_request_its_events_stay_pending_and_recall_says_once_what_to_do(db_path):
    with sampling_client(_params(db_path, MEMLIKEHUMAN_EXTRACTION_WAIT="1"), None) as client:
        out = client.ok("memory_record", event_id="s-4", text=TEXT, role="user", source="user")
        assert out["extraction_state"] == "pending"
        first = client.ok("memory_recall", query="pnpm")["warnings"]
        second = client.ok("memory_recall", query="pnpm")["warnings"]
    advice = [w for w in first if "does not offer MCP sampling" in w]
    assert len(advice) == 1 and "MEMLIKEHUMAN_EXTRACTOR=command" in advice[0] and "memories" in advice[0]
    assert not [w for w in second if "does not offer MCP sampling" in w]


@pytest.mark.parametrize(
    ("callback", "says"),
    [(refusing, "refused the sampling request (-1: User rejected sampling request)"), (hanging, "within 0.5 s")],
    ids=["refuses", "hangs"],
)
def test_a_client_that_refuses_or_hangs_never_holds_up_memory_record_and_leaves_the_event_retryable(
    db_path, callback, says
):
    asked: list[Any] = []

    async def counted(ctx: Any, params: Any) -> Any:
        asked.append(params)
        return await callback(ctx, params)

    env = {"MEMLIKEHUMAN_EXTRACTION_WAIT": "1", "MEMLIKEHUMAN_TIMEOUT": "0.5"}
    with sampling_client(_params(db_path, **env), counted) as client:
        started = time.monotonic()
        out = client.ok("memory_record", event_id="s-5", text=TEXT, role="user", source="user")
        took = time.monotonic() - started
        assert out["extraction_state"] == "pending" and took < 10
        _attempted(db_path)
        event = client.ok("memory_read", record_id="s-5")["event"]  # still pending: a transient failure
        recall = client.ok("memory_recall", query="pnpm")
    assert event["extraction_state"] == "pending" and says in event["extraction_error"] and asked
    assert recall["coverage"]["events_pending"] == 1
    assert recall["raw_fallback"][0]["event_id"] == "s-5"  # the text is searchable all the same
    assert _attempted(db_path) >= 1  # counted against the bounded retries


def test_the_client_is_asked_only_about_the_scopes_it_works_in(db_path):
    # Another project's events in the same archive (recorded by its own hooks) never go to this client.
    with Engine(make_settings(db_path)) as engine:
        engine.record(Scope("default", "elsewhere"), "other-1", "Secret plans of another project.", "user", "user")
    asked: list[Any] = []
    with sampling_client(_params(db_path, MEMLIKEHUMAN_EXTRACTION_WAIT="20"), quoting_model(asked)) as client:
        out = client.ok("memory_record", event_id="s-7", text=TEXT, role="user", source="user")
        mine = client.ok("memory_record", event_id="s-8", text="Ruff runs before commits.", role="user",
                         source="user", project_id="mine")  # fmt: skip
        time.sleep(worker.POLL_SECONDS + 0.2)  # the worker polls: it had its chance at the other project's event
    prompts = [p.messages[0].content.text for p in asked]
    assert out["extraction_state"] == "complete" and mine["extraction_state"] == "complete"
    assert len(prompts) == 2 and not [p for p in prompts if "Secret plans" in p]


def test_a_refused_event_counts_attempts_and_is_asked_again_after_its_backoff(db_path, tmp_path):
    asked: list[Any] = []
    calls = {"n": 0}
    good = quoting_model(asked)

    async def refuse_first(ctx: Any, params: Any) -> Any:
        calls["n"] += 1
        return await (refusing(ctx, params) if calls["n"] == 1 else good(ctx, params))

    with sampling_client(_params(db_path, MEMLIKEHUMAN_EXTRACTION_WAIT="1"), refuse_first) as client:
        client.ok("memory_record", event_id="s-6", text=TEXT, role="user", source="user")
        event = _state_soon(client, "s-6", {"complete"}, seconds=claims.BACKOFF[0] + 15)
    assert event["extraction_state"] == "complete" and calls["n"] >= 2


def test_in_mcp_2026_07_28_memory_record_asks_the_model_inside_its_own_call_when_it_may_wait(db_path):
    asked: list[Any] = []
    env = {"MEMLIKEHUMAN_EXTRACTION_WAIT": "5"}
    with sampling_client(_params(db_path, **env), quoting_model(asked), mode="2026-07-28") as client:
        out = client.ok("memory_record", event_id="m-1", text=TEXT, role="user", source="user")
        again = client.ok("memory_record", event_id="m-1", text=TEXT, role="user", source="user")
        hit = client.ok("memory_recall", query="pnpm")["memories"][0]
    assert out["extraction_state"] == "complete" and out["duplicate"] is False and len(out["memory_ids"]) == 1
    assert again["duplicate"] is True and again["memory_ids"] == out["memory_ids"] and len(asked) == 1
    assert hit["extractor"] == "sampling:host-model-1" and hit["source"]["event_id"] == "m-1"


def test_in_mcp_2026_07_28_an_answer_whose_aliases_shifted_between_the_rounds_is_not_stored(db_path):
    acme = {"content": "The user works at Acme.", "quote": "I work at Acme", "subject": "user.employer"}
    dentist = {"content": "The user's dentist is Dr Who.", "quote": "My dentist is Dr Who", "subject": "user.dentist"}

    async def model(ctx: Any, params: Any) -> Any:
        # Between the rounds another call stores a memory of the scope: the prompt built again for the
        # answer lists other aliases than the one the model read.
        with Engine(make_settings(db_path)) as other:
            other.record(Scope(), "m-2", "My dentist is Dr Who.", "user", "user", memories=[dentist])
        item = {"content": "The user works at Globex.", "quote": "I now work at Globex", "supersedes": 1}
        return answer(json.dumps({"memories": [{**item, "kind": "fact", "basis": "stated"}]}))

    env = {"MEMLIKEHUMAN_EXTRACTION_WAIT": "5"}
    with sampling_client(_params(db_path, **env), model, mode="2026-07-28") as client:
        client.ok("memory_record", event_id="m-0", text="I work at Acme.", role="user", source="user", memories=[acme])
        out = client.ok("memory_record", event_id="m-1", text="I now work at Globex.", role="user", source="user")
        current = {m["content"] for m in client.ok("memory_recall", query="Acme Globex dentist Who")["memories"]}
    assert out["extraction_state"] == "pending" and "changed" in (out["error"] or "")
    assert current == {"The user works at Acme.", "The user's dentist is Dr Who."}


def test_in_mcp_2026_07_28_without_a_wait_events_stay_pending_and_recall_says_why(db_path):
    asked: list[Any] = []
    with sampling_client(_params(db_path), quoting_model(asked), mode="2026-07-28") as client:
        out = client.ok("memory_record", event_id="m-2", text=TEXT, role="user", source="user")
        warnings = client.ok("memory_recall", query="pnpm")["warnings"]
    assert out["extraction_state"] == "pending" and asked == []
    assert [w for w in warnings if "2026-07-28" in w and "MEMLIKEHUMAN_EXTRACTION_WAIT" in w]
