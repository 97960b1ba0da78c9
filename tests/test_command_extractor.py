"""MEMLIKEHUMAN_EXTRACTOR=command: the host's CLI run headless makes the memories, over real stdio."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import connected, serving, stdio_params
from fake_clis import ENVELOPES, FAILURES, install, runs
from hook_support import run_hook, stored

from memlikehuman.providers.command import PRESETS

TEXT = "I prefer pnpm over npm for this repo. Lodash is fine."
PRESET_PROGRAMS = {"claude-code": "claude", "codex": "codex", "gemini": "gemini"}


def _env(tmp_path: Path, command: str, **env: str) -> dict[str, str]:
    """The server's environment: the CLI `command` extracts (tmp_path/bin first), and secrets it must not see."""
    path = f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    secrets = {"OPENAI_API_KEY": "sk-ours", "MEMLIKEHUMAN_EXTRACTOR_API_KEY": "sk-ours-too", "PGPASSWORD": "pw",
               "CLAUDECODE": "1", "KEPT_VARIABLE": "kept"}  # fmt: skip
    return {"MEMLIKEHUMAN_EXTRACTOR": "command", "MEMLIKEHUMAN_EXTRACTOR_COMMAND": command, "PATH": path,
            "HOME": str(tmp_path / "home"), **secrets, **env}  # fmt: skip


def _server(tmp_path: Path, command: str, **env: str) -> Any:
    return serving(tmp_path / "a.sqlite3", **_env(tmp_path, command, **env))


def _event_soon(client: Any, event_id: str, seconds: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        event = client.ok("memory_read", record_id=event_id)["event"]
        if event["extraction_state"] == "complete" or time.monotonic() > deadline:
            return event
        time.sleep(0.05)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_each_preset_runs_its_cli_headless_and_its_envelope_is_unwrapped_into_memories(tmp_path, preset):
    program = PRESET_PROGRAMS[preset]
    install(tmp_path / "bin", program, ENVELOPES[program], sys.executable)
    with connected(_server(tmp_path, preset, MEMLIKEHUMAN_EXTRACTION_WAIT="20")) as client:
        out = client.ok("memory_record", event_id="c-1", text=TEXT, role="user", source="user")
        assert out["extraction_state"] == "complete" and len(out["memory_ids"]) == 1, out
        memory = client.ok("memory_read", record_id=out["memory_ids"][0])["memory"]
    assert memory["content"] == "The user said: I prefer pnpm over npm for this repo."
    assert memory["extractor"] == f"command:{preset}"
    (run,) = runs(tmp_path / "bin")
    argv = list(PRESETS[preset].argv[1:])
    if preset == "claude-code":  # its system message goes in as --system-prompt; the rest is on stdin
        assert run["argv"][: len(argv) + 1] == [*argv, "--system-prompt"]
        assert run["argv"][-1].startswith("You extract long-term memories") and len(run["argv"]) == len(argv) + 2
    else:
        assert run["argv"] == argv
    # What a CLI saves of the prompt under HOME (Gemini CLI's chats) goes with the run.
    assert not [p for p in (tmp_path / "home").rglob("*") if p.is_file()]
    # Only an allow-list of the environment goes along (tests/reliability/test_audit_extractor.py): not our
    # settings and secrets, nor the markers of a Claude Code session around us (a `claude -p` that sees them
    # refuses to nest), nor a variable nobody named; the recording guard does (hooks of that run record nothing).
    passed = {k: v for k, v in run["env"].items() if v is not None}
    assert passed == {"MEMLIKEHUMAN_EXTRACTING": "1"}
    assert Path(run["cwd"]).name.startswith("memlikehuman-extract-") and not Path(run["cwd"]).exists()


def test_a_command_line_of_ones_own_gets_the_prompt_on_stdin(tmp_path):
    script = install(tmp_path / "bin", "my-model", ENVELOPES["gemini"], sys.executable)
    with connected(_server(tmp_path, f"{script} --fast 'two words'", MEMLIKEHUMAN_EXTRACTION_WAIT="20")) as client:
        out = client.ok("memory_record", event_id="c-2", text=TEXT, role="user", source="user")
    assert out["extraction_state"] == "complete"
    (run,) = runs(tmp_path / "bin")
    assert run["argv"] == ["--fast", "two words"] and run["prompt_chars"] > 1000


@pytest.mark.parametrize(
    ("failure", "preset", "state", "says"),
    [
        ("garbage", "claude-code", "failed", "not valid JSON"),
        ("deep", "claude-code", "failed", "nested deeper than 32 levels"),
        ("exit", "claude-code", "pending", "exited with 1: Error: not logged in"),
        ("claude-error", "claude-code", "pending", "exited with 1: Invalid API key"),
        ("codex-error", "codex", "pending", "exited with 1: unexpected status 401 Unauthorized: Incorrect API key"),
        ("gemini-error", "gemini", "pending", "exited with 41: Please set an Auth method"),
    ],
)
def test_a_cli_that_fails_leaves_the_event_failed_or_retryable_with_the_reason(tmp_path, failure, preset, state, says):
    install(tmp_path / "bin", PRESET_PROGRAMS[preset], FAILURES[failure], sys.executable)
    with connected(_server(tmp_path, preset, MEMLIKEHUMAN_EXTRACTION_WAIT="20")) as client:
        out = client.ok("memory_record", event_id="c-3", text=TEXT, role="user", source="user")
        recall = client.ok("memory_recall", query="pnpm")
    assert out["extraction_state"] == state and says in out["error"], out
    assert recall["raw_fallback"][0]["event_id"] == "c-3"


def test_a_cli_that_hangs_is_killed_at_the_timeout_and_memory_record_never_waits_past_its_wait(tmp_path):
    install(tmp_path / "bin", "claude", FAILURES["hang"], sys.executable)
    env = {"MEMLIKEHUMAN_EXTRACTION_WAIT": "0.5", "MEMLIKEHUMAN_TIMEOUT": "1"}
    with connected(_server(tmp_path, "claude-code", **env)) as client:
        started = time.monotonic()
        out = client.ok("memory_record", event_id="c-4", text=TEXT, role="user", source="user")
        assert out["extraction_state"] == "pending" and time.monotonic() - started < 5
        time.sleep(2)
        event = client.ok("memory_read", record_id="c-4")["event"]
    assert event["extraction_state"] == "pending" and "did not answer within 1 s" in event["extraction_error"]
    (run,) = runs(tmp_path / "bin")
    with pytest.raises(ProcessLookupError):  # the hung run was killed, not left behind
        os.kill(run["pid"], 0)


def test_a_missing_command_leaves_events_pending_with_what_to_fix(tmp_path):
    with connected(_server(tmp_path, "claude-code", MEMLIKEHUMAN_EXTRACTION_WAIT="20")) as client:
        out = client.ok("memory_record", event_id="c-5", text=TEXT, role="user", source="user")
    assert out["extraction_state"] == "pending" and "'claude' cannot be started" in out["error"]


def test_a_chat_recorded_while_the_cli_works_goes_to_it_in_batches_of_its_session(tmp_path):
    install(tmp_path / "bin", "claude", ENVELOPES["claude"], sys.executable)
    env = {"MEMLIKEHUMAN_EXTRACTION_BATCH": "6", "FAKE_CLI_SLEEP": "1.5"}
    with connected(_server(tmp_path, "claude-code", **env)) as client:
        for number in range(6):
            text = f"Turn {number} says something worth keeping. More text."
            client.ok("memory_record", event_id=f"b-{number}", text=text, role="user", source="user", session_id="s")
        events = [_event_soon(client, f"b-{number}", seconds=30) for number in range(6)]
    assert all(event["extraction_state"] == "complete" and len(event["memory_ids"]) == 1 for event in events)
    assert len(runs(tmp_path / "bin")) <= 3  # 6 turns, the first alone, the rest behind it


def test_a_hook_run_inside_an_extraction_records_and_injects_nothing(tmp_path):
    # The host CLI that an extraction runs headless may run its hooks: what they see is our prompt.
    db, project = tmp_path / "data" / "memory.sqlite3", tmp_path / "app"
    project.mkdir()
    prompt = {"session_id": "s", "hook_event_name": "UserPromptSubmit", "cwd": str(project), "prompt": "You extract"}
    inside = run_hook("claude-code", prompt, db, project, MEMLIKEHUMAN_EXTRACTING="1")
    assert inside.returncode == 0 and inside.stdout == "" and stored(db) == []
    outside = run_hook("claude-code", prompt, db, project)
    assert outside.returncode == 0 and [row["text"] for row in stored(db)] == ["You extract"]


def test_a_server_started_inside_an_extraction_run_refuses_to_serve(tmp_path):
    # Where a CLI still starts its MCP servers, ours must not record that run's prompt or start another run.
    params = stdio_params(tmp_path / "a.sqlite3", **_env(tmp_path, "claude-code", MEMLIKEHUMAN_EXTRACTING="1"))
    done = subprocess.run(
        [params.command, *params.args], input=b"", capture_output=True, env=params.env, timeout=60, check=False
    )
    assert done.returncode == 1 and b"not serving inside an extraction run" in done.stderr
    assert done.stdout == b"" and not (tmp_path / "a.sqlite3").exists()
