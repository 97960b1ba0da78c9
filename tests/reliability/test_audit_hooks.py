"""The hooks, audited as a hostile or careless host would call them: a transcript path that never ends,
a payload that is not what the host documents, and text the tools would refuse.

A hook must answer within its host's timeout with the answer the host expects, and a turn the host
sent must be stored (changed visibly where it had to be), never dropped without a trace.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import make_settings
from hook_support import run_hook, spawn_hook_from_new_parent, stored, write_transcript

from memlikehuman.engine import Engine
from memlikehuman.hosts.install import HOOK_TIMEOUT_SECONDS
from memlikehuman.records import Scope

# Each host's events that read the transcript, and what it expects on stdout from them.
GO_ON = '{"continue": true}'
READERS = {
    "claude-code": (("Stop", ""), ("PreCompact", ""), ("SessionEnd", ""), ("SubagentStop", "")),
    "codex": (("Stop", ""), ("PreCompact", ""), ("SessionEnd", "")),
    "cursor": (
        ("stop", '{"continue": true}'),
        ("preCompact", '{"continue": true}'),
        ("sessionEnd", '{"continue": true}'),
    ),
    "gemini": (("AfterAgent", "{}"), ("PreCompress", "{}"), ("SessionEnd", "{}")),
}


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    """A named pipe nobody writes to: opening it for reading blocks until a writer comes."""
    path = tmp_path / "transcript.jsonl"
    os.mkfifo(path)
    return path


def _run(host: str, payload: dict[str, object] | str, db: Path, project: Path) -> str:
    """The hook's stdout; a hook that outlives its host's timeout fails the test (TimeoutExpired)."""
    ran = run_hook(host, payload, db, project, timeout=HOOK_TIMEOUT_SECONDS)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.strip()


@pytest.mark.parametrize("host", sorted(READERS))
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "/dev/urandom", "directory"])
def test_a_transcript_that_is_no_regular_file_never_holds_the_hook(
    host: str, kind: str, fifo: Path, tmp_path: Path, project: Path
):
    db = tmp_path / "data" / "memory.sqlite3"
    path = {"fifo": str(fifo), "directory": str(tmp_path)}.get(kind, kind)
    for event, expected in READERS[host]:
        payload = {"session_id": "s1", "conversation_id": "s1", "hook_event_name": event, "cwd": str(project),
                   "transcript_path": path, "agent_transcript_path": path, "agent_id": "a1"}  # fmt: skip
        assert _run(host, payload, db, project) == expected, (host, event)


def test_a_20_mb_transcript_of_tiny_lines_gets_the_hooks_answer_in_time_and_its_last_reply_recorded(
    tmp_path: Path, project: Path
):
    path = write_transcript(tmp_path / "t.jsonl", "s1", [("user", "Pick a colour"), ("assistant", "Teal, say I")])
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-2]) + "{}\n" * 6_600_000 + "".join(lines[-2:]))  # 20 MB, the turn at its end
    db = tmp_path / "data" / "memory.sqlite3"
    payload = {"session_id": "s1", "hook_event_name": "Stop", "cwd": str(project), "transcript_path": str(path)}
    assert _run("claude-code", payload, db, project) == ""
    assert [e["text"] for e in stored(db)] == ["Teal, say I"]


# A tool's input or output nested past Python's JSON parser (a few thousand brackets): it raises RecursionError.
DEEP_TOOL_LINE = (
    '{"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "input": %s}]}}\n'
    % ("[" * 5000 + "]" * 5000)
)


def test_a_transcript_line_nested_thousands_deep_keeps_nothing_else_of_its_turn_out(tmp_path: Path, project: Path):
    path = write_transcript(tmp_path / "t.jsonl", "s1", [("user", "Pick a colour"), ("assistant", "Teal, say I")])
    lines = path.read_text().splitlines(keepends=True)
    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls paints"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "teal.png"}
    tool_lines = [
        json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [call]}}) + "\n",
        json.dumps({"type": "user", "message": {"role": "user", "content": [result]}}) + "\n",
        DEEP_TOOL_LINE,
        DEEP_TOOL_LINE.replace('"tool_use", "input"', '"tool_use", "id": "toolu_2", "name": "Deep", "input"'),
    ]
    path.write_text("".join(lines[:-1] + tool_lines + lines[-1:]))
    db = tmp_path / "data" / "memory.sqlite3"
    payload = {"session_id": "s1", "hook_event_name": "Stop", "cwd": str(project), "transcript_path": str(path)}
    ran = run_hook("claude-code", payload, db, project, "--record", "assistant,tools", timeout=HOOK_TIMEOUT_SECONDS)
    assert (ran.returncode, ran.stdout.strip(), ran.stderr) == (0, "", "")
    texts = [e["text"] for e in stored(db)]
    assert "Teal, say I" in texts and any("ls paints" in t and "teal.png" in t for t in texts), texts


@pytest.mark.parametrize(
    ("host", "expected"), [("claude-code", ""), ("codex", ""), ("cursor", {"continue": True}), ("gemini", {})]
)
@pytest.mark.parametrize(
    "payload",
    ["{not json", "[1, 2]", '"a string"', json.dumps({"hook_event_name": "NoSuchEvent", "session_id": "s"})],
    ids=["not-json", "array", "string", "unknown-event"],
)
def test_a_malformed_payload_or_an_unknown_event_gets_the_hosts_do_nothing_answer(
    host: str, expected: object, payload: str, tmp_path: Path, project: Path
):
    out = _run(host, payload, tmp_path / "memory.sqlite3", project)
    assert (json.loads(out) if out else "") == expected


def _found(db: Path, word: str) -> list[str]:
    """The texts of the events a fast recall of `word` finds (no cwd in the payloads: the default scope)."""
    with Engine(make_settings(db)) as engine:
        return [hit.event.text for hit in engine.recall(Scope(), word, limit=5).raw_fallback]


def _prompt(session: str, text: str) -> dict[str, str]:
    return {"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": text}


def test_a_prompt_over_the_limit_is_stored_in_parts_each_findable(tmp_path: Path, project: Path):
    db = tmp_path / "memory.sqlite3"
    text = "zucchinifirst " + "filler words here " * 15_000 + "kohlrabilast"  # 270,000 characters
    _run("claude-code", _prompt("s1", text), db, project)
    first, last = _found(db, "zucchinifirst"), _found(db, "kohlrabilast")
    assert first and last
    assert first[0].startswith("[part 1 of 2 of one 270,026-character message]")
    assert last[0].startswith("[part 2 of 2 of one 270,026-character message]")


def test_a_prompt_too_long_to_store_in_time_keeps_its_first_2_million_characters_and_each_part_says_so(
    tmp_path: Path, project: Path
):
    db = tmp_path / "memory.sqlite3"
    text = "zucchinifirst " + "filler words here " * 150_000 + "kohlrabilast"  # 2,700,026 characters
    _run("claude-code", _prompt("s1", text), db, project)
    texts = [e["text"] for e in stored(db)]
    header = "[part {} of 11 of the first 2,000,000 characters of one 2,700,026-character message]\n"
    assert [t.startswith(header.format(n)) for n, t in enumerate(texts, 1)] == [True] * 11
    assert "".join(t.split("\n", 1)[1] for t in texts) == text[:2_000_000]


def test_a_prompt_with_a_lone_surrogate_is_stored_with_a_replacement_character(tmp_path: Path, project: Path):
    db = tmp_path / "memory.sqlite3"
    raw = '{"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "broken emoji \\ud83d in marzipan"}'
    _run("claude-code", raw, db, project)
    assert _found(db, "marzipan") == ["broken emoji \ufffd in marzipan"]


@pytest.mark.parametrize("session", ["x" * 300, "tab\there", "nul\x00id"], ids=["long", "tab", "nul"])
def test_a_prompt_in_a_session_with_an_odd_id_is_stored_under_a_readable_key(
    session: str, tmp_path: Path, project: Path
):
    db = tmp_path / "memory.sqlite3"
    _run("claude-code", _prompt(session, "the quince orchard opens at nine"), db, project)
    with Engine(make_settings(db)) as engine:
        hits = engine.recall(Scope(), "quince", limit=5).raw_fallback
    assert [hit.event.text for hit in hits] == ["the quince orchard opens at nine"]
    stored = hits[0].event.session_id
    assert stored.startswith(session.replace("\t", "?").replace("\x00", "?")[:80]) and "~" in stored
    assert len(stored) <= 128


@pytest.mark.parametrize("cwd", ["/work/" + "a" * 300 + "/app", "/work/nul\x00here"], ids=["long-name", "nul"])
def test_a_prompt_from_a_directory_no_file_system_can_hold_is_recorded_in_a_project_of_that_name(
    cwd: str, tmp_path: Path, project: Path
):
    db = tmp_path / "memory.sqlite3"
    _run("claude-code", {**_prompt("s1", "the quince orchard opens at nine"), "cwd": cwd}, db, project)
    (event,) = stored(db)
    assert event["text"] == "the quince orchard opens at nine"
    assert event["project_id"].startswith("app-" if "app" in cwd else "nul-here-")


def _sessions(db: Path) -> dict[str, str]:
    return {e["text"]: e["session_id"] for e in stored(db)}


def test_a_numeric_session_id_is_kept_as_its_digits_and_two_numbers_stay_two_sessions(tmp_path: Path, project: Path):
    db = tmp_path / "memory.sqlite3"
    _run("claude-code", {**_prompt("s", "the first plum"), "session_id": 12345}, db, project)
    _run("claude-code", {**_prompt("s", "the second plum"), "session_id": 67890}, db, project)
    assert _sessions(db) == {"the first plum": "12345", "the second plum": "67890"}


def test_prompts_without_a_session_id_stay_one_session_per_transcript(tmp_path: Path, project: Path):
    db = tmp_path / "memory.sqlite3"
    for text, transcript in (("a pear", "one.jsonl"), ("a fig", "two.jsonl"), ("a lime", "one.jsonl")):
        payload = {"hook_event_name": "UserPromptSubmit", "prompt": text, "transcript_path": str(tmp_path / transcript)}
        _run("claude-code", payload, db, project)
    found = _sessions(db)
    assert found["a pear"] == found["a lime"] != found["a fig"]
    assert found["a pear"].startswith("one~") and found["a fig"].startswith("two~")


def test_prompts_without_a_session_id_or_transcript_from_two_host_processes_stay_two_sessions(
    tmp_path: Path, project: Path
):
    db = tmp_path / "memory.sqlite3"
    for text in ("a quince", "a medlar"):
        payload = {"hook_event_name": "UserPromptSubmit", "prompt": text}
        assert spawn_hook_from_new_parent("claude-code", payload, db, project).returncode == 0
    found = _sessions(db)
    assert found["a quince"] != found["a medlar"]
    assert "default" not in found.values()


INVISIBLE = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]")
HIDDEN = "I prefer pnpm over npm for this repo \u202egnirts\u202c \u2066x\u2069 \U000e0049\U000e0067"


def _context(ran_stdout: str) -> str:
    return str(json.loads(ran_stdout)["hookSpecificOutput"]["additionalContext"])


def test_bidi_controls_and_tag_characters_of_memory_reach_the_model_escaped_from_every_hook(
    tmp_path: Path, project: Path
):
    db = tmp_path / "memory.sqlite3"
    base = {"cwd": str(project)}
    _run("claude-code", {**base, **_prompt("earlier", HIDDEN)}, db, project)
    _run("claude-code", {**base, "session_id": "earlier", "hook_event_name": "PreCompact"}, db, project)
    contexts = {
        "prompt": _run("claude-code", {**base, **_prompt("now", "add lodash with npm please")}, db, project),
        "start": _run("claude-code", {**base, "session_id": "later", "hook_event_name": "SessionStart"}, db, project),
        "compact": _run(
            "claude-code",
            {**base, "session_id": "earlier", "hook_event_name": "SessionStart", "source": "compact"},
            db,
            project,
        ),
    }
    for step, out in contexts.items():
        context = _context(out)
        assert "gnirts" in context and not INVISIBLE.search(context), step
        assert "\\u202e" in context and "\\udb40\\udc49" in context, step
    assert stored(db)[0]["text"] == HIDDEN  # stored verbatim
