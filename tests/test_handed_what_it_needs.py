"""What a new session and a prompt are handed, over the real hook and a real `serve` over stdio.

The agent's standing facts at the start (only the current version of a changed one); a changed value
newest first; no fragment, acknowledgement or earlier question handed as a fact; a detail in the middle
of a long reply found, shown and handed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conftest import connected, serving
from hook_support import hook_archive, injected_records, run_hook, stored

__all__ = ["hook_archive"]  # the `db` fixture of the tests that run on both backends

DEADLINE = "The hard deadline for the demo is March 14."
MOVED = "Bad news: the demo deadline moved to March 28, that's the hard deadline."


def _prompt(session: str, text: str, project: Path) -> dict[str, str]:
    return {"session_id": session, "cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": text}


def _reply(session: str, text: str, project: Path) -> dict[str, str]:
    return {"session_id": session, "cwd": str(project), "hook_event_name": "Stop", "last_assistant_message": text}


def _start(session: str, project: Path) -> dict[str, str]:
    return {"session_id": session, "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}


def _context(ran: Any) -> str:
    return str(ran.json()["hookSpecificOutput"]["additionalContext"]) if ran.stdout else ""


def _turn(db: Path | str, project: Path, session: str, text: str) -> dict[str, Any]:
    """Record a prompt through the hook; the call an agent that follows the context makes to keep it: the
    event_id the prompt's line names, the role, source and session the session's start names, the scope."""
    start = _context(run_hook("claude-code", _start(session, project), db, project))
    ran = run_hook("claude-code", _prompt(session, text, project), db, project)
    event_id = json.loads(re.findall(r"This prompt is recorded as (\{.*?\})\.", _context(ran))[-1])["event_id"]
    recorded = json.loads(re.search(r"prompts are recorded with (\{.*?\})\.", start).group(1))  # type: ignore[union-attr]
    scope = re.search(r"persona '([^']+)', project '([^']+)'", start)
    assert scope is not None
    return {"event_id": event_id, "text": text, **recorded, "persona_id": scope[1], "project_id": scope[2]}


def _remember(client: Any, turn: dict[str, Any], content: str, quote: str, subject: str | None) -> None:
    memory = {"content": content, "quote": quote, "kind": "fact", **({"subject": subject} if subject else {})}
    assert client.ok("memory_record", **turn, memories=[memory])["extraction_state"] == "complete"


def _facts(context: str) -> list[str]:
    """The content of each line of the standing_facts block."""
    block = re.search(r"«DATA (\d+) standing_facts»\n(.*?)\n«END \1 standing_facts»", context, re.DOTALL)
    return [json.loads(line)["content"] for line in block.group(2).splitlines()] if block else []


def test_a_new_session_starts_with_the_standing_facts_the_agent_recorded_and_only_the_current_deadline(
    tmp_path: Path, project: Path
) -> None:
    db = tmp_path / "memory.sqlite3"
    pnpm = _turn(db, project, "s1", "I use pnpm, never npm or yarn, in this repo.")
    deadline = _turn(db, project, "s1", DEADLINE)
    chat = _turn(db, project, "s1", "Tell me a joke about cats.")
    moved = _turn(db, project, "s2", MOVED)
    with connected(serving(db)) as client:
        _remember(client, pnpm, "The user uses pnpm, never npm or yarn", pnpm["text"], "user.package_manager")
        _remember(client, deadline, "The demo's hard deadline is March 14", DEADLINE, "project.demo_deadline")
        _remember(client, moved, "The demo's hard deadline is March 28", "the demo deadline moved to March 28",
                  "project.demo_deadline")  # fmt: skip
    assert chat["event_id"]
    start = _context(run_hook("claude-code", _start("s3", project), db, project))
    facts = _facts(start)
    assert facts == ["The demo's hard deadline is March 28", "The user uses pnpm, never npm or yarn"]
    assert "March 14" not in start.split("standing_facts»", 1)[1].split("«END", 1)[0]
    assert "joke about cats" not in json.dumps(facts)


def test_a_new_session_starts_with_the_rules_the_user_stated_that_no_memory_holds(
    tmp_path: Path, project: Path
) -> None:
    db = tmp_path / "memory.sqlite3"
    pnpm = _turn(db, project, "s1", "I use pnpm, never npm or yarn, in this repo.")
    _turn(db, project, "s1", "Always run ruff before committing.")
    _turn(db, project, "s1", "Never mind the lint step for now.")
    _turn(db, project, "s1", "The demo is on March 14.")
    _turn(db, project, "s2", "I'd prefer short commit messages in English.")
    with connected(serving(db)) as client:
        _remember(client, pnpm, "The user uses pnpm, never npm or yarn", pnpm["text"], "user.package_manager")
    start = _context(run_hook("claude-code", _start("s3", project), db, project))
    # the memory in the agent's words, then the rules no memory holds in the user's, newest first
    assert _facts(start) == [
        "The user uses pnpm, never npm or yarn",
        "I'd prefer short commit messages in English.",
        "Always run ruff before committing.",
    ]
    block = start.split("standing_facts»", 1)[1].split("«END", 1)[0]
    [ruff] = [json.loads(line) for line in block.strip().splitlines() if "ruff" in line]
    assert ruff["kind"] == "rule" and ruff["event_id"].startswith("claude-code:s1:user:")
    assert ruff["from"] == {"role": "user", "source": "claude-code"}


def test_a_changed_value_comes_newest_first_in_the_prompt_hook_and_in_memory_recall(
    tmp_path: Path, project: Path
) -> None:
    db = tmp_path / "memory.sqlite3"
    run_hook("claude-code", _prompt("s1", DEADLINE, project), db, project)
    run_hook("claude-code", _reply("s1", "Noted.", project), db, project)
    run_hook("claude-code", _prompt("s2", "The demo deadline moved: it is March 28 now.", project), db, project)
    ran = run_hook("claude-code", _prompt("s3", "When is the demo deadline?", project), db, project)
    texts = [r.get("text", "") for r in injected_records(ran)]
    assert texts[:2] == ["The demo deadline moved: it is March 28 now.", DEADLINE], texts
    [older] = [r for r in injected_records(ran) if r.get("text") == DEADLINE]
    assert older["newer"].startswith("claude-code:s2:user:")  # the earlier one says which is newer
    scope = {"persona_id": "default", "project_id": stored(db)[0]["project_id"]}
    with connected(serving(db)) as client:
        found = client.ok("memory_recall", query="demo deadline", **scope)["raw_fallback"]
    assert [hit["excerpt"] for hit in found][:2] == ["The demo deadline moved: it is March 28 now.", DEADLINE]
    assert found[1]["newer"] == found[0]["event_id"] and found[0]["newer"] is None


def test_no_fragment_acknowledgement_or_earlier_question_is_handed_as_a_fact(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "memory.sqlite3"
    moved = _turn(db, project, "s1", MOVED)
    run_hook("claude-code", _reply("s1", "Noted, the demo deadline is now March 28.", project), db, project)
    run_hook("claude-code", _prompt("s2", "Morning. How do I add date-fns to the project?", project), db, project)
    run_hook("claude-code", _reply("s2", "Run pnpm add date-fns in the web package.", project), db, project)
    with connected(serving(db)) as client:
        _remember(client, moved, "The demo's hard deadline is March 28", "the demo deadline moved to March 28", None)
    deadline = injected_records(
        run_hook("claude-code", _prompt("s3", "What is the demo deadline?", project), db, project)
    )
    said = json.dumps(deadline)
    assert [r.get("content") for r in deadline] == ["The demo's hard deadline is March 28"]  # the memory alone
    assert "Bad news" not in said and "that's the hard deadline" not in said and "Noted" not in said
    date_fns = injected_records(run_hook("claude-code", _prompt("s4", "how do I add date-fns?", project), db, project))
    assert [r.get("text") for r in date_fns] == ["Run pnpm add date-fns in the web package."]  # the answer only


def test_a_detail_in_the_middle_of_a_long_reply_is_found_shown_and_handed_by_the_hook(
    tmp_path: Path, project: Path
) -> None:
    db = tmp_path / "memory.sqlite3"
    steps = [f"Step {n}: configure module {n} and run its checks before moving on to the next one." for n in range(130)]
    steps[64] = "The staging database password rotates every Tuesday at 04:00 UTC; the ops team sets it."
    reply = "\n\n".join(steps)
    assert len(reply) > 10_000
    run_hook("claude-code", _prompt("s1", "Walk me through the staging setup.", project), db, project)
    run_hook("claude-code", _reply("s1", reply, project), db, project)
    ran = run_hook(
        "claude-code", _prompt("s2", "when does the staging database password rotate?", project), db, project
    )
    handed = [r for r in injected_records(ran) if "rotates every Tuesday at 04:00 UTC" in r.get("text", "")]
    assert handed and len(handed[0]["text"]) <= 400  # the passage that answers, not the head of the reply
    scope = {"persona_id": "default", "project_id": stored(db)[0]["project_id"]}
    with connected(serving(db)) as client:
        found = client.ok("memory_recall", query="staging database password rotate", **scope)["raw_fallback"]
        [hit] = [h for h in found if h["role"] == "assistant"]
        assert "rotates every Tuesday at 04:00 UTC" in hit["excerpt"] and len(hit["excerpt"]) <= 800
        page = client.ok("memory_read", record_id=hit["event_id"], offset=hit["offset"], max_chars=len(hit["excerpt"]),
                         **scope)["source_page"]  # fmt: skip
        assert page["text"] == hit["excerpt"]


def test_an_acknowledgement_of_a_replaced_value_is_not_handed_back(db: Path | str, project: Path) -> None:
    """ "Noted, staging listens on port 8443." answered a statement whose memory a later one replaced: handed, it
    would say the old port as if it held."""
    first = _turn(db, project, "s1", "The staging server is staging.example.dev on port 8443.")
    run_hook("claude-code", _reply("s1", "Noted, staging listens on port 8443.", project), db, project)
    moved = _turn(db, project, "s2", "We moved staging to port 9443, the host stays staging.example.dev.")
    run_hook("claude-code", _reply("s2", "Noted, staging.example.dev:9443 from now on.", project), db, project)
    with connected(serving(db)) as client:
        _remember(client, first, "The staging server is staging.example.dev on port 8443", first["text"],
                  "project.staging")  # fmt: skip
        _remember(client, moved, "The staging server is staging.example.dev on port 9443", moved["text"],
                  "project.staging")  # fmt: skip
    handed = injected_records(
        run_hook("claude-code", _prompt("s3", "Which port does staging listen on?", project), db, project)
    )
    said = json.dumps(handed)
    assert "8443" not in said, handed
    assert [r.get("content") for r in handed if "memory_id" in r] == [
        "The staging server is staging.example.dev on port 9443"
    ]


def test_a_subject_keys_namespace_is_no_word_of_the_memory(db: Path | str, project: Path) -> None:
    """Every memory of a project has a key "project.<slot>": its "project" says whose, not what about, so
    "How do I add zod to the project?" gets none of them; "staging" of "project.staging" still counts."""
    facts = [
        ("The staging server is staging.example.dev on port 9443.", "It listens on port 9443", "project.staging"),
        ("Marco owns the payments module.", "Marco owns the payments module", "project.payments_owner"),
        ("We deploy with Docker Compose.", "Deploys use Docker Compose", "project.deploy"),
    ]
    turns = [_turn(db, project, "s1", text) for text, _, _ in facts]
    with connected(serving(db)) as client:
        for turn, (text, content, subject) in zip(turns, facts, strict=True):
            _remember(client, turn, content, text, subject)
    zod = injected_records(
        run_hook("claude-code", _prompt("s2", "How do I add zod to the project?", project), db, project)
    )
    assert zod == [], zod
    where = injected_records(run_hook("claude-code", _prompt("s3", "where does staging run?", project), db, project))
    assert [r.get("content") for r in where] == ["It listens on port 9443"], where  # by its slot's word alone


def test_a_subject_key_of_another_kind_counts_whole(db: Path | str, project: Path) -> None:
    """Only "user" and "project" before the first dot say whose: "deploy.day" is about deploying."""
    turn = _turn(db, project, "s1", "We ship on Fridays only.")
    with connected(serving(db)) as client:
        _remember(client, turn, "Fridays only", "We ship on Fridays only.", "deploy.day")
    when = injected_records(run_hook("claude-code", _prompt("s2", "when do we deploy?", project), db, project))
    assert [r.get("content") for r in when] == ["Fridays only"], when
