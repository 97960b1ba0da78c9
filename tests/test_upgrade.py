"""Upgrading: an archive of every older schema opens with today's code and keeps everything it held."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BASE_ENV, make_settings
from upgrade_support import (
    CORRECTION_ID,
    EVENT_IDS,
    LIVE_CHECKPOINT,
    MEMORIES,
    PERSONA_TEXT,
    REPLACEMENT,
    REPLACEMENT_ID,
    build_archive,
)

from memlikehuman.admin import doctor
from memlikehuman.archive import fulltext
from memlikehuman.archive.db import Database
from memlikehuman.archive.migrations import MIGRATIONS
from memlikehuman.archive.schema import migrate
from memlikehuman.engine import Engine
from memlikehuman.records import Scope
from memlikehuman.retrieval.recall import recall
from memlikehuman.sessions import context

HOME = Scope()
WORK = Scope("alice", "work")
OLDER = range(1, len(MIGRATIONS))
TABLE_ROWS = {
    "events": len(EVENT_IDS) + 1,
    "cues": 3,
    "memories": len(MEMORIES) + 1,
    "corrections": 1,
    "checkpoints": 2,
    "persona_versions": 2,
    "event_vectors": 1,
    "memory_vectors": 1,
}


@pytest.fixture(params=OLDER, ids=lambda version: f"schema{version}")
def upgraded(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """The path of an archive built at an older schema, then opened (and so upgraded) by an Engine once."""
    path = tmp_path / "old.sqlite3"
    build_archive(path, request.param)
    with Engine(make_settings(path)):
        pass
    return path


def _found(engine: Engine, scope: Scope, query: str) -> list[str]:
    """The memory IDs, then the raw event IDs (events without memories), that recall returns."""
    result = recall(engine, scope, query, limit=20)
    return [hit.memory.memory_id for hit in result.memories] + [hit.event.event_id for hit in result.raw_fallback]


def test_an_upgraded_archive_has_every_migration_in_its_ledger(upgraded: Path) -> None:
    db = Database(upgraded)
    try:
        names = [row["name"] for row in db.query("SELECT name FROM schema_migrations ORDER BY id")]
        assert names == [fn.__name__ for fn in MIGRATIONS]
        assert [row["id"] for row in db.query("SELECT id FROM schema_migrations ORDER BY id")] == list(
            range(1, len(MIGRATIONS) + 1)
        )
    finally:
        db.close()


def test_every_row_of_an_older_schema_survives_the_upgrade(upgraded: Path) -> None:
    db = Database(upgraded)
    try:
        counts = {table: db.scalar(f"SELECT count(*) FROM {table}") for table in TABLE_ROWS}
        assert counts == TABLE_ROWS
        assert db.scalar("SELECT count(*) FROM events WHERE event_id = 'evt-pin'") == 0
        # m003's counters and m005's known_from are derived from the old rows.
        by_scope = db.query("SELECT persona_id, project_id, events, pending, failed FROM scope_counts ORDER BY 1")
        assert by_scope == [
            {"persona_id": "alice", "project_id": "work", "events": 1, "pending": 0, "failed": 0},
            {"persona_id": "default", "project_id": "default", "events": 8, "pending": 1, "failed": 1},
        ]
        known = db.scalar("SELECT known_from FROM memories WHERE memory_id = ?", (REPLACEMENT_ID,))
        assert known == "2026-03-02T09:02:00Z"
    finally:
        db.close()


def test_an_upgraded_archive_passes_the_sqlite_and_doctor_checks(upgraded: Path) -> None:
    db = Database(upgraded)
    try:
        assert [next(iter(row.values())) for row in db.query("PRAGMA integrity_check")] == ["ok"]
        assert fulltext.count_missing(db) == (0, 0) and fulltext.orphans(db) == 0
    finally:
        db.close()
    checks = {check.name: check for check in doctor.diagnose(upgraded, env=BASE_ENV)}
    for name in ("schema", "integrity", "full-text index", "vectors"):
        assert checks[name].status == "ok", checks[name]


def test_word_and_n_gram_search_find_the_old_events_within_their_scope(upgraded: Path) -> None:
    with Engine(make_settings(upgraded)) as engine:
        assert "evt-tram" in _found(engine, HOME, "tram")
        assert _found(engine, HOME, "Cacilhas ferry")[0] == "evt-ferry"
        assert _found(engine, HOME, "绿茶") == ["evt-tea"]
        assert _found(engine, WORK, "quarterly report") == ["mem_report"]
        assert _found(engine, HOME, "quarterly report") == []
        assert _found(engine, HOME, "PIN 4321") == []
        assert _found(engine, HOME, "Porto Lisbon lives")[0] == "mem_porto"
        assert "mem_lisbon" not in _found(engine, HOME, "Porto Lisbon lives")
        history = recall(engine, HOME, "Porto Lisbon lives", include_history=True).memories
        assert {hit.memory.memory_id: hit.status for hit in history}["mem_lisbon"] == "superseded"


def test_old_events_and_memories_read_back_with_their_cues_and_corrections(upgraded: Path) -> None:
    with Engine(make_settings(upgraded)) as engine:
        event = engine.read(HOME, "evt-lisbon").event
        assert [(cue.kind, cue.key, cue.label) for cue in event.cues] == [
            ("text", "city", "Lisbon"),
            ("photo", "tram.jpg", None),
        ]
        replacement = engine.read(HOME, REPLACEMENT_ID)
        assert replacement.memory is not None and replacement.memory.content == REPLACEMENT
        assert replacement.memory.corrects == "mem_sister" and replacement.event.event_id == CORRECTION_ID
        original = engine.read(HOME, "mem_sister").memory
        assert original is not None and original.revoked_at and original.replaced_by == REPLACEMENT_ID
        notes = engine.read(HOME, "evt-notes", max_chars=100)
        assert notes.page.next_offset == 100


def test_session_resume_over_an_upgraded_archive_uses_its_checkpoint_and_persona(upgraded: Path) -> None:
    with Engine(make_settings(upgraded)) as engine:
        out = context.resume(engine, HOME, session_id="s1", token_budget=4000)
    assert out.status == "ok" and out.checkpoint_id == LIVE_CHECKPOINT
    assert PERSONA_TEXT in out.context and "book a table" in out.context
    assert "Cacilhas" in out.context  # an event after the checkpoint


def test_forgetting_an_old_event_after_the_upgrade_leaves_the_full_text_index_consistent(upgraded: Path) -> None:
    # forget deletes full-text rows with the values today's code computes: they must equal those stored.
    with Engine(make_settings(upgraded)) as engine:
        engine.forget(HOME, "evt-tram")
        engine.forget(HOME, "evt-tea")
        engine.forget(HOME, "evt-ferry")  # its context column holds the tail of the long notes
        assert _found(engine, HOME, "famous") == []
        assert _found(engine, HOME, "绿茶") == []
        assert _found(engine, HOME, "Cacilhas") == []
    checks = {check.name: check for check in doctor.diagnose(upgraded, env=BASE_ENV)}
    assert checks["full-text index"].status == "ok", checks["full-text index"]


def test_an_archive_of_a_newer_schema_opens_unchanged_and_doctor_reports_it_as_newer(tmp_path: Path) -> None:
    # Opening does not refuse a newer archive (frozen migrations keep it so):
    # the unknown migration is left alone and doctor fails its schema check.
    path = tmp_path / "new.sqlite3"
    db = Database(path)
    migrate(db)
    with db.write() as conn:
        conn.execute(
            "INSERT INTO schema_migrations VALUES (?, 'm999_from_the_future', '2027-01-01T00:00:00Z')",
            (len(MIGRATIONS) + 1,),
        )
    db.close()
    with Engine(make_settings(path)) as engine:
        assert engine.schema_version == len(MIGRATIONS) + 1
        engine.record(HOME, "evt-new", "Still writable.", "user", "chat")
    checks = {check.name: check for check in doctor.diagnose(path, env=BASE_ENV)}
    assert checks["schema"].status == "fail" and "upgrade memlikehuman" in checks["schema"].detail
