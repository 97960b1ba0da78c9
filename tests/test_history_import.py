"""`memlikehuman import` of Claude Code transcripts, a ChatGPT export and a Claude.ai export."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from conftest import BASE_ENV
from hook_support import run_hook, stored, write_transcript

from memlikehuman.cli import main
from memlikehuman.text.projects import project_name

FIXTURES = Path(__file__).parent / "history_fixtures"
CHATGPT = FIXTURES / "chatgpt" / "conversations.json"
CLAUDE_AI = FIXTURES / "claude-ai" / "conversations.json"
CLAUDE_CODE = FIXTURES / "claude-code"


def chatgpt_export(path: Path, texts: list[str], per_conversation: int = 20, name: str = "conv") -> Path:
    """A ChatGPT conversations.json of `texts` in turn (user, assistant, ...), `per_conversation` to a conversation."""
    conversations = []
    for first in range(0, len(texts), per_conversation):
        root = f"root-{first}"
        mapping: dict[str, Any] = {root: {"id": root, "message": None, "parent": None, "children": []}}
        parent = root
        for number, text in enumerate(texts[first : first + per_conversation], start=first):
            role = "user" if number % 2 == 0 else "assistant"
            message = {"id": f"m-{number}", "author": {"role": role}, "create_time": 1764500000.0 + number}
            message["content"] = {"content_type": "text", "parts": [text]}
            mapping[f"m-{number}"] = {"id": f"m-{number}", "message": message, "parent": parent, "children": []}
            mapping[parent]["children"].append(f"m-{number}")
            parent = f"m-{number}"
        conversations.append({"id": f"{name}-{first}", "mapping": mapping, "current_node": parent})
    path.write_text(json.dumps(conversations, indent=1), encoding="utf-8")
    return path


def claude_ai_export(path: Path, texts: list[str], per_conversation: int = 20, name: str = "conv") -> Path:
    """A Claude.ai conversations.json of `texts` (human, assistant, ...), `per_conversation` to a conversation."""
    conversations = []
    for first in range(0, len(texts), per_conversation):
        chat = [
            {"uuid": f"m-{n}", "text": text, "sender": "human" if n % 2 == 0 else "assistant"}
            for n, text in enumerate(texts[first : first + per_conversation], start=first)
        ]
        conversations.append({"uuid": f"{name}-{first}", "created_at": "2026-10-01T09:00:00Z", "chat_messages": chat})
    path.write_text(json.dumps(conversations, indent=1), encoding="utf-8")
    return path


def run(db: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["--db", str(db), "import", *args], env=BASE_ENV)


def report(db: Path, *args: str) -> dict[str, Any]:
    result = run(db, *args, "--json")
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def test_chatgpt_import_takes_the_current_branch_and_counts_the_rest(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    found = report(db, str(CHATGPT))
    assert (found["format"], found["conversations"], found["added"]) == ("chatgpt", 2, 7)
    assert found["skipped"] == {
        "attachments (images, files)": 1,
        "messages on other branches (edits, regenerations)": 3,
        "system messages": 1,
        "tool messages": 1,
    }
    lisbon = [e for e in stored(db) if e["session_id"] == "conv-lisbon"]
    assert [(e["role"], e["text"]) for e in lisbon] == [
        ("user", "I am planning a trip to Lisbon in March."),
        ("assistant", "Lisbon in March is mild, around 17°C. Pack a light jacket."),
        ("user", "What about hotels near Alfama? Here is a photo of one."),
        ("assistant", "Alfama has small guesthouses with river views."),
        ("assistant", "I found three guesthouses under 120 EUR a night."),
    ]
    assert {e["source"] for e in stored(db)} == {"chatgpt"}


def test_imported_messages_keep_their_original_time(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    report(db, str(CHATGPT))
    found = CliRunner().invoke(
        main, ["--db", str(db), "recall", "sister birthday", "--project", "default", "--json"], env=BASE_ENV
    )
    # The reply comes first (it answers the question that matched too); the user's message kept its time.
    hit = next(h for h in json.loads(found.stdout)["raw_fallback"] if h["role"] == "user")
    assert hit["occurred_at"] == "2025-12-01T14:40:00.000000Z"  # create_time 1764600000 of the export
    assert hit["session_id"] == "conv-birthdays"


def test_a_second_import_adds_nothing(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    report(db, str(CLAUDE_AI))
    again = report(db, str(CLAUDE_AI))
    assert (again["added"], again["unchanged"]) == (0, 5)
    assert len(stored(db)) == 5


def test_claude_ai_import_maps_senders_and_counts_attachments(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    found = report(db, str(CLAUDE_AI))
    assert (found["format"], found["conversations"], found["added"]) == ("claude-ai", 2, 5)
    assert found["skipped"] == {"attachments (images, files)": 2}
    garden = [(e["role"], e["text"]) for e in stored(db) if e["session_id"] == "c1a2-conv-garden"]
    assert garden[1] == (
        "assistant",
        "Cherry tomatoes suit a south-facing balcony.",
    )  # from `content` when `text` is empty
    assert {e["source"] for e in stored(db)} == {"claude-ai"}


def test_claude_code_transcripts_import_into_the_project_the_hooks_use(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    found = report(db, str(CLAUDE_CODE))
    assert (found["format"], found["conversations"], found["added"]) == ("claude-code", 2, 5)
    events = stored(db)
    assert [(e["role"], e["text"]) for e in events if e["session_id"] == "11111111-aaaa"] == [
        ("user", "Add a --verbose flag to the CLI"),
        ("assistant", "I'll look at the CLI entry point first."),
        ("assistant", "Added --verbose; it sets the log level to DEBUG."),
    ]
    assert {e["project_id"] for e in events} == {project_name(Path("/home/user/work/app"))}


def test_claude_code_import_after_the_hooks_adds_only_what_they_missed(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    hook = {"session_id": "22222222-bbbb", "cwd": "/home/user/work/app", "hook_event_name": "UserPromptSubmit"}
    run_hook("claude-code", {**hook, "prompt": "Run the tests"}, db, tmp_path)
    found = report(db, str(CLAUDE_CODE / "-work-app" / "22222222-bbbb.jsonl"))
    assert (found["added"], found["unchanged"]) == (1, 1)
    assert [e["text"] for e in stored(db)] == ["Run the tests", "All 42 tests pass."]


def test_a_broken_conversation_names_file_and_line_and_nothing_is_imported(tmp_path: Path) -> None:
    data = json.loads(CHATGPT.read_text())
    data[1]["mapping"]["a-9"]["message"]["author"] = {}
    broken = tmp_path / "conversations.json"
    broken.write_text(json.dumps(data, indent=2))
    db = tmp_path / "m.sqlite3"
    result = run(db, str(broken))
    assert result.exit_code == 1
    line = next(i for i, text in enumerate(broken.read_text().splitlines(), 1) if '"a-9"' in text)
    assert f"{broken}, line {line}: a message has no author role" in result.output
    assert not db.exists() or stored(db) == []


def test_a_bad_transcript_line_names_its_file_and_line(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    shutil.copytree(CLAUDE_CODE, folder)
    bad = folder / "-work-app" / "22222222-bbbb.jsonl"
    bad.write_text(bad.read_text() + '{"type": "user", "message": \n')
    db = tmp_path / "m.sqlite3"
    result = run(db, str(folder))
    assert result.exit_code == 1
    assert f"{bad}, line 4: not JSON" in result.output
    assert not db.exists() or stored(db) == []


def test_a_file_that_does_not_say_its_format_needs_format(tmp_path: Path) -> None:
    odd = tmp_path / "export.json"
    odd.write_text("[]\n")
    result = run(tmp_path / "m.sqlite3", str(odd))
    assert result.exit_code == 1 and "pass --format" in result.output
    assert report(tmp_path / "m.sqlite3", str(odd), "--format", "chatgpt")["added"] == 0


@pytest.mark.parametrize("source", [CHATGPT, CLAUDE_AI, CLAUDE_CODE])
def test_a_dry_run_writes_nothing(tmp_path: Path, source: Path) -> None:
    db = tmp_path / "m.sqlite3"
    assert report(db, str(source), "--dry-run")["added"] > 0
    assert not db.exists()


def test_the_scope_options_choose_where_history_goes(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    report(db, str(CLAUDE_AI), "--persona", "ada", "--project", "home")
    assert {(e["persona_id"], e["project_id"]) for e in stored(db)} == {("ada", "home")}


def test_embed_computes_the_vectors_of_an_imported_history(tmp_path: Path) -> None:
    from openai_stub import ScriptedOpenAI

    db = tmp_path / "m.sqlite3"
    with ScriptedOpenAI() as api:
        env = {**BASE_ENV, "MEMLIKEHUMAN_EMBEDDER": "openai", "MEMLIKEHUMAN_EMBEDDER_BASE_URL": api.base_url}
        result = CliRunner().invoke(main, ["--db", str(db), "import", str(CHATGPT), "--embed"], env=env)
        assert result.exit_code == 0, result.output
        assert "vectors: 7 events and memories embedded" in result.stderr
        stats = CliRunner().invoke(main, ["--db", str(db), "stats", "--all", "--json"], env=env)
    assert json.loads(stats.stdout)["totals"]["vectors_missing"] == 0


@pytest.mark.parametrize("write", [chatgpt_export, claude_ai_export])
def test_reading_an_export_goes_over_its_whole_text_a_fixed_number_of_times_not_once_per_message(
    tmp_path: Path, write: Any
) -> None:
    export = write(tmp_path / "conversations.json", [f"message number {n}" for n in range(400)])
    whole = len(export.read_text(encoding="utf-8"))
    scans = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal scans
        held = getattr(arg, "__self__", None) if event == "c_call" else None
        scans += isinstance(held, str) and len(held) >= whole  # a str method called on the whole file's text

    sys.setprofile(count)
    try:
        found = report(tmp_path / "m.sqlite3", str(export), "--dry-run")
    finally:
        sys.setprofile(None)
    assert found["added"] == 400
    assert scans <= 4


HUGE = " ".join(f"word{n:06d}" for n in range(25_000))  # 274,999 characters: stored in two parts
HEADER = "[part {} of 2 of one 274,999-character message]\n"


def test_one_250000_character_message_does_not_keep_the_rest_of_a_claude_code_history_out(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-work-app"
    folder.mkdir(parents=True)
    write_transcript(folder / "s-1.jsonl", "s-1", [("user", "Before it"), ("assistant", HUGE), ("user", "After it")])
    write_transcript(folder / "s-2.jsonl", "s-2", [("user", "Another session"), ("assistant", "Its reply")])
    db = tmp_path / "m.sqlite3"
    found = report(db, str(tmp_path / "projects"))
    assert (found["conversations"], found["added"]) == (2, 6)
    texts = [e["text"] for e in stored(db)]
    assert texts[0] == "Before it" and texts[3:] == ["After it", "Another session", "Its reply"]
    assert texts[1].startswith(HEADER.format(1)) and texts[2].startswith(HEADER.format(2))
    assert "".join(t.split("\n", 1)[1] for t in texts[1:3]) == HUGE


def test_a_claude_code_import_stores_odd_turns_under_the_ids_the_hooks_stored_them(tmp_path: Path) -> None:
    session = "s" * 300
    hook = {"session_id": session, "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit"}
    db = tmp_path / "m.sqlite3"
    for prompt in ("I like \ud83d tea", HUGE):
        run_hook("claude-code", {**hook, "prompt": prompt}, db, tmp_path)
    by_hooks = stored(db)
    transcript = write_transcript(tmp_path / "t.jsonl", session, [("user", "I like \ud83d tea"), ("user", HUGE)])
    found = report(db, str(transcript))
    assert (found["added"], found["unchanged"]) == (0, 3)
    assert by_hooks[0]["text"] == "I like \ufffd tea"
    assert by_hooks[1]["text"].startswith(HEADER.format(1)) and by_hooks[2]["text"].startswith(HEADER.format(2))
    assert {e["session_id"] for e in by_hooks} == {
        f"{session[:80]}~{hashlib.sha256(session.encode()).hexdigest()[:16]}"
    }


@pytest.mark.parametrize("write", [chatgpt_export, claude_ai_export])
def test_an_export_stores_a_huge_message_in_parts_a_lone_surrogate_as_ufffd_and_a_long_id_as_its_key(
    tmp_path: Path, write: Any
) -> None:
    export = write(
        tmp_path / "conversations.json", ["Before it", HUGE, "a lone \ud800 surrogate", "After it"], name="c" * 300
    )
    db = tmp_path / "m.sqlite3"
    found = report(db, str(export))
    assert found["added"] == 5
    events = stored(db)
    texts = [e["text"] for e in events]
    assert texts[0] == "Before it" and texts[3:] == ["a lone \ufffd surrogate", "After it"]
    assert texts[1].startswith(HEADER.format(1)) and texts[2].startswith(HEADER.format(2))
    key = "c" * 80 + "~" + hashlib.sha256(("c" * 300 + "-0").encode()).hexdigest()[:16]
    assert {e["session_id"] for e in events} == {key}
    assert report(db, str(export))["unchanged"] == 5


def test_a_transcript_byte_that_is_no_utf_8_is_imported_as_ufffd_as_the_hooks_read_it(tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "t.jsonl", "s-1", [("user", "cafe MARK"), ("assistant", "Noted")])
    transcript.write_bytes(transcript.read_bytes().replace(b"MARK", b"\xe9"))
    db = tmp_path / "m.sqlite3"
    assert report(db, str(transcript))["added"] == 2
    assert [e["text"] for e in stored(db)] == ["cafe \ufffd", "Noted"]


DEEP = "[" * 5000 + "]" * 5000  # nested past Python's JSON parser: it raises RecursionError


def test_a_transcript_line_nested_thousands_deep_is_skipped_and_counted_and_the_history_imported(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "projects" / "-work-app"
    folder.mkdir(parents=True)
    deep = write_transcript(folder / "s-1.jsonl", "s-1", [("user", "Before it"), ("assistant", "After it")])
    lines = deep.read_text().splitlines(keepends=True)
    tool = {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "input": 0}]}}
    deep.write_text("".join(lines[:2]) + json.dumps(tool).replace("0}", DEEP + "}") + "\n" + "".join(lines[2:]))
    write_transcript(folder / "s-2.jsonl", "s-2", [("user", "Another session"), ("assistant", "Its reply")])
    db = tmp_path / "m.sqlite3"
    found = report(db, str(tmp_path / "projects"))
    assert found["added"] == 4
    assert found["skipped"] == {"lines nested too deep to read (a tool's input or output)": 1}
    assert [e["text"] for e in stored(db)] == ["Before it", "After it", "Another session", "Its reply"]


@pytest.mark.parametrize("fmt", ["chatgpt", "claude-ai"])
def test_an_export_nested_thousands_deep_is_refused_naming_the_file(tmp_path: Path, fmt: str) -> None:
    export = tmp_path / "conversations.json"
    export.write_text(f'[{{"mapping": {{}}, "chat_messages": [], "x": {DEEP}}}]')
    db = tmp_path / "m.sqlite3"
    result = run(db, "--format", fmt, str(export))
    assert result.exit_code == 1
    assert f"{export}: nested 5,002 levels deep, too deep to read: is this" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
