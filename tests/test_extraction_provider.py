"""The OpenAI-compatible extractor against the scripted server: formats, retries, errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_settings
from openai_stub import Reply, ScriptedOpenAI, chat_reply, extraction_reply, memory_item

from memlikehuman.engine import Engine
from memlikehuman.lifecycle import extract_schema
from memlikehuman.records import Scope

REJECT_FORMAT = Reply(status=400, body={"error": {"message": "response_format json_schema is not supported"}})
TEA = memory_item("The user likes tea.", "I like tea")


@pytest.fixture
def stub() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as api:
        yield api


@pytest.fixture
def engine(db_path: Path, stub: ScriptedOpenAI) -> Iterator[Engine]:
    settings = make_settings(
        db_path,
        MEMLIKEHUMAN_EXTRACTOR="openai",
        MEMLIKEHUMAN_EXTRACTOR_BASE_URL=stub.base_url,
        MEMLIKEHUMAN_EXTRACTOR_API_KEY="test",
        MEMLIKEHUMAN_EXTRACTOR_MODEL="tiny-model",
        MEMLIKEHUMAN_TIMEOUT="10",
        MEMLIKEHUMAN_EXTRACTION_WAIT="60",
    )
    with Engine(settings) as opened:
        yield opened


def record(engine: Engine, event_id: str, text: str = "I like tea."):
    return engine.record(Scope(), event_id, text, "user", "chat")


def formats(stub: ScriptedOpenAI) -> list[str]:
    return [body.get("response_format", {}).get("type", "none") for _, body in stub.requests]


def test_the_request_asks_the_configured_model_for_the_strict_json_schema(engine, stub):
    stub.chat.append(extraction_reply(TEA))
    record(engine, "e1")
    path, body = stub.requests[0]
    assert path == "/v1/chat/completions"
    assert body["model"] == "tiny-model"
    assert body["temperature"] == 0
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "memories", "schema": extract_schema.for_event("I like tea."), "strict": True},
    }


def test_a_server_rejecting_json_schema_is_asked_again_in_json_mode_and_remembered(engine, stub):
    stub.chat += [REJECT_FORMAT, extraction_reply(TEA), extraction_reply()]
    first = record(engine, "e1")
    record(engine, "e2", "Hello again.")
    assert first.extraction_state == "complete"
    assert len(first.memory_ids) == 1
    assert formats(stub) == ["json_schema", "json_object", "json_object"]


def test_a_server_rejecting_both_json_formats_is_asked_without_a_response_format(engine, stub):
    stub.chat += [REJECT_FORMAT, Reply(status=422, body={"error": {"message": "json_object unsupported"}})]
    stub.chat.append(
        chat_reply(
            '```json\n{"memories": [' + '{"content": "The user likes tea.", "quote": "I like tea",'
            ' "kind": "fact", "basis": "stated"}]}\n```'
        )
    )
    result = record(engine, "e1")
    assert formats(stub) == ["json_schema", "json_object", "none"]
    assert result.extraction_state == "complete"
    assert len(result.memory_ids) == 1


def test_a_request_rejected_in_every_format_stays_pending_and_does_not_downgrade_later_requests(engine, stub):
    too_long = Reply(status=400, body={"error": {"message": "prompt exceeds the context window"}})
    stub.chat += [too_long] * 3 + [extraction_reply()]
    result = record(engine, "e1")
    record(engine, "e2", "Short.")
    assert result.extraction_state == "pending"
    assert "HTTP 400" in result.error
    assert "context window" in result.error
    assert formats(stub) == ["json_schema", "json_object", "none", "json_schema"]


def test_one_transient_failure_is_retried_within_the_same_call(engine, stub):
    stub.chat += [Reply(status=429, body={"error": {"message": "slow down"}}), extraction_reply(TEA)]
    result = record(engine, "e1")
    assert result.extraction_state == "complete"
    assert len(stub.requests) == 2


def test_a_second_transient_failure_leaves_the_event_pending(engine, stub):
    stub.chat += [Reply(status=429, body={"error": {"message": "slow down"}}), Reply(status=502, body="bad gateway")]
    result = record(engine, "e1")
    assert result.extraction_state == "pending"
    assert "HTTP 502" in result.error
    assert "also on a retry" in result.error
    assert len(stub.requests) == 2


def test_a_reply_nested_2000_deep_fails_the_event_at_once_and_the_model_is_asked_once(engine, stub):
    deep = "[" * 2000 + "]" * 2000
    stub.chat.append(Reply(body='{"choices": [{"message": {"role": "assistant", "content": ' + deep + "}}]}"))
    result = record(engine, "e1")
    assert result.extraction_state == "failed", result
    assert "nested deeper than" in result.error and "[[" not in result.error
    assert len(stub.requests) == 1  # a permanent failure: no later attempt pays for another model run
    assert engine.read(Scope(), "e1").event.extraction_state == "failed"


def test_an_answer_nested_just_below_the_recursion_limit_fails_the_event_like_any_too_deep_answer(engine, stub):
    stub.chat.append(
        chat_reply('{"memories": [{"content": "x", "quote": "I like tea", "n": ' + "[" * 990 + "]" * 990 + "}]}")
    )
    result = record(engine, "e1")
    assert result.extraction_state == "failed" and "nested deeper than" in result.error


def test_brackets_inside_the_answers_strings_are_text_not_nesting(engine, stub):
    text = "I typed " + "[{" * 40 + ' and a quote " by accident.'
    stub.chat.append(extraction_reply(memory_item('The user typed "' + "[" * 40 + '" by accident.', text)))
    result = record(engine, "e1", text)
    assert result.extraction_state == "complete" and len(result.memory_ids) == 1, result


def test_a_rejected_api_key_leaves_the_event_pending_with_a_hint(engine, stub):
    stub.chat.append(Reply(status=401, body={"error": {"message": "invalid api key"}}))
    result = record(engine, "e1")
    assert result.extraction_state == "pending"
    assert "MEMLIKEHUMAN_EXTRACTOR_API_KEY" in result.error


def test_a_body_that_is_not_a_chat_completion_leaves_the_event_failed(engine, stub):
    stub.chat.append(Reply(body="<html>proxy error</html>"))
    result = record(engine, "e1")
    assert result.extraction_state == "failed"
    # Its size, not its words: an answer may restate what a forget later takes out.
    assert "not valid JSON" in result.error and "24 characters" in result.error and "proxy" not in result.error


def test_reasoning_before_the_json_is_ignored(engine, stub):
    stub.chat.append(chat_reply('<think>The user talks about tea.</think>\n{"memories": []}'))
    assert record(engine, "e1").extraction_state == "complete"


def test_a_server_refusing_json_schema_with_a_500_that_names_response_format_gets_json_mode_with_the_schema(
    engine, stub
):
    refusal = "1 validation error: ('body', 'response_format', 'type'): Input should be 'text' or 'json_object'"
    stub.chat += [Reply(status=500, body={"error": {"message": refusal}}), extraction_reply(TEA)]
    result = record(engine, "e1")
    assert result.extraction_state == "complete"
    assert formats(stub) == ["json_schema", "json_object"]
    assert stub.requests[1][1]["response_format"]["schema"] == extract_schema.for_event("I like tea.")
