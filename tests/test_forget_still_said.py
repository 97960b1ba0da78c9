"""What still says a forgotten text: named in memory_forget's result and the UI's preview, taken when asked."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from test_forget import file_hits
from test_ui_changes import result_fields
from ui_support import UI, running_ui

from memlikehuman.archive.db import is_url, open_database

NOTE = "Note: staging is staging.example.internal:8443"
HOST_MEMORY = {"content": "The staging server is staging.example.internal:8443", "quote": "deploy there tomorrow"}


def say(client: Any, event_id: str, text: str, role: str = "user", **extra: Any) -> dict[str, Any]:
    return dict(client.ok("memory_record", event_id=event_id, text=text, role=role, source="chat", **extra))


def note_and_what_repeats_it(client: Any) -> str:
    """The note, the assistant's reply restating it, the agent's memory of it on a later turn, and an
    unrelated turn; the agent's memory's ID."""
    say(client, "n1", NOTE)
    say(client, "r1", "Noted: staging is staging.example.internal:8443", "assistant")
    given = say(client, "r2", "I will deploy there tomorrow.", "assistant", memories=[HOST_MEMORY])
    say(client, "o1", "Lunch is at noon in the staging area of the canteen, as every day.")
    for n in range(6):  # "staging" alone is common: it names nothing
        say(client, f"s{n}", f"The staging build {n} passed.")
    return str(given["memory_ids"][0])


def test_a_forgotten_note_names_the_reply_that_restated_it_and_the_agents_memory_of_its_host(client, db_path):
    agents = note_and_what_repeats_it(client)
    out = client.ok("memory_forget", record_id="n1")
    assert out["deleted_event_ids"] == ["n1"] and out["deleted_memory_ids"] == []
    assert out["still_said_by"] == ["r1", agents]
    assert client.ok("memory_read", record_id=agents)["memory"]["content"] == HOST_MEMORY["content"]
    assert "8443" in client.ok("memory_read", record_id="r1")["source_page"]["text"]


def test_asked_with_also_the_forget_takes_what_still_says_it_and_leaves_the_turn_the_memory_was_given_on(
    client, db_path
):
    agents = note_and_what_repeats_it(client)
    out = client.ok("memory_forget", record_id="n1", also=True)
    assert out["deleted_event_ids"] == ["n1", "r1"] and out["deleted_memory_ids"] == [agents]
    assert out["still_said_by"] == []
    assert client.ok("memory_read", record_id="r2")["source_page"]["text"] == "I will deploy there tomorrow."
    assert client.ok("memory_recall", query="8443")["memories"] == []
    db = open_database(db_path)
    try:
        assert db.scalar("SELECT count(*) FROM events WHERE text LIKE '%8443%'") == 0
    finally:
        db.close()
    if not is_url(db_path):
        assert sum(file_hits(db_path, "internal:8443").values()) == 0


def test_a_second_call_forgets_what_the_first_named(client):
    agents = note_and_what_repeats_it(client)
    named = client.ok("memory_forget", record_id="n1")["still_said_by"]
    taken = [client.ok("memory_forget", record_id=record_id) for record_id in named]
    assert [t["deleted_event_ids"] for t in taken] == [["r1"], ["r2"]] and taken[1]["deleted_memory_ids"] == [agents]


@pytest.fixture
def ui(db_path: Path | str, client: Any) -> Iterator[UI]:
    note_and_what_repeats_it(client)
    with running_ui(db_path) as running:
        running.login()
        yield running


def test_the_forget_preview_lists_what_still_says_it_and_its_second_button_forgets_that_too(ui: UI) -> None:
    preview = ui.get("/forget", persona="default", project="default", id="n1").text
    assert 'id="still-said-events"' in preview and ">r1<" in preview and "still-said-memories" in preview
    hidden = {k: unescape(v) for k, v in re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', preview)}
    reply = ui.post("/forget", {**{k: v for k, v in hidden.items() if k != "csrf"}, "also": "1"})
    assert reply.status == 200, reply.text
    out = result_fields(reply.text)
    assert out["deleted_event_ids"] == "n1, r1" and out["deleted_memory_ids"].startswith("mem_")
    assert out["still_said_by"] == "none"


def sister_and_turns_that_share_a_word(client: Any) -> None:
    say(client, "a1", "My sister Anna moved to Berlin in March")
    say(client, "a2", "We moved the standup to Thursday")
    say(client, "a3", "I'm starting piano lessons in March")
    say(client, "a4", "Noted.", "assistant")
    say(client, "a5", "Noted: Anna lives in Berlin now", "assistant")


def test_also_keeps_the_standup_and_piano_turns(client):
    sister_and_turns_that_share_a_word(client)
    out = client.ok("memory_forget", record_id="a1", also=True)
    assert out["deleted_event_ids"] == ["a1", "a5"]  # the reply restates it: Anna, Berlin
    for kept in ("a2", "a3", "a4"):
        assert client.ok("memory_read", record_id=kept)["source_page"]["text"]


def test_a_forgotten_reply_names_the_note_it_restated_and_not_the_replies_that_only_say_noted(client):
    sister_and_turns_that_share_a_word(client)
    say(client, "a6", "Noted, I'll remember that.", "assistant")
    assert client.ok("memory_forget", record_id="a5")["still_said_by"] == ["a1"]
