"""What the agent is handed, over the real hook and a real `serve` over stdio: facts before echoes.

A question the user asked in earlier sessions is not handed back to them; its answer is. memory_recall
leaves out the prompt being answered. The turn the hook recorded takes the agent's own memories,
under the same event ID, and those memories are what the next session gets.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conftest import connected, serving
from hook_support import Ran, injected_records, run_hook, stored

QUESTION = "Which package manager should I use here?"
ANSWER = "Use pnpm: this repo is set up for pnpm, never npm."
FACT = "I always use pnpm, never npm, in this repo."
MEMORY = {"content": "The user uses pnpm as the package manager of this repo, never npm", "quote": FACT,
          "kind": "preference", "subject": "user.package_manager"}  # fmt: skip


def _prompt(session: str, text: str, project: Path) -> dict[str, str]:
    return {"session_id": session, "cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": text}


def _reply(session: str, text: str, project: Path) -> dict[str, str]:
    return {"session_id": session, "cwd": str(project), "hook_event_name": "Stop", "last_assistant_message": text}


def _texts(ran: Ran) -> list[str]:
    return [record.get("text") or record["content"] for record in injected_records(ran)]


def _turn(ran: Ran, db: Path) -> dict[str, Any]:
    """The recorded turn the prompt hook names (its event_id; the session's role, source and session_id and
    the scope are said at its start): event_id, role, source, session_id, persona_id, project_id."""
    context = ran.json()["hookSpecificOutput"]["additionalContext"]
    match = re.search(r"This prompt is recorded as (\{.*?\})\.", context)
    assert match, context
    event_id = json.loads(match.group(1))["event_id"]
    [row] = [row for row in stored(db) if row["event_id"] == event_id]
    return {k: row[k] for k in ("event_id", "role", "source", "session_id", "persona_id", "project_id")}


def test_a_question_asked_in_four_earlier_sessions_is_not_handed_back_but_its_answer_is(tmp_path: Path, project: Path):
    db = tmp_path / "memory.sqlite3"
    run_hook("claude-code", _prompt("f", FACT, project), db, project)
    for n in range(4):
        run_hook("claude-code", _prompt(f"q{n}", QUESTION, project), db, project)
        run_hook("claude-code", _reply(f"q{n}", ANSWER, project), db, project)
    ran = run_hook("claude-code", _prompt("now", QUESTION, project), db, project)
    records = injected_records(ran)
    assert QUESTION not in _texts(ran)  # the user's own question, four times over: never handed back
    answers = [r for r in records if r.get("text") == ANSWER]
    assert len(answers) == 1 and answers[0]["said"] == 4  # the answer once, saying how often it was given
    assert len(stored(db)) == 10  # every turn was recorded all the same


def test_memory_recall_leaves_out_the_prompt_being_answered_until_it_is_answered(tmp_path: Path, project: Path):
    db = tmp_path / "memory.sqlite3"
    run_hook("claude-code", _prompt("earlier", FACT, project), db, project)
    asked = _turn(run_hook("claude-code", _prompt("now", "which package manager does this repo use?", project), db,
                           project), db)  # fmt: skip
    scope = {"persona_id": asked["persona_id"], "project_id": asked["project_id"]}
    with connected(serving(db)) as client:
        found = client.ok("memory_recall", query="package manager repo", **scope)
        assert asked["event_id"] not in [hit["event_id"] for hit in found["raw_fallback"]]
        assert FACT in [hit["excerpt"] for hit in found["raw_fallback"]]
        run_hook("claude-code", _reply("now", "This repo uses pnpm.", project), db, project)
        answered = client.ok("memory_recall", query="package manager repo", **scope)
    assert asked["event_id"] in [hit["event_id"] for hit in answered["raw_fallback"]]  # answered: a turn like any


def test_a_hook_recorded_turn_takes_the_agents_memories_which_the_next_session_is_handed(
    tmp_path: Path, project: Path
) -> None:
    db = tmp_path / "memory.sqlite3"
    turn = _turn(run_hook("claude-code", _prompt("s1", FACT, project), db, project), db)
    call = {**turn, "text": FACT, "memories": [MEMORY]}
    with connected(serving(db)) as client:
        given = client.ok("memory_record", **call)
        assert given["duplicate"] is True and given["extraction_state"] == "complete"
        [memory_id] = given["memory_ids"]
        scope = {"persona_id": turn["persona_id"], "project_id": turn["project_id"]}
        memory = client.ok("memory_read", record_id=memory_id, **scope)["memory"]
        assert memory["extractor"] == "agent" and memory["source"]["event_id"] == turn["event_id"]
        assert client.ok("memory_record", **call)["memory_ids"] == [memory_id]  # an identical retry: duplicate
        other = {**MEMORY, "content": "The user dislikes npm", "quote": "never npm, in this repo"}
        assert client.error("memory_record", **{**call, "memories": [other]}).startswith("conflict: ")
    ran = run_hook("claude-code", _prompt("s2", "which package manager should I use to add lodash?", project), db,
                   project)  # fmt: skip
    records = injected_records(ran)
    assert records and records[0].get("memory_id") == memory_id  # the memory, not the prompt it came from
    assert FACT not in _texts(ran)
