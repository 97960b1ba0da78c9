"""What the hooks record besides prompts and final replies: tool calls and subagents, off by default."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hook_support import Archive, hook_archive, run_hook, stored
from test_hook_hosts import payload

from memlikehuman.hosts import markers

SESSION = "3f2a9c1e-0b7d-4d3e-9a51-7c1f2e8b6d40"
TOOLS = {"MEMLIKEHUMAN_HOOK_RECORD": "assistant,tools"}

__all__ = ["hook_archive"]  # the `db` fixture: each backend in turn


def line(kind: str, content: Any, number: int, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=f"msg_{number}", type="message", model="claude-sonnet-4-5", stop_reason="tool_use")
    return {
        "parentUuid": f"u{number - 1}" if number else None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/work/app",
        "sessionId": SESSION,
        "version": "2.1.0",
        "type": kind,
        "message": message,
        "uuid": f"u{number}",
        "timestamp": f"2026-11-30T10:{number:02d}:00.000Z",
        **extra,
    }


def tool_use(number: int, call_id: str, name: str, given: dict[str, Any]) -> dict[str, Any]:
    return line("assistant", [{"type": "tool_use", "id": call_id, "name": name, "input": given}], number)


def tool_result(number: int, call_id: str, result: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": result, "is_error": False}
    return line("user", [block], number, toolUseResult={"stdout": str(result)})


def claude_transcript(path: Path, *, result: Any = "4 passed in 0.31s") -> Path:
    """Two turns: the first read a file, the second ran the tests and recalled a memory."""
    lines = [
        line("user", "Where is the schema?", 0),
        tool_use(1, "toolu_old", "Read", {"file_path": "/work/app/db/schema.sql"}),
        tool_result(2, "toolu_old", "CREATE TABLE events (...)"),
        line("assistant", [{"type": "text", "text": "In db/schema.sql."}], 3),
        line("user", "Run the database tests", 4),
        tool_use(5, "toolu_01ABCdefGHIjklMNOpqrSTU", "Bash", {"command": "pytest -q tests/test_db.py"}),
        tool_result(6, "toolu_01ABCdefGHIjklMNOpqrSTU", result),
        tool_use(7, "toolu_mem", "mcp__memlikehuman__memory_recall", {"query": "test flakiness"}),
        tool_result(8, "toolu_mem", [{"type": "text", "text": "memory mem_1: the suite is flaky on Mondays"}]),
        line("assistant", [{"type": "text", "text": "All 4 database tests pass."}], 9),
    ]
    path.write_text("".join(json.dumps(entry) + "\n" for entry in lines))
    return path


def stop(project: Path, transcript: Path) -> dict[str, Any]:
    return payload("claude-code", "Stop", project, transcript_path=str(transcript))


def test_stop_records_no_tool_call_by_default(db: Archive, project: Path) -> None:
    transcript = claude_transcript(project / "t.jsonl")
    assert run_hook("claude-code", stop(project, transcript), db, project).returncode == 0
    assert [(e["role"], e["text"]) for e in stored(db)] == [("assistant", "All 4 database tests pass.")]


def test_stop_with_tools_on_records_each_tool_call_of_the_last_turn(db: Archive, project: Path) -> None:
    transcript = claude_transcript(project / "t.jsonl")
    ran = run_hook("claude-code", stop(project, transcript), db, project, **TOOLS)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", "")
    [call, reply] = stored(db)
    assert call["event_id"] == f"claude-code:{SESSION}:tool:toolu_01ABCdefGHIjklMNOpqrSTU"
    assert (call["role"], call["source"], call["session_id"]) == ("tool", "claude-code", SESSION)
    assert call["text"] == (
        "tool call Bash (toolu_01ABCdefGHIjklMNOpqrSTU)\n"
        'input: {"command": "pytest -q tests/test_db.py"}\n'
        "result: 4 passed in 0.31s"
    )
    assert reply["role"] == "assistant"


def test_a_rerun_of_stop_stores_each_tool_call_once(db: Archive, project: Path) -> None:
    transcript = claude_transcript(project / "t.jsonl")
    for _ in range(2):
        run_hook("claude-code", stop(project, transcript), db, project, **TOOLS)
    assert len(stored(db)) == 2


def test_calls_of_the_memory_tools_are_never_recorded(db: Archive, project: Path) -> None:
    run_hook("claude-code", stop(project, claude_transcript(project / "t.jsonl")), db, project, **TOOLS)
    own = payload("claude-code", "PostToolUse", project, tool_name="mcp__memlikehuman__memory_recall")
    run_hook("claude-code", {**own, "tool_use_id": "toolu_mem2"}, db, project, **TOOLS)
    assert all("memory_recall" not in e["text"] and "flaky" not in e["text"] for e in stored(db))


def test_a_tool_result_holding_injected_context_is_stored_without_it(db: Archive, project: Path) -> None:
    injected = markers.wrap("MemLikeHuman recalled these: - memory mem_9: the deploy key is hunter2")
    transcript = claude_transcript(project / "t.jsonl", result=f"{injected}\n4 passed")
    run_hook("claude-code", stop(project, transcript), db, project, **TOOLS)
    [call, _] = stored(db)
    assert call["text"].endswith("result: 4 passed")
    assert "hunter2" not in call["text"] and markers.OPEN not in call["text"]


def test_a_long_tool_result_is_cut_and_says_how_much_was_left_out(db: Archive, project: Path) -> None:
    transcript = claude_transcript(project / "t.jsonl", result="x" * 10_000)
    run_hook("claude-code", stop(project, transcript), db, project, **TOOLS)
    [call, _] = stored(db)
    assert call["text"].endswith("… [6,000 more characters not recorded]")


def test_post_tool_use_is_a_no_op_unless_tools_are_on(db: Archive, project: Path) -> None:
    ran = run_hook("claude-code", payload("claude-code", "PostToolUse", project), db, project)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", "")
    assert stored(db) == []


def test_post_tool_use_records_the_call_and_the_turn_end_scan_does_not_copy_it(db: Archive, project: Path) -> None:
    ran = run_hook("claude-code", payload("claude-code", "PostToolUse", project), db, project, **TOOLS)
    assert (ran.returncode, ran.stdout) == (0, "")
    [call] = stored(db)
    assert call["event_id"] == f"claude-code:{SESSION}:tool:toolu_01ABCdefGHIjklMNOpqrSTU"
    assert '"stdout": "4 passed in 0.31s"' in call["text"]  # Claude Code's structured tool_response
    run_hook("claude-code", stop(project, claude_transcript(project / "t.jsonl")), db, project, **TOOLS)
    assert [e["role"] for e in stored(db)] == ["tool", "assistant"]


def test_record_without_assistant_stores_no_final_reply(db: Archive, project: Path) -> None:
    transcript = claude_transcript(project / "t.jsonl")
    run_hook("claude-code", stop(project, transcript), db, project, "--record", "tools")
    assert [e["role"] for e in stored(db)] == ["tool"]


def test_subagent_stop_records_the_subagents_last_message_when_subagents_are_on(db: Archive, project: Path) -> None:
    data = payload("claude-code", "SubagentStop", project)
    assert run_hook("claude-code", data, db, project).returncode == 0
    assert stored(db) == []  # off by default
    ran = run_hook("claude-code", data, db, project, MEMLIKEHUMAN_HOOK_RECORD="subagents")
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", "")
    [event] = stored(db)
    assert event["text"] == "The schema lives in db/schema.sql; migrations are in db/migrations/."
    assert (event["role"], event["source"], event["session_id"]) == ("assistant", "claude-code/subagent", SESSION)
    assert event["event_id"].startswith(f"claude-code:{SESSION}:subagent:a7f3c2e1:")


def test_subagent_stop_without_a_message_reads_the_subagents_transcript(db: Archive, project: Path) -> None:
    agent = project / "agent-a7f3c2e1.jsonl"
    entries = [line("user", "Find the schema", 0, isSidechain=True)]
    entries.append(line("assistant", [{"type": "text", "text": "It is in db/schema.sql."}], 1, isSidechain=True))
    agent.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    data = payload("claude-code", "SubagentStop", project, agent_transcript_path=str(agent))
    del data["last_assistant_message"]
    run_hook("claude-code", data, db, project, "--record", "subagents")
    assert [e["text"] for e in stored(db)] == ["It is in db/schema.sql."]


def test_codex_stop_with_tools_reads_the_function_calls_of_the_last_turn_from_the_rollout(
    db: Path, project: Path
) -> None:
    def item(payload: dict[str, Any]) -> str:
        return json.dumps({"timestamp": "2026-11-30T10:00:00.000Z", "type": "response_item", "payload": payload}) + "\n"

    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run the tests"}]}
    call = {"type": "function_call", "name": "shell", "arguments": '{"command": ["pytest", "-q"]}', "call_id": "c1"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "4 passed"}
    rollout = project / "rollout.jsonl"
    rollout.write_text(item(user) + item(call) + item(output))
    run_hook("codex", payload("codex", "Stop", project, transcript_path=str(rollout)), db, project, **TOOLS)
    [tool, reply] = stored(db)
    assert tool["event_id"] == "codex:019d036d-c7fa-72d2-b6fd-78878bfe34e4:tool:c1"
    assert tool["text"] == 'tool call shell (c1)\ninput: {"command": ["pytest", "-q"]}\nresult: 4 passed'
    assert reply["text"] == "It uses SQLite through apsw."


def test_gemini_after_tool_records_the_call_and_answers_json(db: Archive, project: Path) -> None:
    ran = run_hook("gemini", payload("gemini", "AfterTool", project), db, project, **TOOLS)
    assert (ran.returncode, ran.stdout) == (0, "{}\n")
    [event] = stored(db)
    assert (event["role"], event["source"]) == ("tool", "gemini")
    assert event["text"].startswith('tool call read_file\ninput: {"absolute_path": "/work/app/db/schema.sql"}')
    assert "CREATE TABLE events" in event["text"]


def test_gemini_after_tool_of_the_memory_server_is_not_recorded(db: Archive, project: Path) -> None:
    own = payload("gemini", "AfterTool", project, tool_name="recall", mcp_context={"server_name": "memlikehuman"})
    assert run_hook("gemini", own, db, project, **TOOLS).stdout == "{}\n"
    assert stored(db) == []


def test_cursor_post_tool_use_records_the_call(db: Archive, project: Path) -> None:
    ran = run_hook("cursor", payload("cursor", "postToolUse", project), db, project, **TOOLS)
    assert ran.returncode == 0
    [event] = stored(db)
    assert event["event_id"] == "cursor:c-5e1d:tool:tool_7c1e"
    assert event["text"] == 'tool call Shell (tool_7c1e)\ninput: {"command": "pytest -q"}\nresult: 4 passed in 0.31s'


def test_an_unknown_record_part_fails_open_with_one_log_line(db: Archive, project: Path) -> None:
    ran = run_hook("claude-code", payload("claude-code", "Stop", project), db, project, "--record", "everything")
    assert (ran.returncode, ran.stdout) == (0, "")
    assert ran.stderr.count("\n") == 1 and "names everything" in ran.stderr


def test_a_mistyped_record_setting_does_not_stop_the_prompt_hook(db: Archive, project: Path) -> None:
    data = payload("claude-code", "UserPromptSubmit", project, prompt="We deploy on Fridays")
    ran = run_hook("claude-code", data, db, project, MEMLIKEHUMAN_HOOK_RECORD="assistant,tols")
    assert (ran.returncode, ran.stderr) == (0, "")
    assert [e["text"] for e in stored(db)] == ["We deploy on Fridays"]


def test_a_mistyped_setting_of_what_the_hook_hands_is_reported_and_the_prompt_still_recorded(
    db: Archive, project: Path
) -> None:
    data = payload("claude-code", "UserPromptSubmit", project, prompt="We deploy on Fridays")
    ran = run_hook("claude-code", data, db, project, MEMLIKEHUMAN_INJECT_ITEMS="five", MEMLIKEHUMAN_EXTRACTOR="gpt")
    assert ran.returncode == 0 and "This prompt is recorded as" in ran.stdout
    assert [e["text"] for e in stored(db)] == ["We deploy on Fridays"]
    lines = ran.stderr.splitlines()
    assert len(lines) == 2 and all(line.endswith("; the hook goes on with its default") for line in lines)
    assert "MEMLIKEHUMAN_EXTRACTOR must be one of" in lines[0] and "MEMLIKEHUMAN_INJECT_ITEMS='five'" in lines[1]


def test_a_config_file_the_hook_cannot_read_records_nothing_and_says_why(db: Archive, project: Path) -> None:
    data = payload("claude-code", "UserPromptSubmit", project, prompt="We deploy on Fridays")
    (project / "memlikehuman.toml").write_text("MEMLIKEHUMAN_DB = \n", encoding="utf-8")  # no value: not TOML
    ran = run_hook("claude-code", data, db, project, MEMLIKEHUMAN_CONFIG=str(project / "memlikehuman.toml"))
    assert ran.returncode == 0 and stored(db) == []  # where it records is never guessed
    assert ran.stderr.count("\n") == 1 and "cannot be read" in ran.stderr


def test_codex_subagent_stop_and_post_tool_use_payloads_are_recorded_when_asked(db: Archive, project: Path) -> None:
    run_hook("codex", payload("codex", "SubagentStop", project), db, project, "--record", "subagents")
    run_hook("codex", payload("codex", "PostToolUse", project), db, project, "--record", "tools")
    [subagent, tool] = stored(db)
    assert (subagent["role"], subagent["source"], subagent["text"]) == (
        "assistant",
        "codex/subagent",
        "The schema lives in db/schema.sql.",
    )
    assert tool["event_id"] == "codex:019d036d-c7fa-72d2-b6fd-78878bfe34e4:tool:call_Yt4kQ2mZ"
    assert tool["text"].startswith('tool call shell (call_Yt4kQ2mZ)\ninput: {"command": ["pytest", "-q"]}\n')
    assert tool["text"].endswith("\nresult: 4 passed in 0.31s")
