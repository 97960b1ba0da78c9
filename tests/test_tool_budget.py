"""What a host sends its model with every request: our tool definitions and server instructions, within a
budget, and still the whole contract of tools.md (every input with its type, default and enum; every limit
the schema states is one the server enforces).

A host such as Claude Code sends each tool's name, description and input schema, and the server's
instructions, with every model request of a session: each character is paid for again and again.
Details live in the results, the error texts and README's Tools section.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SyncClient, connected, make_settings

from memlikehuman import validate
from memlikehuman.archive.checkpoints import MAX_ITEMS
from memlikehuman.lifecycle.extract import MAX_ITEMS as MAX_MEMORIES
from memlikehuman.retrieval.phrasings import MAX_ALTERNATIVES
from memlikehuman.server import build_server
from memlikehuman.server.models import PERSONA_PATTERN
from memlikehuman.validate import MAX_BUDGET

TOOLS_BUDGET = 8_000  # characters of json.dumps({name, description, inputSchema}), all tools together
INSTRUCTIONS_BUDGET = 700

STRING, INTEGER, BOOLEAN, ARRAY, OBJECT = "string", "integer", "boolean", "array", "object"
SCOPE = {
    "persona_id": {"type": STRING, "default": "default", "pattern": PERSONA_PATTERN},
    "project_id": {"type": STRING, "default": "default", "maxLength": 128},
}
WORDS = {"type": STRING, "maxLength": validate.MAX_DERIVED_CHARS}
TASK_LIST = {"type": ARRAY, "maxItems": MAX_ITEMS, "items": WORDS}
# Each tool's inputs (tools.md, and the inputs beyond it README names): what the schema must say of each.
CONTRACT: dict[str, dict[str, dict[str, Any]]] = {
    "memory_record": {
        "event_id": {"type": STRING},
        "text": {"type": STRING, "maxLength": validate.MAX_EVENT_CHARS},
        "role": {"type": STRING, "enum": ["user", "assistant", "tool", "system"]},
        "source": {"type": STRING, "maxLength": 256},
        "category": {"type": STRING, "enum": ["conversation", "reference", "persona"], "default": "conversation"},
        "session_id": {"type": STRING, "default": "default"},
        "occurred_at": {"type": STRING},
        "cues": {"type": ARRAY, "maxItems": validate.MAX_CUES},
        "memories": {"type": ARRAY, "maxItems": MAX_MEMORIES},
        **SCOPE,
    },
    "memory_recall": {
        "query": {"type": STRING, "maxLength": validate.MAX_QUERY_CHARS},
        "limit": {"type": INTEGER, "default": 10, "minimum": 1, "maximum": 100},
        "as_of": {"type": STRING},
        "include_history": {"type": BOOLEAN, "default": False},
        "detail": {"type": STRING, "enum": ["auto", "gist", "detailed"], "default": "auto"},
        "search_mode": {"type": STRING, "enum": ["fast", "semantic", "deep"], "default": "fast"},
        "cue_key": {"type": STRING},
        "session_id": {"type": STRING},
        "alternatives": {"type": ARRAY, "maxItems": MAX_ALTERNATIVES, "items": {"type": STRING, "maxLength": 4000}},
        **SCOPE,
    },
    "memory_read": {
        "record_id": {"type": STRING},
        "offset": {"type": INTEGER, "default": 0, "minimum": 0},
        "max_chars": {"type": INTEGER, "default": 4000, "minimum": 1, "maximum": 20_000},
        **SCOPE,
    },
    "session_checkpoint": {
        "state": {"type": OBJECT},
        "covered_event_id": {"type": STRING},
        "session_id": {"type": STRING, "default": "default"},
        **SCOPE,
    },
    "session_resume": {
        "query": {"type": STRING, "default": "", "maxLength": validate.MAX_QUERY_CHARS},
        "token_budget": {"type": INTEGER, "default": 4096, "minimum": 1, "maximum": MAX_BUDGET},
        "target_model": {"type": STRING},
        "session_id": {"type": STRING},
        **SCOPE,
    },
    "memory_correct": {
        "memory_id": {"type": STRING},
        "content": WORDS,
        "reason": WORDS,
        "valid_at": {"type": STRING},
        **SCOPE,
    },
    "memory_forget": {"record_id": {"type": STRING}, "also": {"type": BOOLEAN, "default": False}, **SCOPE},
}
REQUIRED = {
    "memory_record": ["event_id", "text", "role", "source"],
    "memory_recall": ["query"],
    "memory_read": ["record_id"],
    "session_checkpoint": ["state", "covered_event_id"],
    "session_resume": [],
    "memory_correct": ["memory_id", "content", "reason"],
    "memory_forget": ["record_id"],
}
NESTED: dict[tuple[str, str], tuple[dict[str, dict[str, Any]], list[str]]] = {
    ("memory_record", "cues"): (
        {
            "kind": {"type": STRING, "enum": ["text", "photo"]},
            "key": {"type": STRING, "maxLength": 128},
            "label": {"type": STRING, "maxLength": validate.MAX_LABEL_CHARS},
        },
        ["kind", "key"],
    ),
    ("memory_record", "memories"): (
        {
            "content": WORDS,
            "quote": WORDS,
            "kind": {
                "type": STRING,
                "enum": ["fact", "preference", "event", "plan", "emotion", "persona", "reference"],
                "default": "fact",
            },
            "basis": {"type": STRING, "enum": ["stated", "inferred"], "default": "stated"},
            "subject": {"type": STRING},
            "valid_from": {"type": STRING},
            "gist": {"type": STRING},
        },
        ["content", "quote"],
    ),
    ("session_checkpoint", "state"): (
        {"goal": WORDS, "completed": TASK_LIST, "pending": TASK_LIST, "constraints": TASK_LIST,
         "next_step": {**WORDS, "default": ""}},
        ["goal"],
    ),
}  # fmt: skip


@pytest.fixture
def client(tmp_path: Path) -> Iterator[SyncClient]:
    """A server on a SQLite archive: what the edge publishes and checks is the same on every backend."""
    with connected(build_server(make_settings(tmp_path / "memory.sqlite3"))) as opened:
        yield opened


def _definitions(client: SyncClient) -> dict[str, Any]:
    return {tool.name: tool for tool in client.list_tools().tools}


def _sent(tool: Any) -> str:
    """What a host sends its model of one tool, as JSON."""
    return json.dumps({"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema})


def test_the_tool_definitions_sent_with_every_request_fit_in_8000_characters(client: SyncClient):
    sizes = {name: len(_sent(tool)) for name, tool in _definitions(client).items()}
    assert sum(sizes.values()) <= TOOLS_BUDGET, f"{sum(sizes.values())} characters: {sizes}"


def test_the_server_instructions_fit_in_700_characters(client: SyncClient):
    instructions = client.client.instructions
    assert instructions and len(instructions) <= INSTRUCTIONS_BUDGET, len(instructions or "")


def test_the_input_schemas_spell_out_no_titles_references_or_null_options(client: SyncClient):
    for name, tool in _definitions(client).items():
        text = json.dumps(tool.input_schema)
        for word in ('"title"', '"$ref"', '"$defs"', '"anyOf"', '{"type": "null"}'):
            assert word not in text, f"{name}: {word}"


def test_every_input_of_the_contract_keeps_its_type_default_enum_and_limits(client: SyncClient):
    tools = _definitions(client)
    assert sorted(tools) == sorted(CONTRACT)
    for name, inputs in CONTRACT.items():
        schema = tools[name].input_schema
        assert sorted(schema["properties"]) == sorted(inputs), name
        assert sorted(schema.get("required", [])) == sorted(REQUIRED[name]), name
        for field, expected in inputs.items():
            _holds(schema["properties"][field], expected, f"{name}.{field}")
    for (name, field), (inputs, required) in NESTED.items():
        prop = tools[name].input_schema["properties"][field]
        inner = prop.get("items", prop)
        assert sorted(inner["properties"]) == sorted(inputs), f"{name}.{field}"
        assert sorted(inner["required"]) == sorted(required), f"{name}.{field}"
        for key, expected in inputs.items():
            _holds(inner["properties"][key], expected, f"{name}.{field}.{key}")


def _holds(actual: dict[str, Any], expected: dict[str, Any], where: str) -> None:
    for key, value in expected.items():
        assert key in actual, f"{where}: no {key}"
        if key == "items":
            _holds(actual["items"], value, f"{where}[]")
        else:
            assert actual[key] == value, f"{where}.{key}: {actual[key]!r} != {value!r}"
    if "default" not in expected:
        assert "default" not in actual, f"{where}: a default the contract does not give"


def test_the_published_persona_pattern_accepts_exactly_the_persona_ids_the_server_accepts():
    # JSON Schema patterns are ECMA 262 regexes, whose \w is Python's \w under re.ASCII.
    for char in map(chr, [*range(0x250), 0x2028, 0x0660, 0xFF21, 0x1F600]):
        for value in (char, "a" + char * 127, "b" * 128 + char, "c\n"):
            published = re.fullmatch(PERSONA_PATTERN, value, re.ASCII) is not None
            assert published == (validate.PERSONA_ID.fullmatch(value) is not None), repr(value)


# -- every limit the schemas state is enforced ------------------------------------------------------------

VALID_ITEMS = {"cues": {"kind": "text", "key": "k"}, "memories": {"content": "tea", "quote": "tea"}}


def _valid(client: SyncClient) -> dict[str, dict[str, Any]]:
    """Arguments each tool accepts on this archive."""
    client.ok("memory_record", event_id="e1", text="tea at five", role="user", source="s")
    memory = client.ok(
        "memory_record", event_id="e2", text="I drink tea", role="user", source="s",
        memories=[{"content": "The user drinks tea", "quote": "I drink tea"}],
    )["memory_ids"][0]  # fmt: skip
    return {
        "memory_record": {"event_id": "e-new", "text": "tea", "role": "user", "source": "s"},
        "memory_recall": {"query": "tea"},
        "memory_read": {"record_id": "e1"},
        "session_checkpoint": {"state": {"goal": "g"}, "covered_event_id": "e1"},
        "session_resume": {},
        "memory_correct": {"memory_id": memory, "content": "The user drinks coffee", "reason": "said so"},
        "memory_forget": {"record_id": "e1"},
    }


def _beyond(prop: dict[str, Any], item: Any) -> list[Any]:
    """Values just beyond each limit `prop` states (a list's items: `item`, a valid one)."""
    values: list[Any] = []
    if "maxLength" in prop:
        values.append("x" * (prop["maxLength"] + 1))
    if "maxItems" in prop:
        values.append([item] * (prop["maxItems"] + 1))
    if "maximum" in prop:
        values.append(prop["maximum"] + 1)
    if "minimum" in prop:
        values.append(prop["minimum"] - 1)
    if "pattern" in prop:
        values.append("a" * 129)
    return values


def _cases(schema: dict[str, Any], base: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(where, arguments) for every limit of the schema, nested ones included, each alone beyond it."""
    cases = []
    for field, prop in schema["properties"].items():
        valid_item = VALID_ITEMS.get(field, "x")
        cases += [(field, {**base, field: value}) for value in _beyond(prop, valid_item)]
        inner = prop.get("items", prop) if prop.get("type") in (ARRAY, OBJECT) else {}
        if prop.get("type") == ARRAY and "properties" not in inner:
            cases += [(f"{field}[0]", {**base, field: [value]}) for value in _beyond(inner, "x")]
        for key, sub in inner.get("properties", {}).items():
            whole = dict(base.get(field, {"goal": "g"})) if prop["type"] == OBJECT else dict(valid_item)
            for value in _beyond(sub, "x"):
                changed = {**whole, key: value}
                cases.append((f"{field}.{key}", {**base, field: changed if prop["type"] == OBJECT else [changed]}))
    return cases


def test_every_limit_the_schemas_state_is_one_the_server_enforces(client: SyncClient):
    valid = _valid(client)
    checked = 0
    for name, tool in _definitions(client).items():
        for where, arguments in _cases(tool.input_schema, valid[name]):
            result = client.call(name, **arguments)
            if result.is_error:
                code = result.content[0].text.split(": ", 1)[-1].split(":", 1)[0]
                assert code in ("invalid_argument", "limit_exceeded"), f"{name} {where}: {result.content[0].text}"
            else:  # an item of memories is checked on its own: it is rejected, and the warning says so
                warnings = result.structured_content["warnings"]
                assert any(w.startswith(f"{where.split('.')[0]}[0] rejected") for w in warnings), f"{name} {where}"
            checked += 1
    assert checked >= 40
