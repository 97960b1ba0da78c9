"""Batching: short events of one session go to the model together, each item tied to one event."""

from __future__ import annotations

import json
import re
from typing import Any

from conftest import make_settings
from openai_stub import Reply, ScriptedOpenAI, chat_reply, memory_item
from test_background_extraction import WAIT_SECONDS, Gate, env, record_in, wait_until

from memlikehuman.engine import Engine
from memlikehuman.records import Scope

_EVENTS = re.compile(
    r"<<<BEGIN DATA (\w+) EVENT (?:(\d+) of \d+ )?\(extract from this text\)>>>\n[^\n]*\n(.*?)\n<<<END DATA \1>>>", re.S
)


def blocks(body: dict[str, Any]) -> list[tuple[int, str]]:
    """(number, text) of each EVENT block of a request (a single event's block is number 1)."""
    return [(int(number or 1), text) for _, number, text in _EVENTS.findall(body["messages"][1]["content"])]


def batch_answer(body: dict[str, Any], shift: int = 0) -> Reply:
    """One memory per EVENT block, quoting its "I like X (ID)"; `shift` names the wrong block."""
    items = []
    for number, text in blocks(body):
        thing, event_id = re.findall(r"I like (\w+) \((\w+)\)", text)[0]
        item = memory_item(f"The user likes {thing} ({event_id}).", f"I like {thing} ({event_id})")
        items.append({"event": number + shift, **item})
    return chat_reply(json.dumps({"memories": items}))


def batch_env(base_url: str) -> dict[str, str]:
    return {**env(base_url), "MEMLIKEHUMAN_EXTRACTION_BATCH": "4"}


def memory_counts(engine: Engine, *event_ids: str) -> list[int]:
    return [len(engine.read(Scope(), event_id).event.memory_ids) for event_id in event_ids]


def test_short_events_that_queue_up_behind_a_model_call_go_to_the_model_together_each_item_to_its_event(db_path):
    gate = Gate(batch_answer)
    with ScriptedOpenAI(default_chat=gate) as api, Engine(make_settings(db_path, **batch_env(api.base_url))) as engine:
        try:
            engine.start_extraction()
            record_in(engine, "e1")
            assert gate.waiting.acquire(timeout=WAIT_SECONDS)  # e1 alone is with the model
            for event_id, thing in (("e2", "milk"), ("e3", "jam"), ("e4", "figs")):
                record_in(engine, event_id, thing)
            gate.open()
            wait_until(lambda: engine.read(Scope(), "e4").event.extraction_state == "complete", "the batch")
            counts = memory_counts(engine, "e1", "e2", "e3", "e4")
            contents = [engine.read(Scope(), m).memory.content for m in engine.read(Scope(), "e3").event.memory_ids]
        finally:
            gate.open()
    assert [len(blocks(body)) for _, body in api.requests] == [1, 3]
    assert counts == [1, 1, 1, 1]
    assert contents == ["The user likes jam (e3)."]


def test_an_item_tied_to_the_wrong_event_of_a_batch_fails_that_events_quote_check(db_path):
    gate = Gate(lambda body: batch_answer(body, shift=1) if len(blocks(body)) > 1 else batch_answer(body))
    with ScriptedOpenAI(default_chat=gate) as api, Engine(make_settings(db_path, **batch_env(api.base_url))) as engine:
        try:
            engine.start_extraction()
            record_in(engine, "e1")
            assert gate.waiting.acquire(timeout=WAIT_SECONDS)
            record_in(engine, "e2", "milk")
            record_in(engine, "e3", "jam")
            gate.open()
            wait_until(lambda: engine.read(Scope(), "e3").event.extraction_state == "complete", "the batch")
            counts = memory_counts(engine, "e1", "e2", "e3")
        finally:
            gate.open()
    # e2's item named block 2 (e3): it fails e3's quote check; e3's item named block 3, which is none.
    assert counts == [1, 0, 0]
    assert len(api.requests) == 2


def test_a_long_event_is_never_batched(db_path):
    gate = Gate(batch_answer)
    with ScriptedOpenAI(default_chat=gate) as api, Engine(make_settings(db_path, **batch_env(api.base_url))) as engine:
        try:
            engine.start_extraction()
            record_in(engine, "e1")
            assert gate.waiting.acquire(timeout=WAIT_SECONDS)
            long_text = "I like tea (e2). " + "And more words follow here. " * 40
            engine.record(Scope(), "e2", long_text, "user", "chat")
            record_in(engine, "e3", "jam")
            gate.open()
            wait_until(lambda: engine.read(Scope(), "e3").event.extraction_state == "complete", "all three")
        finally:
            gate.open()
    assert [len(blocks(body)) for _, body in api.requests] == [1, 1, 1]


def test_a_memory_forgotten_while_a_batch_is_with_the_model_is_not_restated(db_path):
    secret = "The user's safe code is 4711."

    def answer(body: dict[str, Any]) -> Reply:
        shown = secret in body["messages"][1]["content"]
        if shown and len(blocks(body)) > 1:  # the batch: another tool call forgets the memory meanwhile
            with Engine(make_settings(db_path)) as other:
                other.forget(Scope(), "e0")
        reply = json.loads(batch_answer(body).body["choices"][0]["message"]["content"])
        if shown:  # the model copies what it was shown, quoting the first event ("I like milk")
            quote = blocks(body)[0][1].split(" (")[0]
            reply["memories"].append({"event": 1, **memory_item(secret, quote)})
        return chat_reply(json.dumps(reply))

    gate = Gate(answer)
    with ScriptedOpenAI(default_chat=gate) as api, Engine(make_settings(db_path, **batch_env(api.base_url))) as engine:
        try:
            safe = [{"content": secret, "quote": "My safe code is 4711."}]
            engine.record(Scope(), "e0", "My safe code is 4711.", "user", "chat", memories=safe)
            engine.start_extraction()
            record_in(engine, "e1")
            assert gate.waiting.acquire(timeout=WAIT_SECONDS)  # e1 alone is with the model
            for event_id, thing in (("e2", "milk"), ("e3", "jam")):
                record_in(engine, event_id, thing)
            gate.open()
            wait_until(lambda: engine.read(Scope(), "e3").event.extraction_state == "complete", "the batch, again")
            contents = [row["content"] for row in engine.db.query("SELECT content FROM memories")]
        finally:
            gate.open()
    assert [len(blocks(body)) for _, body in api.requests] == [1, 2, 2]  # the first batch answer was not stored
    assert sorted(contents) == ["The user likes jam (e3).", "The user likes milk (e2).", "The user likes tea (e1)."]
