"""Changes made in the UI: correct, forget after a preview, edit the core persona; the core ops' results."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest
from cli_support import Populated, populate
from conftest import add_memory, make_settings
from ui_support import UI, open_transactions, running_ui, snapshot

from memlikehuman.archive import memories, personas
from memlikehuman.archive.db import is_url, open_database
from memlikehuman.engine import Engine
from memlikehuman.lifecycle import correct, forget
from memlikehuman.records import PersonaVersion, Scope

ALICE = Scope("alice", "garden")


@pytest.fixture
def archive(db_path: Path) -> Populated:
    return populate(db_path)


@pytest.fixture
def ui(db_path: Path, archive: Populated) -> Iterator[UI]:
    with running_ui(db_path) as running:
        running.login()
        yield running


def result_fields(page: str) -> dict[str, str]:
    """The result's <dt>/<dd> pairs as visible text."""
    pairs = re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", page.split('id="result"')[1])
    return {k: " ".join(unescape(re.sub(r"<[^>]+>", " ", v)).split()) for k, v in pairs}


def test_correcting_a_memory_returns_the_tool_fields_and_the_memory_page_shows_the_new_version(
    ui: UI, archive: Populated, db_path: Path
) -> None:
    fields = {"persona": "alice", "project": "garden", "memory_id": archive.replacement_id}
    reply = ui.post("/correct", {**fields, "content": "Alice lives in Braga", "reason": "she moved again"})
    assert reply.status == 200, reply.text
    out = result_fields(reply.text)
    assert out["revoked_ids"] == archive.replacement_id and out["invalidated_checkpoints"] == "1"
    db = open_database(db_path)
    try:
        new = memories.find(db, ALICE, out["replacement_id"])
        old = memories.find(db, ALICE, archive.replacement_id)
    finally:
        db.close()
    assert new.content == "Alice lives in Braga" and new.event_id == out["correction_event_id"]
    assert old.revoked_at and old.replaced_by == new.memory_id and old.revoke_reason == "she moved again"
    page = ui.get("/memory", persona="alice", project="garden", id=new.memory_id).text
    assert "Versions of this fact (4)" in page and f"revoked → {new.memory_id}" in page


def test_correcting_an_already_corrected_memory_is_refused_and_changes_nothing(
    ui: UI, archive: Populated, db_path: Path
) -> None:
    before = snapshot(db_path)
    reply = ui.post(
        "/correct",
        {"persona": "alice", "project": "garden", "memory_id": archive.revoked_id, "content": "x", "reason": "y"},
    )
    assert reply.status == 409 and "conflict: memory" in reply.text and "Nothing was changed." in reply.text
    assert snapshot(db_path) == before


def test_the_forget_preview_lists_exactly_what_forget_deletes_and_the_checkpoints_it_invalidates(
    ui: UI, archive: Populated, db_path: Path
) -> None:
    before = snapshot(db_path)
    page = ui.get("/forget", persona="alice", project="garden", id=archive.replacement_id).text
    assert snapshot(db_path) == before  # a preview is a read
    db = open_database(db_path)
    try:
        expected = forget.preview(db, ALICE, archive.replacement_id)
    finally:
        db.close()
    events_table = page.split('id="forget-events"')[1].split("</table>")[0]
    memories_table = page.split('id="forget-memories"')[1].split("</table>")[0]
    assert re.findall(r"id=([\w-]+)\">", events_table) == list(expected.event_ids)
    assert sorted(re.findall(r"id=(mem_\w+)", memories_table)) == sorted(expected.memory_ids)
    # The replacement's source event is the correction event: forgetting the replacement forgets it.
    assert len(expected.event_ids) == 1 and expected.event_ids[0].startswith("corr_")
    assert f"Checkpoints invalidated ({len(expected.checkpoint_ids)})" in page


def test_forgetting_after_the_preview_deletes_it_and_search_no_longer_finds_it(
    ui: UI, archive: Populated, db_path: Path
) -> None:
    where = {"persona": "alice", "project": "garden", "q": "Lisbon", "history": "1"}
    assert "Alice lives in Lisbon" in ui.get("/search", **where).text
    preview = ui.get("/forget", persona="alice", project="garden", id="home1").text
    hidden = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', preview))
    reply = ui.post(
        "/forget",
        {k: unescape(v) for k, v in hidden.items() if k != "csrf"},
    )
    assert reply.status == 200, reply.text
    out = result_fields(reply.text)
    assert out["deleted_event_ids"] == "home1" and out["invalidated_checkpoints"] == "1"
    assert out["deleted_memory_ids"].startswith("mem_") and out["warnings"] == "none"
    assert ui.get("/event", persona="alice", project="garden", id="home1").status == 404
    found = ui.get("/search", **where).text
    assert "I live in Lisbon" not in found and "Alice lives in Lisbon" not in found


def test_forget_deletes_nothing_when_more_would_go_than_its_preview_showed(
    ui: UI, archive: Populated, db_path: Path
) -> None:
    preview = ui.get("/forget", persona="alice", project="garden", id="home1").text
    hidden = {k: unescape(v) for k, v in re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', preview)}
    db = open_database(db_path)
    try:
        original = db.scalar("SELECT memory_id FROM memories WHERE content = 'Alice lives in Lisbon'")
        correct.correct(db, ALICE, str(original), "Alice lived in Lisbon until June", "more exact")
    finally:
        db.close()
    before = snapshot(db_path)
    reply = ui.post("/forget", {k: v for k, v in hidden.items() if k != "csrf"})
    assert reply.status == 409 and "changed since its preview" in reply.text
    assert snapshot(db_path) == before


def test_the_ui_holds_no_transaction_between_pages_so_a_forget_elsewhere_clears_the_wal(
    ui: UI, archive: Populated, db_path: Path
) -> None:
    # PostgreSQL has no WAL of the archive's to clear: there no session of the UI sits in a transaction.
    for path in ("/", "/scope?persona=alice&project=garden", "/search?persona=alice&project=garden&q=Porto"):
        assert ui.request("GET", path).status == 200
    if is_url(db_path):
        assert open_transactions(db_path) == 0
    with Engine(make_settings(db_path)) as engine:
        result = engine.forget(ALICE, "home1")
    assert result.scrubbed  # the UI's connection kept no read snapshot open


def test_editing_the_core_persona_stores_a_new_version_like_the_cli(ui: UI, db_path: Path) -> None:
    reply = ui.post("/persona", {"persona": "alice", "text": "  You are Alice's calm gardening helper.\n"})
    assert reply.status == 200 and "version 3" in " ".join(unescape(re.sub(r"<[^>]+>", " ", reply.text)).split())
    again = ui.post("/persona", {"persona": "alice", "text": "You are Alice's calm gardening helper."})
    assert "unchanged" in again.text
    versions = persona_versions(db_path, "alice")
    assert [v.version for v in versions] == [3, 2, 1] and versions[0].text == "You are Alice's calm gardening helper."
    assert "calm gardening helper" in ui.get("/persona", persona="alice").text


def test_a_multi_line_persona_saved_unchanged_from_the_browser_form_stores_no_version(ui: UI, db_path: Path) -> None:
    # A browser sends a textarea's line breaks as CRLF; the CLI stores them as LF.
    assert ui.post("/persona", {"persona": "alice", "text": "Be calm.\nBe brief."}).status == 200
    assert "unchanged" in ui.post("/persona", {"persona": "alice", "text": "Be calm.\r\nBe brief.\r\n"}).text
    versions = persona_versions(db_path, "alice")
    assert [v.version for v in versions] == [3, 2, 1] and versions[0].text == "Be calm.\nBe brief."


def persona_versions(db_path: Path, persona_id: str) -> list[PersonaVersion]:
    db = open_database(db_path)
    try:
        return personas.history(db, persona_id)
    finally:
        db.close()


def test_a_memory_forgotten_in_the_ui_is_gone_from_another_scope_view_too(db_path: Path) -> None:
    db = db_path
    with Engine(make_settings(db)) as engine:
        engine.record(Scope("p", "a"), "only", "Remember the red door", "user", "chat")
    memory_id = add_memory(db, "only", "The door is red", quote="the red door", scope=Scope("p", "a"))
    with running_ui(db) as running:
        running.login()
        preview = running.get("/forget", persona="p", project="a", id=memory_id).text
        hidden = {k: unescape(v) for k, v in re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', preview)}
        assert hidden["events"] == "only" and hidden["memories"] == memory_id
        assert running.post("/forget", {k: v for k, v in hidden.items() if k != "csrf"}).status == 200
        assert running.get("/memory", persona="p", project="a", id=memory_id).status == 404
        assert "red door" not in running.get("/").text
