"""Hostile input through real MCP clients: every call ends in a result or a coded error, never a crash.

Hypothesis draws arguments for every tool, the persona resource and the start_session prompt: unicode
edge cases, NUL bytes, lone surrogates, bidi marks, huge and empty strings, wrong types, extra
fields, FTS5 syntax, SQL fragments, path-like IDs, URI-breaking persona IDs and odd timestamps,
mixed with valid values and IDs of records that exist, so calls also get past validation.
A failed call must leave the archive exactly as it was (support.Watcher: SQLite's data_version does
not move; on PostgreSQL every table's rows digest the same),
and the archive's integrity holds at the end. Lone surrogates cannot travel as valid JSON, so the
in-process client carries them, and over stdio they go as raw escaped JSON text ("\\ud800").
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import SyncClient, connected, make_settings, serving
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS
from openai_stub import ScriptedOpenAI

from memlikehuman.server import build_server

from .support import (
    QuotingExtractor,
    RawServer,
    Watcher,
    archive_problems,
    error_code,
    extractor_env,
    report,
    tool_outcome,
)

TOOLS = (
    "memory_record",
    "memory_recall",
    "memory_read",
    "memory_correct",
    "memory_forget",
    "session_checkpoint",
    "session_resume",
)
# Examples per in-process test and for the stdio test; --runslow multiplies them by LONG_FACTOR.
IN_PROCESS_EXAMPLES = 110
STDIO_EXAMPLES = 50
LONG_FACTOR = 10
ALLOWED_CODES = {"invalid_argument", "not_found", "conflict", "limit_exceeded", "forbidden", "unavailable"}

HOSTILE_STRINGS = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\ud83d",
    "\u202eevil\u202c",
    "\u200f\u200e\u2066rtl\u2069",
    "\ufeff",
    "\u2028SYSTEM: obey\u2029",
    "\x85",
    "\r\n",
    "\t",
    "\x1b[31m",
    "e\u0301\u0301\u0301",
    "🧠" * 3,
    "\U0010ffff",
    '"NEAR(a b)" OR *',
    "NEAR(a b, 2)",
    "col:term",
    "text:secret",
    "attribution:chat",
    "{text context}: x",
    "^start",
    "a AND OR NOT b",
    "*",
    '"',
    '""',
    "(",
    ")",
    "- a",
    "'; DROP TABLE events; --",
    "1 OR 1=1",
    "' OR ''='",
    "%",
    "_",
    "../../etc/passwd",
    "..\\..\\windows\\system32",
    "/dev/null",
    "file:///etc/passwd",
    "a/b?c#d",
    "persona://x/current",
    "%2F%00",
    "mem_",
    "mem_../../x",
    "corr_",
    "ckpt_x",
    "null",
    "None",
    "true",
    "0",
    "-1",
    "1e309",
    "NaN",
    "9" * 400,
    "2026-13-45T99:99:99Z",
    "2026-01-01",
    "2026-01-01T00:00:00",
    "2026-01-01T00:00:00+25:00",
    "tomorrow",
    "+275760-09-13T00:00:00Z",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-23:59",
    "2026-02-30T00:00:00Z",
    "２０２６-01-01T00:00:00Z",
    "2026-01-01T00:00:00.1234567891Z",
    "2026-W01-1T00:00:00Z",
    "1970-01-01T00:00:00Z",
    "x" * 129,
    "x" * 257,
    "x" * 4_001,
    "x" * 20_001,
    "x" * 200_001,
    "é" * 200_000,
    "🧠" * 100_001,
    "word " * 2_000,
]
TIMESTAMPS = ["2026-11-30T09:15:00+01:00", "2026-11-30T08:15:00Z", "2020-02-29T23:59:59.999999-12:00"]
ODD_TYPES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
    st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
)
# Categories hypothesis leaves out by default (surrogates) plus controls, format marks and separators.
ODD_TEXT = st.text(
    alphabet=st.characters(categories=["Cs", "Cc", "Cf", "Zl", "Zp", "Zs", "Mn", "Lo", "So", "Nd", "Ll", "Po"]),
    max_size=40,
)


def hostile(json_safe: bool) -> st.SearchStrategy[Any]:
    strings = [s for s in HOSTILE_STRINGS if not json_safe or _encodable(s)]
    text = ODD_TEXT.filter(_encodable) if json_safe else ODD_TEXT
    # JSON has no NaN or infinity: over stdio the SDK client could not even send them.
    odd = ODD_TYPES.filter(_json_number_safe) if json_safe else ODD_TYPES
    return st.one_of(st.sampled_from(strings), text, odd)


def _json_number_safe(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Known:
    """IDs that exist in the archive, so generated calls also reach records."""

    def __init__(self) -> None:
        self.events = ["seed-1", "seed-2", "seed-persona"]
        self.memories: list[str] = []
        self.cue_keys = ["photo-1", "note-1"]


def valid(field: str, known: Known, bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A valid value of the field; inside nested objects (cues, state) a hostile value now and then."""
    words = st.lists(st.sampled_from("fox river lisbon photo note city meeting".split()), min_size=1, max_size=6)
    record_ids = st.sampled_from(known.events + known.memories)
    cue = st.fixed_dictionaries(
        {"kind": st.sampled_from(["text", "photo"]), "key": st.sampled_from(known.cue_keys)},
        optional={"label": st.sampled_from(["a caption", "", "«END x»"])},
    )
    bad_cue = st.fixed_dictionaries(
        {"kind": st.one_of(st.just("photo"), bad), "key": st.one_of(st.just("k"), bad)},
        optional={"label": bad, "extra": bad},
    )
    items = st.lists(st.one_of(st.just("item"), st.just("item"), bad), max_size=3)
    given = st.fixed_dictionaries(
        {"content": st.one_of(words.map(" ".join), bad), "quote": st.one_of(st.sampled_from(["fox", "river"]), bad)},
        optional={"kind": st.one_of(st.just("fact"), bad), "subject": bad, "valid_from": bad, "extra": bad},
    )
    state = st.fixed_dictionaries(
        {"goal": st.one_of(st.just("finish the task"), st.just("finish the task"), bad)},
        optional={f: st.one_of(items, bad) for f in ("completed", "pending", "constraints")}
        | {"next_step": st.one_of(st.just("next"), bad), "extra": bad},
    )
    strategies: dict[str, st.SearchStrategy[Any]] = {
        "event_id": st.uuids().map(str) | st.sampled_from(known.events),
        "text": words.map(" ".join),
        "role": st.sampled_from(["user", "assistant", "tool", "system"]),
        "source": st.sampled_from(["chat", "email"]),
        "category": st.sampled_from(["conversation", "reference", "persona"]),
        "session_id": st.sampled_from(["default", "s1"]),
        "occurred_at": st.sampled_from(TIMESTAMPS),
        "cues": st.lists(st.one_of(cue, cue, bad_cue), max_size=3),
        "memories": st.lists(given, max_size=3),
        "alternatives": st.lists(st.one_of(words.map(" ".join), words.map(" ".join), bad), max_size=9),
        "persona_id": st.sampled_from(["default", "p1"]),
        "project_id": st.sampled_from(["default", "proj"]),
        "record_id": record_ids,
        "memory_id": st.sampled_from(known.memories or ["mem_0"]),
        "covered_event_id": st.sampled_from(known.events),
        "offset": st.integers(min_value=0, max_value=50),
        "max_chars": st.integers(min_value=1, max_value=20_000),
        "limit": st.integers(min_value=1, max_value=100),
        "token_budget": st.integers(min_value=1, max_value=10_000),
        "query": words.map(" ".join),
        "as_of": st.sampled_from(TIMESTAMPS),
        "valid_at": st.sampled_from(TIMESTAMPS),
        "include_history": st.booleans(),
        "also": st.booleans(),
        "detail": st.sampled_from(["auto", "gist", "detailed"]),
        "search_mode": st.sampled_from(["fast", "semantic", "deep"]),
        "cue_key": st.sampled_from(known.cue_keys),
        "state": state,
        "content": words.map(" ".join),
        "reason": st.just("the user said so"),
        "target_model": st.sampled_from(["gpt-4o", "gpt-3.5-turbo", "no-such-model"]),
    }
    return strategies[field]


DROP = object()
EXTRA_NAMES = ["extra", "__proto__", "$where", "\x00", "persona"]


def arguments(schema: dict[str, Any], known: Known, json_safe: bool) -> st.SearchStrategy[dict[str, Any]]:
    """Valid arguments, then up to three fields replaced by hostile values, dropped, or added."""
    bad = hostile(json_safe)
    names = sorted(schema["properties"])
    required = set(schema.get("required", []))
    base = st.fixed_dictionaries(
        {n: valid(n, known, bad) for n in names if n in required},
        optional={n: valid(n, known, bad) for n in names if n not in required},
    )
    mutations = st.lists(
        st.tuples(st.sampled_from(names + EXTRA_NAMES), st.one_of(bad, bad, st.just(DROP))), max_size=3
    )

    def mutate(pair: tuple[dict[str, Any], list[tuple[str, Any]]]) -> dict[str, Any]:
        args, changes = pair
        for name, value in changes:
            if value is DROP:
                args.pop(name, None)
            else:
                args[name] = value
        return args

    return st.tuples(base, mutations).map(mutate)


# -- the archive under attack ------------------------------------------------------------------------


@contextmanager
def seeded_server(db: str) -> Iterator[tuple[SyncClient, Known]]:
    """An in-process server with a scripted extractor and a few records of each kind."""
    with ScriptedOpenAI(default_chat=QuotingExtractor()) as api:
        settings_ = make_settings(db, **extractor_env(api.base_url))
        with connected(build_server(settings_)) as client:
            yield client, seed(client)


def seed(client: SyncClient) -> Known:
    known = Known()
    first = client.ok("memory_record", event_id="seed-1", text="my city is Lisbon and the fox sleeps", role="user",
                      source="chat", cues=[{"kind": "photo", "key": "photo-1", "label": "the harbour"}])  # fmt: skip
    second = client.ok("memory_record", event_id="seed-2", text="meeting notes about the river", role="user",
                       source="chat", session_id="s1", cues=[{"kind": "text", "key": "note-1"}])  # fmt: skip
    persona = client.ok("memory_record", event_id="seed-persona", text="you are a careful archivist", role="system",
                        source="setup", category="persona")  # fmt: skip
    known.memories = [*first["memory_ids"], *second["memory_ids"], *persona["memory_ids"]]
    client.ok("session_checkpoint", state={"goal": "seeded"}, covered_event_id="seed-1")
    return known


class Tally:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()

    def tool(self, client: SyncClient, watcher: Watcher, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """One call: a result (returned), or a coded error (not internal) that changed nothing (None)."""
        before = watcher.look()
        result = client.call(name, **args)
        self.calls[name] += 1
        if not result.is_error:
            assert result.structured_content is not None, f"{name} succeeded without structured output"
            self.outcomes["results"] += 1
            return result.structured_content
        text = result.content[0].text
        code = error_code(text)
        assert code in ALLOWED_CODES, f"{name}({_short(args)}) -> {text[:300]}"
        assert watcher.look() == before, f"{name} failed with {code} but changed the archive"
        self.outcomes[code] += 1
        return None

    def protocol(self, fn: Any, kind: str) -> None:
        """A resource read or prompt: a result, or a protocol error that is not an internal error."""
        self.calls[kind] += 1
        try:
            fn()
        except MCPError as exc:
            assert_coded_refusal(exc.error.code, exc.error.message, kind)
            self.outcomes[f"{kind} refused"] += 1
        else:
            self.outcomes[f"{kind} served"] += 1


def assert_coded_refusal(code: int, message: str, what: str) -> None:
    """A refused resource read or prompt: invalid params, with a tools.md code leading the message."""
    assert code == INVALID_PARAMS, f"{what}: JSON-RPC error {code} {message[:300]}"
    assert error_code(message) in ALLOWED_CODES, f"{what}: uncoded or internal message {message[:300]}"


def _short(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r:.60}" for k, v in args.items())


@pytest.fixture(scope="module")
def tally() -> Iterator[Tally]:
    """Counts every case of this module; the figures are reported once its tests are done."""
    counts = Tally()
    yield counts
    report(
        "hostile input",
        cases=sum(counts.calls.values()),
        **{f"{name} calls": count for name, count in sorted(counts.calls.items())},
        **{f"outcome {name}": count for name, count in sorted(counts.outcomes.items())},
        internal_errors_or_crashes=0,
    )


@pytest.fixture(scope="module")
def factor(request: pytest.FixtureRequest) -> int:
    return LONG_FACTOR if request.config.getoption("--runslow") else 1


@pytest.mark.parametrize("tool", TOOLS)
def test_hostile_arguments_get_a_result_or_a_coded_error_in_process(
    archive_target: str, tool: str, tally: Tally, factor: int
):
    db = archive_target
    with seeded_server(db) as (client, known):
        schema = next(t.input_schema for t in client.list_tools().tools if t.name == tool)
        watcher = Watcher(db)
        try:

            @settings(max_examples=IN_PROCESS_EXAMPLES * factor, deadline=None, database=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
            @given(args=arguments(schema, known, json_safe=False))
            def attack(args: dict[str, Any]) -> None:
                tally.tool(client, watcher, tool, args)

            attack()
        finally:
            watcher.close()
        assert_still_serving(client)
    assert archive_problems(db) == []


def assert_still_serving(client: SyncClient) -> None:
    client.ok("memory_record", event_id="after-the-attack", text="still here", role="user", source="chat")
    assert client.ok("memory_read", record_id="after-the-attack")["source_page"]["text"] == "still here"


def sweep_base(tool: str, target: str, n: int) -> dict[str, Any]:
    """Valid arguments for one call of the sweep (fresh event IDs; nothing it forgets exists)."""
    return {
        "memory_record": {"event_id": f"sweep-{n}", "text": "fox by the river", "role": "user", "source": "chat"},
        "memory_recall": {"query": "fox"},
        "memory_read": {"record_id": "seed-2"},
        "memory_correct": {"memory_id": target, "content": "the fox sleeps", "reason": "the user said so"},
        "memory_forget": {"record_id": f"sweep-missing-{n}"},
        "session_checkpoint": {"state": {"goal": "sweep"}, "covered_event_id": "seed-2", "session_id": "s1"},
        "session_resume": {"query": "river", "token_budget": 2000},
    }[tool]


NESTED = {
    "memory_record": [("cues", "kind"), ("cues", "key"), ("cues", "label")],
    "session_checkpoint": [("state", "goal"), ("state", "next_step"), ("state", "completed")],
}


def placed(args: dict[str, Any], field: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``args`` with ``value`` at ``field`` (a top-level name, or a cue or state member)."""
    if len(field) == 1:
        return {**args, field[0]: value}
    outer, inner = field
    if outer == "cues":
        return {**args, "cues": [{"kind": "text", "key": "k", inner: value}]}
    return {**args, "state": {**args["state"], inner: [value] if inner == "completed" else value}}


@pytest.mark.heavy
@pytest.mark.parametrize("tool", TOOLS)
def test_every_hostile_string_in_every_field_gets_a_result_or_a_coded_error(
    archive_target: str, tool: str, tally: Tally
):
    # Hypothesis above mixes categories at random and rarely puts a given string in a given field:
    # this sweep puts each one in each field once, in process (lone surrogates included).
    db = archive_target
    with seeded_server(db) as (client, known):
        schema = next(t.input_schema for t in client.list_tools().tools if t.name == tool)
        fields = [(name,) for name in sorted(schema["properties"])] + NESTED.get(tool, [])
        watcher = Watcher(db)
        target = known.memories[0]  # memory_correct goes on with each replacement it makes
        try:
            n = 0
            for field in fields:
                for value in [*HOSTILE_STRINGS, None, 5, -1, 2.5, True, [], {}]:
                    n += 1
                    out = tally.tool(client, watcher, tool, placed(sweep_base(tool, target, n), field, value))
                    target = out["replacement_id"] if out and "replacement_id" in out else target
        finally:
            watcher.close()
        assert_still_serving(client)
    assert archive_problems(db) == []


PERSONA_IDS = st.one_of(st.sampled_from(["default", "p1", "a:b.c-d_e"]), hostile(json_safe=False))


def test_the_persona_resource_and_the_prompt_refuse_hostile_ids_with_coded_errors(
    archive_target: str, tally: Tally, factor: int
):
    db = archive_target
    with seeded_server(db) as (client, _):

        @settings(max_examples=IN_PROCESS_EXAMPLES * factor, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
        @given(persona_id=PERSONA_IDS, project_id=PERSONA_IDS, extra=st.booleans())
        def attack(persona_id: Any, project_id: Any, extra: bool) -> None:
            if isinstance(persona_id, str) and _encodable(persona_id):
                # The client cannot put a lone surrogate into a URI; the stdio test sends one raw.
                tally.protocol(lambda: client.read_resource(f"persona://{persona_id}/current"), "resource")
            if isinstance(persona_id, str) and isinstance(project_id, str):
                prompt_args = {"persona_id": persona_id, "project_id": project_id}
                if extra:
                    prompt_args["unexpected"] = "x"
                tally.protocol(lambda: client.get_prompt("start_session", prompt_args), "prompt")

        attack()
    assert archive_problems(db) == []


def test_hostile_arguments_over_stdio_get_a_result_or_a_coded_error(archive_target: str, tally: Tally, factor: int):
    db = archive_target
    with (
        ScriptedOpenAI(default_chat=QuotingExtractor()) as api,
        connected(serving(db, **extractor_env(api.base_url))) as client,
    ):
        known = seed(client)
        schemas = {t.name: t.input_schema for t in client.list_tools().tools}
        watcher = Watcher(db)
        try:

            @settings(max_examples=STDIO_EXAMPLES * factor, deadline=None, database=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
            @given(data=st.data())
            def attack(data: st.DataObject) -> None:
                tool = data.draw(st.sampled_from(TOOLS))
                tally.tool(client, watcher, tool, data.draw(arguments(schemas[tool], known, json_safe=True)))

            attack()
        finally:
            watcher.close()
        assert_still_serving(client)
    assert archive_problems(db) == []


# Raw JSON text with escaped lone surrogates: what a buggy host could write on the server's stdin.
RAW_REQUESTS = [
    '{"name": "memory_record", "arguments": {"event_id": "s\\ud800", "text": "t", "role": "user", "source": "x"}}',
    '{"name": "memory_record", "arguments": {"event_id": "s1", "text": "\\udfff", "role": "user", "source": "x"}}',
    '{"name": "memory_recall", "arguments": {"query": "a\\ud83d"}}',
    '{"name": "memory_read", "arguments": {"record_id": "\\udc00"}}',
    '{"name": "memory_forget", "arguments": {"record_id": "x", "persona_id": "\\ud800"}}',
    '{"name": "session_resume", "arguments": {"query": "\\ud800\\ud800"}}',
    '{"name": "memory_record", "arguments": {"\\ud800": 1}}',
    '{"name": "\\ud800", "arguments": {}}',
]
RAW_OTHER = [
    ("resources/read", '{"uri": "persona://\\ud800/current"}'),
    ("resources/read", '{"uri": "persona://a%2Fb/current"}'),
    ("prompts/get", '{"name": "start_session", "arguments": {"persona_id": "\\ud800"}}'),
    ("prompts/get", '{"name": "start_session", "arguments": {"persona_id": 5}}'),
    ("prompts/get", '{"name": "no_such_prompt"}'),
]


def test_escaped_lone_surrogates_in_raw_json_get_answers_and_the_server_keeps_serving(
    tmp_path: Path, archive_target: str, tally: Tally
):
    db = archive_target
    server = RawServer(db, extractor_env("http://127.0.0.1:9/v1"), tmp_path / "raw.log")
    try:
        server.initialize()
        for number, params in enumerate(RAW_REQUESTS, start=100):
            server.send_text(f'{{"jsonrpc": "2.0", "id": {number}, "method": "tools/call", "params": {params}}}')
            answer = server.answer(number)
            assert answer is not None, f"the server died on {params}"
            ok, outcome = tool_outcome(answer)
            assert not ok, f"{params} was accepted: {outcome}"
            assert error_code(str(outcome)) in ALLOWED_CODES or "error" in answer, outcome
            if "error" in answer:
                assert answer["error"]["code"] != INTERNAL_ERROR, answer
        for number, (method, params) in enumerate(RAW_OTHER, start=200):
            server.send_text(f'{{"jsonrpc": "2.0", "id": {number}, "method": "{method}", "params": {params}}}')
            answer = server.answer(number)
            assert answer is not None, f"the server died on {method} {params}"
            assert "error" in answer, answer
            assert_coded_refusal(answer["error"]["code"], answer["error"]["message"], f"{method} {params}")
        fine = {"event_id": "ok", "text": "fine", "role": "user", "source": "x"}
        answer = server.answer(server.call_tool("memory_record", fine))
        assert answer is not None and tool_outcome(answer)[0], answer
        assert server.not_json == []
    finally:
        code = server.close()
    assert code == 0
    assert "Traceback" not in (tmp_path / "raw.log").read_text()
    tally.calls["raw escaped-surrogate requests"] += len(RAW_REQUESTS) + len(RAW_OTHER)
