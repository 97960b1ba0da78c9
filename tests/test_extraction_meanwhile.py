"""What changes while the extractor's model answers, and answers that cannot be stored.

The real OpenAI-compatible provider talks HTTP to the scripted server on 127.0.0.1; a forget or a
correction through a second engine on the same archive plays another tool call made meanwhile.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import make_settings
from openai_stub import Reply, ScriptedOpenAI, chat_reply, extraction_reply, memory_item
from test_extraction import extractor_settings

from memlikehuman.engine import Engine
from memlikehuman.records import Scope

SCOPE = Scope()
SECRET = "The user's safe code is 4711."


@pytest.fixture
def engine_with_stub(db_path: Path) -> Iterator[tuple[Engine, ScriptedOpenAI]]:
    with ScriptedOpenAI() as api, Engine(extractor_settings(db_path, api.base_url)) as engine:
        yield engine, api


def meanwhile(db_path: Path, act: Callable[[Engine], Any], answer: Reply) -> Callable[[dict[str, Any]], Reply]:
    """A model that lets `act` happen through another engine (no extractor) while it answers, once."""
    done: list[bool] = []

    def reply(body: dict[str, Any]) -> Reply:
        if not done:
            done.append(True)
            with Engine(make_settings(db_path)) as other:
                act(other)
        return answer

    return reply


def stored_contents(engine: Engine) -> list[str]:
    return [row["content"] for row in engine.db.query("SELECT content FROM memories ORDER BY id")]


def test_a_memory_forgotten_while_the_model_answers_is_not_stored_again(engine_with_stub, db_path):
    engine, api = engine_with_stub
    engine.record(
        SCOPE,
        "e1",
        "My safe code is 4711.",
        "user",
        "chat",
        memories=[{"content": SECRET, "quote": "My safe code is 4711"}],
    )
    restated = extraction_reply(memory_item(SECRET, "I went shopping today."))
    api.default_chat = meanwhile(db_path, lambda other: other.forget(SCOPE, "e1"), restated)
    result = engine.record(SCOPE, "e2", "I went shopping today.", "user", "chat")
    assert result.extraction_state == "pending" and "changed (a forget, a correction) while it answered" in (
        result.error or ""
    )
    assert not any("4711" in content for content in stored_contents(engine))


def test_a_memory_corrected_while_the_model_answers_is_not_restated_over_the_correction(engine_with_stub, db_path):
    engine, api = engine_with_stub
    berlin = {"content": "The user lives in Berlin.", "quote": "I live in Berlin", "subject": "user.home_city"}
    first = engine.record(SCOPE, "e1", "I live in Berlin.", "user", "chat", memories=[berlin])

    def correct(other: Engine) -> None:
        other.correct(SCOPE, first.memory_ids[0], "The user lives in Lisbon.", "it was Lisbon all along")

    restated = extraction_reply(
        memory_item("The user lives in Berlin.", "The heating in my flat", subject="user.home_city")
    )
    api.default_chat = meanwhile(db_path, correct, restated)
    engine.record(SCOPE, "e2", "The heating in my flat is broken.", "user", "chat")
    current = [hit.memory.content for hit in engine.recall(SCOPE, "where does the user live").memories]
    assert current == ["The user lives in Lisbon."]


@pytest.mark.parametrize(
    "answer",
    ['{"memories": ' + "[" * 100_000, '{"memories": [], "n": ' + "9" * 5_000 + "}"],
    ids=["nested too deep", "a huge integer"],
)
def test_an_answer_json_cannot_read_fails_the_event_with_a_reason_and_no_traceback(engine_with_stub, answer):
    engine, api = engine_with_stub
    api.chat.append(chat_reply(answer))
    result = engine.record(SCOPE, "e1", "I like tea.", "user", "chat")
    assert result.extraction_state == "failed" and "extractor's answer" in (result.error or "")


def test_an_item_with_a_lone_surrogate_is_rejected_and_the_rest_kept(engine_with_stub):
    engine, api = engine_with_stub
    broken = json.dumps({"memories": [{**memory_item("x", "I like tea"), "content": "The user likes \ud83d tea"}]})
    good = memory_item("The user likes tea.", "I like tea")
    api.chat.append(chat_reply(broken[:-2] + ", " + json.dumps(good) + "]}"))
    result = engine.record(SCOPE, "e1", "I like tea.", "user", "chat")
    assert result.extraction_state == "complete" and stored_contents(engine) == ["The user likes tea."]
    assert any("not valid Unicode" in warning for warning in result.warnings)


def test_a_failed_extraction_keeps_no_words_of_the_answer_in_the_event(engine_with_stub, db_path):
    engine, api = engine_with_stub
    engine.record(SCOPE, "e1", "My PIN is 9931-ZX.", "user", "chat", memories=[])
    api.chat.append(chat_reply("Sure! The previous turn said: My PIN is 9931-ZX."))
    result = engine.record(SCOPE, "e2", "Thanks.", "user", "chat")
    assert result.extraction_state == "failed" and "9931" not in (result.error or "")
