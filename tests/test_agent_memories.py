"""memory_record's `memories`: what the agent itself says to remember, checked like an extractor's answer."""

from __future__ import annotations

import stat
from pathlib import Path

from conftest import connected, serving

PNPM = "I prefer pnpm over npm for this repo"
PNPM_MEMORY = {
    "content": "The user prefers pnpm over npm for this repo",
    "quote": "I prefer pnpm over npm",
    "kind": "preference",
    "subject": "user.package_manager",
}


def test_given_memories_are_stored_at_once_labelled_agent_and_recalled_with_their_quote(client):
    out = client.ok("memory_record", event_id="a-1", text=PNPM, role="user", source="user", memories=[PNPM_MEMORY])
    assert out["extraction_state"] == "complete" and out["error"] is None
    assert len(out["memory_ids"]) == 1 and out["warnings"] == []
    hits = client.ok("memory_recall", query="pnpm")["memories"]
    assert [h["memory_id"] for h in hits] == out["memory_ids"]
    assert hits[0]["extractor"] == "agent" and hits[0]["kind"] == "preference"
    assert hits[0]["source"]["quote"] == "I prefer pnpm over npm" and hits[0]["source"]["event_id"] == "a-1"
    read = client.ok("memory_read", record_id=out["memory_ids"][0])
    assert read["memory"]["extractor"] == "agent" and read["event"]["extraction_state"] == "complete"


def test_an_item_whose_quote_is_not_in_the_text_is_rejected_by_position_and_stored_nowhere(client):
    invented = {"content": "The user hates yarn", "quote": "I hate yarn"}
    out = client.ok(
        "memory_record", event_id="a-2", text=PNPM, role="user", source="user", memories=[invented, PNPM_MEMORY]
    )
    assert out["extraction_state"] == "complete" and len(out["memory_ids"]) == 1
    assert len(out["warnings"]) == 1 and out["warnings"][0].startswith("memories[0] rejected: its quote")
    assert client.ok("memory_recall", query="yarn")["memories"] == []
    assert client.ok("memory_read", record_id="a-2")["event"]["memory_ids"] == out["memory_ids"]


def test_a_retry_with_the_same_event_id_stores_nothing_twice_and_never_brings_back_a_corrected_memory(client):
    call = {"event_id": "a-3", "text": PNPM, "role": "user", "source": "user", "memories": [PNPM_MEMORY]}
    first = client.ok("memory_record", **call)
    again = client.ok("memory_record", **call)
    assert again["duplicate"] is True and again["memory_ids"] == first["memory_ids"] and again["warnings"] == []
    fixed = client.ok(
        "memory_correct", memory_id=first["memory_ids"][0], content="The user prefers bun", reason="user said so"
    )
    after = client.ok("memory_record", **call)
    assert after["memory_ids"] == first["memory_ids"]  # the revoked one stays revoked; nothing new
    contents = [m["content"] for m in client.ok("memory_recall", query="prefers")["memories"]]
    assert contents == ["The user prefers bun"] and fixed["revoked_ids"] == first["memory_ids"]


def test_a_retry_with_other_memories_is_a_conflict_and_stores_nothing(client):
    call = {"event_id": "a-7", "text": PNPM + " and I like tea", "role": "user", "source": "user"}
    first = client.ok("memory_record", **call, memories=[PNPM_MEMORY])
    tea = {"content": "The user likes tea", "quote": "I like tea"}
    message = client.error("memory_record", **call, memories=[tea])
    assert message.startswith("conflict: ") and "other memories" in message
    read = client.ok("memory_read", record_id="a-7")
    assert read["event"]["memory_ids"] == first["memory_ids"]  # "nothing new is stored"
    recalled = client.ok("memory_recall", query="tea")["memories"]
    assert [m["content"] for m in recalled if "tea" in m["content"]] == []
    same = client.ok("memory_record", **call, memories=[PNPM_MEMORY])
    assert same["duplicate"] is True and same["memory_ids"] == first["memory_ids"]


def test_a_later_memory_with_the_same_subject_supersedes_the_earlier_one(client):
    client.ok("memory_record", event_id="a-4", text=PNPM, role="user", source="user", memories=[PNPM_MEMORY])
    moved = {**PNPM_MEMORY, "content": "The user now prefers bun for this repo", "quote": "switch to bun"}
    client.ok(
        "memory_record", event_id="a-5", text="Let's switch to bun from now on.", role="user", source="user",
        memories=[moved],
    )  # fmt: skip
    recalled = client.ok("memory_recall", query="prefers", include_history=True)["memories"]
    status = {m["content"]: m["status"] for m in recalled}
    assert status == {"The user now prefers bun for this repo": "current", PNPM_MEMORY["content"]: "superseded"}


def test_an_empty_list_completes_the_event_without_memories(client):
    out = client.ok("memory_record", event_id="a-6", text="ok thanks", role="user", source="user", memories=[])
    assert out["extraction_state"] == "complete" and out["memory_ids"] == []


def test_more_than_30_items_or_an_unknown_field_is_refused_and_stores_not_even_the_event(client):
    many = [PNPM_MEMORY] * 31
    text = client.error("memory_record", event_id="a-7", text=PNPM, role="user", source="user", memories=many)
    assert text.startswith("limit_exceeded: memories holds 31 items; at most 30")
    odd = [{**PNPM_MEMORY, "confidence": 0.9}]
    text = client.error("memory_record", event_id="a-7", text=PNPM, role="user", source="user", memories=odd)
    assert text.startswith("invalid_argument:") and "confidence" in text
    assert client.error("memory_read", record_id="a-7").startswith("not_found:")


def test_with_memories_given_the_configured_extractor_is_not_asked(tmp_path: Path):
    asked = tmp_path / "asked"
    script = tmp_path / "extract-cli"
    script.write_text(f"#!/bin/sh\ntouch {asked}\necho '{{\"memories\": []}}'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    params = serving(
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


# -- retries, event memories, offsets, status, category ------------------------------------------------


def test_an_identical_retry_is_a_duplicate_after_the_memory_it_repeated_was_superseded(client):
    client.ok("memory_record", event_id="r-1", text=PNPM, role="user", source="user", memories=[PNPM_MEMORY])
    call = {"event_id": "r-2", "text": PNPM + " again", "role": "user", "source": "user", "memories": [PNPM_MEMORY]}
    first = client.ok("memory_record", **call)
    assert first["memory_ids"] == []  # it repeats r-1's current memory
    moved = {**PNPM_MEMORY, "content": "The user now prefers bun", "quote": "switch to bun"}
    client.ok("memory_record", event_id="r-3", text="switch to bun", role="user", source="user", memories=[moved])
    again = client.ok("memory_record", **call)
    assert again["duplicate"] is True and again["memory_ids"] == []


def test_a_retry_with_the_same_content_but_other_fields_is_a_conflict(client):
    call = {"event_id": "r-4", "text": PNPM, "role": "user", "source": "user"}
    first = client.ok("memory_record", **call, memories=[PNPM_MEMORY])
    changed = {**PNPM_MEMORY, "quote": "pnpm over npm for this repo", "kind": "fact", "valid_from": "2025-03-01"}
    assert client.error("memory_record", **call, memories=[changed]).startswith("conflict: ")
    read = client.ok("memory_read", record_id=first["memory_ids"][0])
    assert read["memory"]["source"]["quote"] == "I prefer pnpm over npm" and read["memory"]["kind"] == "preference"


def test_an_event_recorded_without_memories_takes_the_agents_once_then_retries_are_duplicates(client):
    # A host's hook records every prompt without memories; the agent attaches them to that same event.
    call = {"event_id": "r-5", "text": PNPM, "role": "user", "source": "user"}
    assert client.ok("memory_record", **call)["extraction_state"] == "pending"
    given = client.ok("memory_record", **call, memories=[PNPM_MEMORY])
    assert given["duplicate"] is True and given["extraction_state"] == "complete" and len(given["memory_ids"]) == 1
    memory = client.ok("memory_read", record_id=given["memory_ids"][0])["memory"]
    assert memory["extractor"] == "agent" and memory["source"]["event_id"] == "r-5"
    again = client.ok("memory_record", **call, memories=[PNPM_MEMORY])
    assert again["duplicate"] is True and again["memory_ids"] == given["memory_ids"]
    other = {**PNPM_MEMORY, "content": "The user likes npm", "quote": "pnpm over npm"}
    assert client.error("memory_record", **call, memories=[other]).startswith("conflict: ")
    assert client.error("memory_record", **{**call, "source": "other"}, memories=[PNPM_MEMORY]).startswith("conflict: ")


def test_an_event_whose_given_memories_were_all_repeats_says_so_and_a_retry_is_a_duplicate(client):
    client.ok("memory_record", event_id="r-6", text=PNPM, role="user", source="user", memories=[PNPM_MEMORY])
    call = {"event_id": "r-7", "text": PNPM + " still", "role": "user", "source": "user"}
    client.ok("memory_record", **call)
    first = client.ok("memory_record", **call, memories=[PNPM_MEMORY])
    assert first["memory_ids"] == [] and first["extraction_state"] == "complete" and first["error"] is None
    assert any("none was kept" in warning for warning in first["warnings"])
    assert client.ok("memory_record", **call, memories=[PNPM_MEMORY])["memory_ids"] == []
    other = {**PNPM_MEMORY, "content": "The user likes npm", "quote": "pnpm over npm"}
    assert client.error("memory_record", **call, memories=[other]).startswith("conflict: ")


def test_event_memories_with_one_subject_never_close_each_other(client):
    for number, city, day in ((1, "Rome", "May 3"), (2, "Oslo", "June 9")):
        text = f"I flew to {city} on {day}."
        item = {"content": f"The user flew to {city} on {day}", "quote": text, "kind": "event", "subject": "user.trip"}
        client.ok("memory_record", event_id=f"t-{number}", text=text, role="user", source="user", memories=[item])
    for city in ("Rome", "Oslo"):
        [hit] = client.ok("memory_recall", query=city, detail="detailed")["memories"]
        assert city in hit["content"] and hit["status"] == "current" and hit["valid_to"] is None


def test_a_valid_from_with_a_time_and_no_offset_is_refused_and_nothing_is_stored(client):
    local = {**PNPM_MEMORY, "valid_from": "2025-03-01T09:00:00"}
    text = client.error("memory_record", event_id="o-1", text=PNPM, role="user", source="user", memories=[local])
    assert text.startswith("invalid_argument: memories[0].valid_from") and "offset" in text
    assert client.error("memory_read", record_id="o-1").startswith("not_found:")
    day = {**PNPM_MEMORY, "valid_from": "2025-03-01"}
    out = client.ok("memory_record", event_id="o-2", text=PNPM, role="user", source="user", memories=[day])
    read = client.ok("memory_read", record_id=out["memory_ids"][0])
    assert read["memory"]["valid_from"] == "2025-03-01T00:00:00.000000Z"


def test_memory_read_calls_a_version_whose_successor_starts_later_current(client):
    npm = {**PNPM_MEMORY, "content": "The user uses npm", "quote": "I use npm", "valid_from": "2025-01-01"}
    first = client.ok("memory_record", event_id="s-1", text="I use npm", role="user", source="user", memories=[npm])
    later = {**npm, "content": "The user will use pnpm", "quote": "pnpm from 2030 on", "valid_from": "2030-01-01"}
    text = "We move to pnpm from 2030 on."
    client.ok("memory_record", event_id="s-2", text=text, role="user", source="user", memories=[later])
    read = client.ok("memory_read", record_id=first["memory_ids"][0])["memory"]
    assert read["status"] == "current" and read["valid_to"] == "2030-01-01T00:00:00.000000Z"


def test_session_resume_says_a_memory_from_a_document_is_a_reference(client):
    text = "The manual says the pump runs at 40 bar."
    item = {"content": "The pump runs at 40 bar", "quote": "the pump runs at 40 bar"}
    client.ok(
        "memory_record", event_id="d-1", text=text, role="user", source="manual.pdf", category="reference",
        memories=[item],
    )  # fmt: skip
    context = client.ok("session_resume", query="pump")["context"]
    [line] = [line for line in context.splitlines() if "40 bar" in line and "memory_id" in line]
    assert '"category": "reference"' in line or '"category":"reference"' in line


def test_an_identical_retry_of_a_call_repeating_one_content_in_two_items_is_a_duplicate(client):
    twice = [PNPM_MEMORY, {**PNPM_MEMORY, "content": PNPM_MEMORY["content"].upper(), "kind": "fact"}]
    call = {"event_id": "r-6", "text": PNPM, "role": "user", "source": "user", "memories": twice}
    first = client.ok("memory_record", **call)
    again = client.ok("memory_record", **call)
    assert len(first["memory_ids"]) == 1 and again["duplicate"] is True and again["memory_ids"] == first["memory_ids"]


def test_a_quote_of_one_character_is_rejected_unless_it_is_the_whole_text(client):
    tiny = {"content": "The user prefers pnpm", "quote": "I"}
    out = client.ok("memory_record", event_id="a-q1", text=PNPM, role="user", source="user", memories=[tiny])
    assert out["memory_ids"] == [] and out["warnings"][0].startswith("memories[0] rejected: quote too short: ")
    whole = {"content": "The user agreed", "quote": "Y"}
    out = client.ok("memory_record", event_id="a-q2", text="Y", role="user", source="user", memories=[whole])
    assert len(out["memory_ids"]) == 1 and out["warnings"] == []
    hindi = {"content": "The user said yes", "quote": "मैंने हाँ कहा"}  # three words, their vowel signs inside them
    said = client.ok(
        "memory_record", event_id="a-q3", text="मैंने हाँ कहा, फिर हम चले गए", role="user", source="user", memories=[hindi]
    )
    assert len(said["memory_ids"]) == 1 and said["warnings"] == []


def test_a_two_character_quote_does_not_make_a_memory(client):
    fake = {"content": "The user's bank password is hunter2", "quote": "om"}  # "om" of "tomorrow"
    out = client.ok(
        "memory_record", event_id="a-q4", text="I will call you tomorrow.", role="user", source="user", memories=[fake]
    )
    assert out["memory_ids"] == [] and out["warnings"][0].startswith("memories[0] rejected: quote too short: ")
    assert client.ok("memory_recall", query="bank password hunter2")["memories"] == []


def test_a_short_text_is_quoted_whole_and_a_quote_of_three_words_or_twelve_characters_is_long_enough(client):
    pnpm = {"content": "The user uses pnpm", "quote": "I use pnpm", "kind": "preference"}
    whole = client.ok("memory_record", event_id="a-q5", text="I use pnpm", role="user", source="user",
                            memories=[pnpm])  # fmt: skip
    assert len(whole["memory_ids"]) == 1 and whole["warnings"] == []
    text = "Yes. I use pnpm, always. My locale is nl_NL.UTF-8 here."
    items = [
        {"content": "The user uses pnpm", "quote": "pnpm"},  # one word of a longer text
        {"content": "The user always uses pnpm", "quote": "I use pnpm"},  # three words
        {"content": "The user's locale is Dutch", "quote": "nl_NL.UTF-8 "},  # one word of 11 characters
        {"content": "The user's locale is nl_NL.UTF-8", "quote": "is nl_NL.UTF-8"},  # 14 characters
    ]
    out = client.ok("memory_record", event_id="a-q6", text=text, role="user", source="user", memories=items)
    assert len(out["memory_ids"]) == 2
    assert [w.split(":")[0] for w in out["warnings"]] == ["memories[0] rejected", "memories[2] rejected"]


def test_a_memory_stated_again_survives_the_forgotten_first_call_and_its_retry_is_a_duplicate(client):
    client.ok("memory_record", event_id="a-r1", text=PNPM, role="user", source="user", memories=[PNPM_MEMORY])
    again = {**PNPM_MEMORY, "quote": "I   prefer pnpm over npm"}  # another event, the same memory
    call = {"event_id": "a-r2", "text": "Again: I   prefer pnpm over npm for this repo.", "role": "user"}
    second = client.ok("memory_record", **call, source="user", memories=[again])
    assert second["memory_ids"] == [] and second["extraction_state"] == "complete"
    client.ok("memory_forget", record_id="a-r1")
    hits = client.ok("memory_recall", query="pnpm")["memories"]
    assert [(h["source"]["event_id"], h["source"]["quote"], h["extractor"]) for h in hits] == [
        ("a-r2", "I   prefer pnpm over npm", "agent")
    ]
    retry = client.ok("memory_record", **call, source="user", memories=[again])
    assert retry["duplicate"] is True and retry["memory_ids"] == [hits[0]["memory_id"]]


def test_a_retry_after_the_revival_is_a_duplicate_when_the_first_call_named_another_subject(client):
    named = {**PNPM_MEMORY, "subject": "user.package_manager"}
    client.ok("memory_record", event_id="a-s1", text=PNPM, role="user", source="user", memories=[named])
    plain = {k: v for k, v in PNPM_MEMORY.items() if k != "subject"}
    call = {"event_id": "a-s2", "text": "Again: " + PNPM, "role": "user", "source": "user", "memories": [plain]}
    assert client.ok("memory_record", **call)["memory_ids"] == []
    client.ok("memory_forget", record_id="a-s1")
    retry = client.ok("memory_record", **call)
    assert retry["duplicate"] is True and len(retry["memory_ids"]) == 1
