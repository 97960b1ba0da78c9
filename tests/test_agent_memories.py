"""memory_record's `memories`: what the agent itself says to remember, checked like an extractor's answer (issue 29)."""

from __future__ import annotations

import stat
from pathlib import Path

from conftest import connected, stdio_params

PNPM = "I prefer pnpm over npm for this repo"
PNPM_MEMORY = {
    "content": "The user prefers pnpm over npm for this repo",
    "quote": "I prefer pnpm over npm",
    "kind": "preference",
    "subject": "user.package_manager",
}


def test_given_memories_are_stored_at_once_labelled_agent_and_recalled_with_their_quote(stdio_client):
    out = stdio_client.ok(
        "memory_record", event_id="a-1", text=PNPM, role="user", source="user", memories=[PNPM_MEMORY]
    )
    assert out["extraction_state"] == "complete" and out["error"] is None
    assert len(out["memory_ids"]) == 1 and out["warnings"] == []
    hits = stdio_client.ok("memory_recall", query="pnpm")["memories"]
    assert [h["memory_id"] for h in hits] == out["memory_ids"]
    assert hits[0]["extractor"] == "agent" and hits[0]["kind"] == "preference"
    assert hits[0]["source"]["quote"] == "I prefer pnpm over npm" and hits[0]["source"]["event_id"] == "a-1"
    read = stdio_client.ok("memory_read", record_id=out["memory_ids"][0])
    assert read["memory"]["extractor"] == "agent" and read["event"]["extraction_state"] == "complete"


def test_an_item_whose_quote_is_not_in_the_text_is_rejected_by_position_and_stored_nowhere(stdio_client):
    invented = {"content": "The user hates yarn", "quote": "I hate yarn"}
    out = stdio_client.ok(
        "memory_record", event_id="a-2", text=PNPM, role="user", source="user", memories=[invented, PNPM_MEMORY]
    )
    assert out["extraction_state"] == "complete" and len(out["memory_ids"]) == 1
    assert len(out["warnings"]) == 1 and out["warnings"][0].startswith("memories[0] rejected: its quote")
    assert stdio_client.ok("memory_recall", query="yarn")["memories"] == []
    assert stdio_client.ok("memory_read", record_id="a-2")["event"]["memory_ids"] == out["memory_ids"]


def test_a_retry_with_the_same_event_id_stores_nothing_twice_and_never_brings_back_a_corrected_memory(stdio_client):
    call = {"event_id": "a-3", "text": PNPM, "role": "user", "source": "user", "memories": [PNPM_MEMORY]}
    first = stdio_client.ok("memory_record", **call)
    again = stdio_client.ok("memory_record", **call)
    assert again["duplicate"] is True and again["memory_ids"] == first["memory_ids"] and again["warnings"] == []
    fixed = stdio_client.ok(
        "memory_correct", memory_id=first["memory_ids"][0], content="The user prefers bun", reason="user said so"
    )
    after = stdio_client.ok("memory_record", **call)
    assert after["memory_ids"] == first["memory_ids"]  # the revoked one stays revoked; nothing new
    contents = [m["content"] for m in stdio_client.ok("memory_recall", query="prefers")["memories"]]
    assert contents == ["The user prefers bun"] and fixed["revoked_ids"] == first["memory_ids"]


def test_a_retry_with_other_memories_is_a_conflict_and_stores_nothing(stdio_client):
    call = {"event_id": "a-7", "text": PNPM + " and I like tea", "role": "user", "source": "user"}
    first = stdio_client.ok("memory_record", **call, memories=[PNPM_MEMORY])
    tea = {"content": "The user likes tea", "quote": "I like tea"}
    message = stdio_client.error("memory_record", **call, memories=[tea])
    assert message.startswith("conflict: ") and "other memories" in message
    read = stdio_client.ok("memory_read", record_id="a-7")
    assert read["event"]["memory_ids"] == first["memory_ids"]  # "nothing new is stored"
    assert stdio_client.ok("memory_recall", query="tea")["memories"] == []
    same = stdio_client.ok("memory_record", **call, memories=[PNPM_MEMORY])
    assert same["duplicate"] is True and same["memory_ids"] == first["memory_ids"]


def test_a_later_memory_with_the_same_subject_supersedes_the_earlier_one(stdio_client):
    stdio_client.ok("memory_record", event_id="a-4", text=PNPM, role="user", source="user", memories=[PNPM_MEMORY])
    moved = {**PNPM_MEMORY, "content": "The user now prefers bun for this repo", "quote": "switch to bun"}
    stdio_client.ok(
        "memory_record", event_id="a-5", text="Let's switch to bun from now on.", role="user", source="user",
        memories=[moved],
    )  # fmt: skip
    recalled = stdio_client.ok("memory_recall", query="prefers", include_history=True)["memories"]
    status = {m["content"]: m["status"] for m in recalled}
    assert status == {"The user now prefers bun for this repo": "current", PNPM_MEMORY["content"]: "superseded"}


def test_an_empty_list_completes_the_event_without_memories(stdio_client):
    out = stdio_client.ok("memory_record", event_id="a-6", text="ok thanks", role="user", source="user", memories=[])
    assert out["extraction_state"] == "complete" and out["memory_ids"] == []


def test_more_than_30_items_or_an_unknown_field_is_refused_and_stores_not_even_the_event(stdio_client):
    many = [PNPM_MEMORY] * 31
    text = stdio_client.error("memory_record", event_id="a-7", text=PNPM, role="user", source="user", memories=many)
    assert text.startswith("limit_exceeded: memories holds 31 items; at most 30")
    odd = [{**PNPM_MEMORY, "confidence": 0.9}]
    text = stdio_client.error("memory_record", event_id="a-7", text=PNPM, role="user", source="user", memories=odd)
    assert text.startswith("invalid_argument:") and "confidence" in text
    assert stdio_client.error("memory_read", record_id="a-7").startswith("not_found:")


def test_with_memories_given_the_configured_extractor_is_not_asked(tmp_path: Path):
    asked = tmp_path / "asked"
    script = tmp_path / "extract-cli"
    script.write_text(f"#!/bin/sh\ntouch {asked}\necho '{{\"memories\": []}}'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    params = stdio_params(
        tmp_path / "a.sqlite3",
        MEMLIKEHUMAN_EXTRACTOR="command",
        MEMLIKEHUMAN_EXTRACTOR_COMMAND=str(script),
        MEMLIKEHUMAN_EXTRACTION_WAIT="5",
    )
    with connected(params) as client:
        given = client.ok("memory_record", event_id="g", text=PNPM, role="user", source="user", memories=[PNPM_MEMORY])
        assert given["extraction_state"] == "complete" and not asked.exists()
        plain = client.ok("memory_record", event_id="p", text="ruff before commits", role="user", source="user")
        assert plain["extraction_state"] == "complete" and asked.exists()  # the same server asks it otherwise
