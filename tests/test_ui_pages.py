"""What the UI's pages show, read over HTTP from a real `memlikehuman ui` process."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest
from cli_support import Populated, populate
from conftest import add_memory, make_settings
from ui_support import UI, module_archive, running_ui

from memlikehuman.admin import stats
from memlikehuman.archive import memories
from memlikehuman.archive.db import open_database
from memlikehuman.engine import Engine
from memlikehuman.records import Scope
from memlikehuman.sessions import context

LONG = Scope("carol", "long")
FILLER = "Plain filler words for a very long note. " * 1500  # 63,000 characters
MOVES = Scope("dave", "home")
ENDING = "the spare key hides under the blue flower pot"

__all__ = ["module_archive"]  # the archive fixture: each backend in turn


@pytest.fixture(scope="module")
def archive(module_archive: Path) -> tuple[Path, Populated]:
    """The module's archive, populated once per backend."""
    db = module_archive
    made = populate(db)
    with Engine(make_settings(db)) as engine:
        engine.record(LONG, "long-note", FILLER[:45_000] + ENDING + FILLER[:15_000], "user", "notes", session_id="n1")
        for i in range(60):
            engine.record(LONG, f"t{i:02d}", f"timeline entry number {i}", "user", "chat", session_id=f"sess-{i // 20}")
        engine.record(MOVES, "m1", "I live in Lisbon now", "user", "chat", occurred_at="2026-01-10T09:00:00Z")
        engine.record(MOVES, "m2", "I moved to Porto", "user", "chat", occurred_at="2026-06-10T09:00:00Z")
    add_memory(db, "long-note", "The spare key is under the blue flower pot", quote=ENDING, scope=LONG)
    add_memory(db, "m1", "Dave lives in Lisbon", quote="I live in Lisbon", subject="dave.home", scope=MOVES)
    add_memory(db, "m2", "Dave lives in Porto", quote="I moved to Porto", subject="dave.home", scope=MOVES)
    return db, made


@pytest.fixture(scope="module")
def ui(archive: tuple[Path, Populated]) -> Iterator[UI]:
    with running_ui(archive[0]) as running:
        running.login()
        yield running


def text_of(html: str) -> str:
    """The visible text of a page, roughly: tags out, entities decoded."""
    return unescape(re.sub(r"<[^>]+>", " ", html))


def test_home_shows_every_scope_with_counts_and_the_latest_events_with_their_text(ui: UI) -> None:
    page = ui.get("/")
    assert page.status == 200
    rows = re.findall(r"<tr><td><a href=\"/persona\?persona=(\w+)\">.*?</tr>", page.text)
    assert rows == ["alice", "bob", "carol", "dave"]
    assert '<a href="/scope?persona=bob&amp;project=work">work</a></td><td>1</td>' in page.text
    assert "I moved to Porto" in page.text and "timeline entry number 42" in page.text
    assert "timeline entry number 41" not in page.text  # the latest 20 only


def test_the_scope_counts_are_those_of_memlikehuman_stats(ui: UI, archive: tuple[Path, Populated]) -> None:
    with Engine(make_settings(archive[0])) as engine:
        expected = stats.collect(engine.db, vector_model=None).scopes
    page = ui.get("/").text
    for s in expected:
        numbers = (s.events, s.extraction_pending, s.extraction_failed, s.memories_current, s.memories_superseded)
        cells = "".join(f"<td>{n}</td>" for n in (*numbers, s.memories_revoked))
        checkpoints = f"<td>{s.checkpoints_valid} / {s.checkpoints_invalidated}</td>"
        assert f">{s.project_id}</a></td>{cells}{checkpoints}" in page, s


def test_the_timeline_groups_events_by_session_with_their_extraction_state_and_pages_older_ones(ui: UI) -> None:
    page = ui.get("/scope", persona="carol", project="long")
    shown = re.findall(r"timeline entry number (\d+)", page.text)
    assert shown == [str(i) for i in range(59, 9, -1)]  # 50 per page, newest first
    assert re.findall(r"session (sess-\d)</h3>", page.text) == ["sess-2", "sess-1", "sess-0"]
    assert "badge state-pending" in page.text
    older = re.search(r'href="(/scope\?[^"]*before=\d+)"', page.text)
    assert older, "no link to older events"
    rest = ui.request("GET", unescape(older.group(1)))
    assert re.findall(r"timeline entry number (\d+)", rest.text) == [str(i) for i in range(9, -1, -1)]
    assert "id=long-note" in rest.text
    one = ui.get("/scope", persona="carol", project="long", session="sess-1")
    assert re.findall(r"timeline entry number (\d+)", one.text) == [str(i) for i in range(39, 19, -1)]


def test_search_finds_current_memories_and_raw_events_and_names_its_mode(
    ui: UI, archive: tuple[Path, Populated]
) -> None:
    made = archive[1]
    page = ui.get("/search", persona="alice", project="garden", q="where does Alice live Porto")
    assert made.replacement_id in page.text
    assert made.revoked_id not in page.text  # a corrected memory is never recalled
    assert "fast search as of" in page.text
    for mode in ("semantic", "deep"):
        degraded = ui.get("/search", persona="alice", project="garden", q="Porto", mode=mode)
        assert degraded.status == 200 and made.replacement_id in degraded.text
        assert 'class="warning"' in degraded.text  # no embedder configured: said, not hidden


def test_search_as_of_shows_the_fact_as_known_then_and_history_adds_old_versions(ui: UI) -> None:
    where = {"persona": "dave", "project": "home", "q": "Dave lives"}
    earlier = ui.get("/search", **where, as_of="2026-03-01T00:00:00Z")
    assert "Dave lives in Lisbon" in earlier.text and "Porto" not in earlier.text
    now = ui.get("/search", **where)
    assert "Dave lives in Porto" in now.text and "Dave lives in Lisbon" not in now.text
    history = ui.get("/search", **where, history="1")
    assert "Dave lives in Lisbon" in history.text and "<td>superseded</td>" in history.text


def test_the_event_page_marks_each_memory_quote_in_the_original_text(ui: UI, archive: tuple[Path, Populated]) -> None:
    page = ui.get("/event", persona="alice", project="garden", id="home1")
    mark = re.search(r'<mark title="(mem_\w+)" id="q-(mem_\w+)" class="quote">([^<]*)</mark>', page.text)
    assert mark and mark.group(3) == "I live in Lisbon" and mark.group(1) == mark.group(2)
    assert f'href="/memory?persona=alice&amp;project=garden&amp;id={mark.group(1)}"' in page.text


def test_a_long_event_is_paged_and_the_quote_link_opens_the_page_that_holds_the_quote(ui: UI) -> None:
    first = ui.get("/event", persona="carol", project="long", id="long-note")
    assert "<mark" not in first.text and "characters 0–10,000 of 60,045" in first.text
    link = re.search(r'href="([^"]*offset=40000#q-mem_\w+)"', first.text)
    assert link, "the memory's quote link does not point to the page holding the quote"
    page = ui.request("GET", unescape(link.group(1)).split("#")[0])
    assert f'class="quote">{ENDING}</mark>' in page.text
    assert "characters 40,000–50,000" in page.text


def test_the_memory_page_links_to_its_quote_inside_the_event_page_that_holds_it(ui: UI) -> None:
    event = ui.get("/event", persona="carol", project="long", id="long-note").text
    memory_id = re.search(r"id=(mem_\w+)", event)
    assert memory_id
    page = ui.get("/memory", persona="carol", project="long", id=memory_id.group(1)).text
    link = re.search(r'<a href="([^"]+)" id="quote-link">', page)
    assert link and unescape(link.group(1)).endswith(f"offset=40000#q-{memory_id.group(1)}")


def test_pages_are_served_while_another_process_holds_a_write_transaction(
    ui: UI, archive: tuple[Path, Populated]
) -> None:
    db = open_database(archive[0])
    try:
        with db.write() as conn:
            conn.execute("UPDATE events SET source = 'pending-write' WHERE event_id = 'u1'")
            assert ui.get("/scope", persona="alice", project="garden").status == 200
            assert "pending-write" not in ui.get("/event", persona="alice", project="garden", id="u1").text
            conn.execute("UPDATE events SET source = 'chat' WHERE event_id = 'u1'")
    finally:
        db.close()


def test_the_memory_page_shows_validity_basis_kind_versions_and_source(ui: UI, archive: tuple[Path, Populated]) -> None:
    made = archive[1]
    page = text_of(ui.get("/memory", persona="alice", project="garden", id=made.replacement_id).text)
    for expected in ("status current", "kind fact", "basis stated", "subject alice.home", "valid from 2026-06-01"):
        assert expected in " ".join(page.split())
    versions = page.split("Versions of this fact (3)")[1]
    assert (
        versions.index("Alice lives in Lisbon")
        < versions.index("Alice lives in Porto ")
        < versions.index("Porto, Portugal")
    )
    assert f"revoked → {made.replacement_id}" in versions and "superseded" in versions
    assert "memory_correct" in page  # the source: the correction event
    revoked = text_of(ui.get("/memory", persona="alice", project="garden", id=made.revoked_id).text)
    assert "status revoked" in " ".join(revoked.split()) and "more precise" in revoked


def test_the_checkpoints_page_lists_them_and_previews_what_session_resume_returns(
    ui: UI, archive: tuple[Path, Populated]
) -> None:
    page = ui.get("/checkpoints", persona="alice", project="garden", preview="1", budget="300", model="gpt-4o")
    with Engine(make_settings(archive[0])) as engine:
        expected = context.resume(engine, Scope("alice", "garden"), token_budget=300, target_model="gpt-4o")
    shown = text_of(page.text)
    assert f"status {expected.status}:" in shown and f"checkpoint {expected.checkpoint_id}" in shown
    assert "invalidated" in shown and "plant roses" in shown
    assert "patient gardening helper" in shown  # the core persona is part of the context
    assert expected.context.split("\n")[0] in shown


def test_the_core_persona_page_shows_the_current_text_and_every_version(ui: UI) -> None:
    page = text_of(ui.get("/persona", persona="alice").text)
    assert "Current (version 2" in page and "Versions (2)" in page
    assert "You are Alice's gardening helper." in page and "You are Alice's patient gardening helper." in page


def test_a_reload_shows_what_another_process_recorded_meanwhile(ui: UI, archive: tuple[Path, Populated]) -> None:
    assert "freshly recorded" not in ui.get("/scope", persona="bob", project="work").text
    with Engine(make_settings(archive[0])) as engine:
        engine.record(Scope("bob", "work"), "fresh", "freshly recorded while the UI runs", "user", "mail")
    assert "freshly recorded while the UI runs" in ui.get("/scope", persona="bob", project="work").text
    assert "freshly recorded while the UI runs" in ui.get("/").text


def test_quotes_that_overlap_are_both_marked(db_path: Path) -> None:
    db = db_path
    with Engine(make_settings(db)) as engine:
        engine.record(Scope(), "e", "We moved to   Lisbon in May and love it", "user", "chat")
    first = add_memory(db, "e", "moved to Lisbon", quote="moved to Lisbon")
    second = add_memory(db, "e", "Lisbon in May", quote="Lisbon in May")
    with running_ui(db) as running:
        running.login()
        page = running.get("/event", id="e").text
    assert f'<mark title="{first}" id="q-{first}" class="quote">moved to   </mark>' in page
    assert f'<mark title="{first} {second}" id="q-{second}" class="quote">Lisbon</mark>' in page
    assert f'<mark title="{second}" class="quote"> in May</mark>' in page
    assert memories.MEMORY_PREFIX in first
