"""The Codex, Cursor and Gemini CLI hook adapters, each run as its host runs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hook_support import Archive, checkpoints_of, hook_archive, run_hook, side_file, spawn_hook, stored

PAYLOADS = Path(__file__).parent / "hook_payloads"

__all__ = ["hook_archive"]  # the `db` fixture: each backend in turn


def payload(host: str, event: str, project: Path, **fields: Any) -> dict[str, Any]:
    data = json.loads((PAYLOADS / host / f"{event}.json").read_text())
    if "workspace_roots" in data:
        data["workspace_roots"] = [str(project)]
    else:
        data["cwd"] = str(project)
    if data.get("transcript_path"):
        data["transcript_path"] = str(project / "missing.jsonl")
    data.update(fields)
    return data


def seed(db: Archive, project: Path) -> None:
    """An earlier Claude Code session in the same project said which database it uses."""
    earlier = {"session_id": "earlier", "cwd": str(project), "hook_event_name": "UserPromptSubmit"}
    run_hook("claude-code", {**earlier, "prompt": "This project keeps its data in SQLite via apsw"}, db, project)


def test_codex_prompt_is_recorded_and_gets_recall_hits_as_additional_context(db: Archive, project: Path) -> None:
    seed(db, project)
    ran = spawn_hook("codex", payload("codex", "UserPromptSubmit", project), db, project)  # what the process prints
    answer = ran.json()
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "SQLite via apsw" in answer["hookSpecificOutput"]["additionalContext"]
    assert stored(db)[-1]["source"] == "codex"
    assert stored(db)[-1]["session_id"] == "019d036d-c7fa-72d2-b6fd-78878bfe34e4"


def test_codex_stop_records_last_assistant_message(db: Archive, project: Path) -> None:
    ran = run_hook("codex", payload("codex", "Stop", project), db, project)
    assert (ran.returncode, ran.stdout) == (0, "")
    assert [(e["role"], e["text"]) for e in stored(db)] == [("assistant", "It uses SQLite through apsw.")]


def test_codex_session_start_answers_in_its_documented_shape(db: Archive, project: Path) -> None:
    seed(db, project)
    answer = run_hook("codex", payload("codex", "SessionStart", project), db, project).json()
    assert set(answer) == {"hookSpecificOutput"}
    assert set(answer["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}


def test_cursor_before_submit_prompt_records_and_lets_the_prompt_through(db: Archive, project: Path) -> None:
    ran = run_hook("cursor", payload("cursor", "beforeSubmitPrompt", project), db, project)
    assert ran.json() == {"continue": True}
    [event] = stored(db)
    assert (event["role"], event["source"], event["session_id"]) == ("user", "cursor", "c-5e1d")
    assert event["project_id"].startswith("app-")  # from workspace_roots: Cursor sends no cwd


def test_cursor_prompt_searches_nothing_since_it_cannot_show_the_model_what_is_found(
    db: Archive, project: Path
) -> None:
    seed(db, project)
    asked = {"prompt": "Which database keeps this project's data, SQLite via apsw?"}
    ran = run_hook("cursor", payload("cursor", "beforeSubmitPrompt", project, **asked), db, project)
    assert (ran.json(), ran.stderr) == ({"continue": True}, "")
    assert len(stored(db)) == 2
    # Nothing was noted as shown in the session, so a later host channel could still show it.
    assert not side_file(db, ".injected.json").exists()


def test_cursor_session_start_gives_additional_context(db: Archive, project: Path) -> None:
    seed(db, project)
    answer = run_hook("cursor", payload("cursor", "sessionStart", project), db, project).json()
    assert "SQLite via apsw" in answer["additional_context"]


def test_cursor_after_agent_response_records_the_reply_and_stop_lets_the_agent_go_on(db: Archive, project: Path):
    run_hook("cursor", payload("cursor", "afterAgentResponse", project), db, project)
    assert run_hook("cursor", payload("cursor", "stop", project), db, project).json() == {"continue": True}
    assert [(e["role"], e["text"]) for e in stored(db)] == [("assistant", "It uses SQLite through apsw.")]


def test_cursor_failure_still_lets_the_prompt_through(tmp_path: Path, project: Path) -> None:
    ran = spawn_hook("cursor", "[]", tmp_path / "m.sqlite3", project, "--event", "beforeSubmitPrompt")  # the process
    assert (ran.returncode, ran.json()) == (0, {"continue": True})


def test_cursor_failure_lets_the_prompt_through_as_installed_without_an_event_option(
    tmp_path: Path, project: Path
) -> None:
    # `install` writes no --event: the payload's own event name picks the failure answer.
    broken = {"MEMLIKEHUMAN_INJECT_COVERAGE": "nan"}
    ran = run_hook(
        "cursor", payload("cursor", "beforeSubmitPrompt", project), tmp_path / "m.sqlite3", project, **broken
    )
    assert (ran.returncode, ran.json()) == (0, {"continue": True})


def test_gemini_before_agent_injects_context_in_hook_specific_output(db: Archive, project: Path) -> None:
    seed(db, project)
    answer = run_hook("gemini", payload("gemini", "BeforeAgent", project), db, project).json()
    assert answer["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "SQLite via apsw" in answer["hookSpecificOutput"]["additionalContext"]


def test_gemini_records_the_prompt_as_typed_without_the_context_it_echoes_in_front(db: Archive, project: Path) -> None:
    # Gemini CLI 0.61 hands BeforeAgent the prompt with the earlier hook context in front, each piece in
    # <hook_context> and HTML-escaped inside (docs/hosts.md); only what the user typed is recorded.
    seed(db, project)
    start = run_hook("gemini", payload("gemini", "SessionStart", project), db, project).json()
    context = start["hookSpecificOutput"]["additionalContext"]
    escaped = context.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    typed = "Which package manager does this repo use?"
    echoed = f"<hook_context>{escaped}</hook_context>\n\n<hook_context>other hook</hook_context>\n\n{typed}"
    run_hook("gemini", payload("gemini", "BeforeAgent", project, prompt=echoed), db, project)
    assert stored(db)[-1]["text"] == typed


def test_gemini_after_agent_records_the_response_and_prints_json_only(db: Archive, project: Path) -> None:
    ran = spawn_hook("gemini", payload("gemini", "AfterAgent", project), db, project)  # all the process prints
    assert ran.json() == {}
    assert stored(db)[-1]["text"] == "It uses SQLite through apsw."


def test_gemini_precompress_checkpoints_from_recorded_events_without_a_transcript(db: Archive, project: Path) -> None:
    run_hook("gemini", payload("gemini", "BeforeAgent", project), db, project)
    run_hook("gemini", payload("gemini", "AfterAgent", project), db, project)
    assert run_hook("gemini", payload("gemini", "PreCompress", project), db, project).json() == {}
    [checkpoint] = checkpoints_of(db)
    assert "Which database does this project use?" in checkpoint["state"]["goal"]


def test_gemini_precompress_before_every_request_leaves_a_checkpoint_that_covers_the_latest_turn(
    db: Archive, project: Path
) -> None:
    # Gemini CLI 0.61 fires PreCompress before every model request, compressing or not: a checkpoint that
    # already covers the session's latest turn (the agent's own, or an earlier hook's) stands.
    run_hook("gemini", payload("gemini", "BeforeAgent", project), db, project)
    for _ in range(3):
        run_hook("gemini", payload("gemini", "PreCompress", project), db, project)
    assert len(checkpoints_of(db)) == 1
    run_hook("gemini", payload("gemini", "AfterAgent", project), db, project)
    run_hook("gemini", payload("gemini", "PreCompress", project), db, project)
    assert len(checkpoints_of(db)) == 2  # a turn was said since: a new one


def test_the_event_option_names_the_event_when_the_payload_does_not(db: Archive, project: Path) -> None:
    data = payload("gemini", "BeforeAgent", project)
    del data["hook_event_name"]
    run_hook("gemini", data, db, project, "--event", "BeforeAgent")
    assert stored(db)[0]["text"] == "Which database does this project use?"


def test_a_resumed_gemini_session_starts_as_a_new_one_and_its_prompts_are_handed_again(
    db: Archive, project: Path
) -> None:
    """Gemini CLI keeps a resumed chat's turns, not the hook context it was handed: the resumed start is
    a whole start context, and what the session's prompts were handed before may be handed again."""
    seed(db, project)
    start = run_hook("gemini", payload("gemini", "SessionStart", project), db, project).json()
    first = run_hook("gemini", payload("gemini", "BeforeAgent", project), db, project).json()
    assert "SQLite via apsw" in first["hookSpecificOutput"]["additionalContext"]
    resumed = run_hook("gemini", payload("gemini", "SessionStart", project, source="resume"), db, project).json()
    said = resumed["hookSpecificOutput"]["additionalContext"]
    assert "SQLite via apsw" in said and "pass these as persona_id" in said, said
    assert "Which database does this project use?" not in said  # its own turn: its chat holds it
    assert said.count("«DATA") == start["hookSpecificOutput"]["additionalContext"].count("«DATA"), said
    again = run_hook("gemini", payload("gemini", "BeforeAgent", project), db, project).json()
    assert "SQLite via apsw" in again["hookSpecificOutput"]["additionalContext"]
