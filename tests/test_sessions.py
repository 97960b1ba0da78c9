"""session_checkpoint and session_resume through the MCP client: validation, selection, coverage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlikehuman.archive.db import open_database

STATE = {"goal": "Ship the quarterly report", "completed": ["draft"], "pending": ["review"], "next_step": "mail Bo"}


def record(client, event_id: str, text: str = "", session_id: str = "s1", **scope: str) -> dict:
    return client.ok(
        "memory_record", event_id=event_id, text=text or f"text of {event_id}", role="user", source="chat",
        session_id=session_id, **scope,
    )  # fmt: skip


def checkpoint(client, covered: str, session_id: str = "s1", state: dict | None = None, **scope: str) -> dict:
    return client.ok(
        "session_checkpoint", state=state or STATE, covered_event_id=covered, session_id=session_id, **scope
    )


def blocks(context: str) -> dict[str, list[dict]]:
    """The JSON records of each data block of a resume context."""
    found: dict[str, list[dict]] = {}
    current = None
    for line in context.splitlines():
        if line.startswith("«DATA "):
            current = line.rstrip("»").split(" ")[2]
            found[current] = []
        elif line.startswith("«END "):
            current = None
        elif current is not None:
            found[current].append(json.loads(line))
    return found


def invalidate(db_path: Path, reason: str = "memory_correct: a memory was corrected", **where: str) -> None:
    db = open_database(db_path)
    clause = " AND ".join(f"{key} = ?" for key in where) or "TRUE"
    with db.write() as conn:
        conn.execute(
            f"UPDATE checkpoints SET invalidated_at = '2026-11-30T10:00:00.000000Z', invalidated_reason = ?"
            f" WHERE {clause}",
            (reason, *where.values()),
        )
    db.close()


# -- session_checkpoint -----------------------------------------------------------------------


def test_a_checkpoint_stores_the_covered_sequence_and_defaults_the_state(client):
    record(client, "e1")
    sequence = record(client, "e2")["sequence"]
    out = checkpoint(client, "e2", state={"goal": "only a goal"})
    assert out["checkpoint_id"].startswith("ckpt_")
    assert (out["session_id"], out["covered_event_id"], out["covered_sequence"]) == ("s1", "e2", sequence)
    assert out["created_at"].endswith("Z")
    resumed = client.ok("session_resume", token_budget=100_000)
    state = blocks(resumed["context"])["checkpoint"][0]
    assert {k: state[k] for k in ("goal", "completed", "pending", "constraints", "next_step")} == {
        "goal": "only a goal", "completed": [], "pending": [], "constraints": [], "next_step": "",
    }  # fmt: skip


def test_repeated_checkpoints_are_new_snapshots(client):
    record(client, "e1")
    first = checkpoint(client, "e1")
    second = checkpoint(client, "e1")
    assert first["checkpoint_id"] != second["checkpoint_id"]
    assert client.ok("session_resume")["checkpoint_id"] == second["checkpoint_id"]


@pytest.mark.parametrize(
    ("state", "code"),
    [
        ({}, "invalid_argument"),
        ({"goal": ""}, "invalid_argument"),
        ({"goal": "g" * 4001}, "limit_exceeded"),
        ({"goal": "g", "pending": ["x"] * 101}, "limit_exceeded"),
        ({"goal": "g", "completed": ["ok", ""]}, "invalid_argument"),
        ({"goal": "g", "constraints": ["c" * 4001]}, "limit_exceeded"),
        ({"goal": "g", "next_step": "n" * 4001}, "limit_exceeded"),
        ({"goal": "g", "mood": "great"}, "invalid_argument"),
        ({"goal": "g", "pending": "not a list"}, "invalid_argument"),
        ({"goal": "g\ud800"}, "invalid_argument"),
    ],
)
def test_an_invalid_state_is_refused_and_nothing_is_stored(client, state, code):
    record(client, "e1")
    error = client.error("session_checkpoint", state=state, covered_event_id="e1", session_id="s1")
    assert error.startswith(code + ":"), error
    assert client.ok("session_resume")["checkpoint_id"] is None


def test_a_state_over_200000_characters_in_all_is_limit_exceeded(client):
    record(client, "e1")
    state = {"goal": "g", **{f: ["x" * 4000] * 20 for f in ("completed", "pending", "constraints")}}
    assert client.error("session_checkpoint", state=state, covered_event_id="e1", session_id="s1").startswith(
        "limit_exceeded:"
    )


def test_the_covered_event_must_exist_in_the_same_scope(client):
    record(client, "e1", project_id="other")
    assert client.error("session_checkpoint", state=STATE, covered_event_id="e1", session_id="s1").startswith(
        "not_found:"
    )
    assert client.error("session_checkpoint", state=STATE, covered_event_id="nope", session_id="s1").startswith(
        "not_found:"
    )


def test_the_session_must_be_the_covered_events_session(client):
    record(client, "e1", session_id="s1")
    error = client.error("session_checkpoint", state=STATE, covered_event_id="e1", session_id="s2")
    assert error.startswith("invalid_argument:") and "'s1'" in error
    assert client.error("session_checkpoint", state=STATE, covered_event_id="e1").startswith("invalid_argument:")


# -- checkpoint selection ---------------------------------------------------------------------


def test_resume_uses_the_latest_checkpoint_of_the_project(client):
    record(client, "a1", session_id="A")
    record(client, "b1", session_id="B")
    checkpoint(client, "a1", session_id="A")
    latest = checkpoint(client, "b1", session_id="B", state={"goal": "goal of B"})
    out = client.ok("session_resume")
    assert out["checkpoint_id"] == latest["checkpoint_id"]
    assert blocks(out["context"])["checkpoint"][0]["goal"] == "goal of B"


def test_resume_with_a_session_id_uses_that_sessions_latest_checkpoint(client):
    record(client, "a1", session_id="A")
    record(client, "b1", session_id="B")
    of_a = checkpoint(client, "a1", session_id="A", state={"goal": "goal of A"})
    checkpoint(client, "b1", session_id="B")
    out = client.ok("session_resume", session_id="A")
    assert out["checkpoint_id"] == of_a["checkpoint_id"]
    assert blocks(out["context"])["checkpoint"][0]["goal"] == "goal of A"
    assert client.ok("session_resume", session_id="C")["checkpoint_id"] is None


def test_resume_skips_invalidated_checkpoints_and_says_so(client, db_path):
    record(client, "e1")
    older = checkpoint(client, "e1", state={"goal": "older"})
    newer = checkpoint(client, "e1", state={"goal": "newer"})
    invalidate(db_path, checkpoint_id=newer["checkpoint_id"])
    out = client.ok("session_resume")
    assert out["checkpoint_id"] == older["checkpoint_id"]
    assert any("invalidated" in w and older["checkpoint_id"] in w for w in out["warnings"])
    assert "newer" not in out["context"]


def test_when_every_checkpoint_is_invalidated_no_task_state_is_included(client, db_path):
    record(client, "e1")
    checkpoint(client, "e1", state={"goal": "stale goal"})
    invalidate(db_path)
    out = client.ok("session_resume")
    assert out["checkpoint_id"] is None
    assert "stale goal" not in out["context"]
    assert any("no valid checkpoint remains" in w for w in out["warnings"])
    assert [c["included"] for c in out["components"] if c["name"] == "checkpoint"] == [False]


def test_checkpoints_and_events_of_other_scopes_never_appear(client):
    record(client, "mine", text="my own event")
    record(client, "theirs", text="their secret event", project_id="other")
    checkpoint(client, "theirs", project_id="other", state={"goal": "their goal"})
    out = client.ok("session_resume", token_budget=100_000)
    assert out["checkpoint_id"] is None
    assert "their" not in out["context"]
    assert [e["event_id"] for e in blocks(out["context"])["recent_events"]] == ["mine"]


# -- coverage ---------------------------------------------------------------------------------


def test_only_events_after_the_checkpoint_appear_in_recording_order(client):
    for n in range(1, 4):
        record(client, f"e{n}")
    checkpoint(client, "e2")
    record(client, "e4", session_id="other-session")
    out = client.ok("session_resume", token_budget=100_000)
    assert out["status"] == "ok"
    shown = blocks(out["context"])["recent_events"]
    assert [e["event_id"] for e in shown] == ["e3", "e4"]
    assert shown[1] | {"occurred_at": None} == {
        "event_id": "e4", "session_id": "other-session", "role": "user", "source": "chat", "occurred_at": None,
        "text": "text of e4",
    }  # fmt: skip


def test_without_a_checkpoint_every_event_is_uncovered(client):
    for n in range(1, 4):
        record(client, f"e{n}")
    out = client.ok("session_resume", token_budget=100_000)
    assert [e["event_id"] for e in blocks(out["context"])["recent_events"]] == ["e1", "e2", "e3"]
    assert [(c["name"], c["items"]) for c in out["components"]] == [
        ("framing", 1), ("core_persona", 0), ("checkpoint", 0), ("standing_facts", 0), ("recent_events", 3),
        ("relevant_memories", 0),
    ]  # fmt: skip


def test_a_long_event_is_excerpted_with_its_length(client):
    record(client, "long", text="word " * 1000)
    event = blocks(client.ok("session_resume", token_budget=100_000)["context"])["recent_events"][0]
    assert len(event["text"]) == 2000 and event["truncated"] is True and event["total_chars"] == 5000


def test_an_empty_archive_resumes_with_the_framing_only(client):
    out = client.ok("session_resume")
    assert (out["status"], out["omitted"], out["checkpoint_id"]) == ("ok", [], None)
    assert [c["name"] for c in out["components"] if c["included"]] == ["framing"]
    assert out["context"].startswith('MemLikeHuman memory for persona "default", project "default".')


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"token_budget": 0}, "token_budget"),
        ({"token_budget": 1_000_001}, "token_budget"),
        ({"token_budget": "4096"}, "token_budget"),
        ({"token_budget": 4096.5}, "token_budget"),
        ({"query": "q" * 4001}, "query"),
        ({"session_id": ""}, "session_id"),
        ({"target_model": ""}, "target_model"),
        ({"persona_id": "bad/persona"}, "persona_id"),
    ],
)
def test_invalid_resume_arguments_are_refused(client, arguments, field):
    error = client.error("session_resume", **arguments)
    assert error.split(":", 1)[0] in ("invalid_argument", "limit_exceeded") and field in error, error


def test_relevant_memories_bring_back_covered_events_matching_the_query(client):
    record(client, "old", text="The spare key for the blue bicycle hangs in the garage.")
    record(client, "filler", text="We talked about the weather.")
    checkpoint(client, "filler")
    record(client, "new", text="Let's plan the weekend trip.")
    out = client.ok("session_resume", query="bicycle key", token_budget=100_000)
    found = blocks(out["context"])
    assert [e["event_id"] for e in found["recent_events"]] == ["new"]
    relevant = found["relevant_memories"]
    assert relevant[0]["event_id"] == "old" and "blue bicycle" in relevant[0]["excerpt"]
    assert relevant[0]["role"] == "user" and relevant[0]["source"] == "chat"
    assert "new" not in [r.get("event_id") for r in relevant]


def test_a_forget_invalidates_the_checkpoints_and_resume_falls_back_to_the_raw_events(client):
    record(client, "e1", text="The door code is 4711.")
    record(client, "e2")
    checkpoint(client, "e2", state={"goal": "remember the door code 4711"})
    assert client.ok("memory_forget", record_id="e1")["invalidated_checkpoints"] == 1
    out = client.ok("session_resume", token_budget=100_000)
    assert out["checkpoint_id"] is None and "4711" not in out["context"]
    assert any("invalidated" in w for w in out["warnings"])
    assert [e["event_id"] for e in blocks(out["context"])["recent_events"]] == ["e2"]


def test_the_users_standing_rules_are_standing_facts_in_their_words_and_only_of_their_scope(client):
    record(client, "r1", "Always run ruff before committing.")
    record(client, "r2", "Please never push to main directly.", session_id="s2")
    record(client, "r3", "Never mind, skip that.")
    record(client, "r4", "The build uses Vite, and we always pin versions.")  # "always" not at the start
    record(client, "x1", "Always tag releases.", project_id="other")
    facts = blocks(client.ok("session_resume")["context"])["standing_facts"]
    assert [(f["event_id"], f["kind"], f["content"]) for f in facts] == [
        ("r2", "rule", "Please never push to main directly."),
        ("r1", "rule", "Always run ruff before committing."),
    ]
    assert facts[0]["from"] == {"role": "user", "source": "chat"} and facts[0]["since"] == facts[0]["since"][:10]


def test_the_users_rules_are_looked_for_among_the_scopes_newest_events(client, monkeypatch):
    from memlikehuman.sessions import context

    monkeypatch.setattr(context, "RULES_READ", 3)
    record(client, "r1", "Always run ruff before committing.")
    record(client, "r2", "Never push to main directly.")
    record(client, "x1", "The build uses Vite.")
    record(client, "x2", "Deploys go out on Tuesdays.")
    facts = blocks(client.ok("session_resume")["context"])["standing_facts"]
    assert [f["event_id"] for f in facts] == ["r2"]  # r1 is the fourth newest event
