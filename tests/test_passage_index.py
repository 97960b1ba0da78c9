"""The passage index (archive/fulltext.py, PASSAGES): each event's passages as rows, kept by every
writer, gone with a forget, and filled for an archive recorded before it while recall keeps working."""

from __future__ import annotations

from typing import Any

from conftest import make_settings

from memlikehuman.archive import fulltext, migrations
from memlikehuman.archive.backend import backend_of
from memlikehuman.archive.db import open_database
from memlikehuman.archive.postgres import pg_schema
from memlikehuman.archive.schema import migrate
from memlikehuman.engine import Engine
from memlikehuman.records import Scope
from memlikehuman.retrieval import search
from memlikehuman.retrieval.recall import recall
from memlikehuman.text import passages

HOME = Scope("ana", "home")
DETAIL = "The staging database password rotates every Tuesday at 04:00 UTC, set by the ops team."


def _long_text(marker: str = "") -> str:
    step = "Step {n}: configure the module number {n} and run its checks before moving on. "
    paragraphs = [step.format(n=n) * 3 for n in range(60)]
    paragraphs[31] = DETAIL + marker
    return "\n\n".join(paragraphs)


def _passage_rows(engine: Engine, sequence: int) -> int:
    table = fulltext.PASSAGES
    rows = f"{table}_docsize" if backend_of(engine.db).name == "sqlite" else table
    key = "id" if backend_of(engine.db).name == "sqlite" else "rowid"
    return int(engine.db.scalar(f"SELECT count(*) FROM {rows} WHERE {key} / {fulltext.PASSAGE_SLOTS} = ?", (sequence,)))


def _holding(engine: Engine, word: str) -> int:
    return search.row_counts(engine.db, fulltext.PASSAGES, [word], fresh=True)[word]


def _before(db_path: Any, sqlite_migration: str, pg_migration: str) -> Any:
    """The archive at db_path opened at the schema before the named migration (SQLite's or PostgreSQL's)."""
    db = open_database(db_path)
    postgres = backend_of(db).name == "postgres"
    names = [fn.__name__ for fn in (pg_schema.MIGRATIONS if postgres else migrations.MIGRATIONS)]
    migrate(db, upto=names.index(pg_migration if postgres else sqlite_migration))
    return db


def _insert(conn: Any, n: int, session: str, role: str, text: str) -> int:
    """An event row written as that schema's writers wrote it, without its full-text rows; its sequence."""
    conn.execute(
        "INSERT INTO events (event_id, persona_id, project_id, session_id, role, source, category, kind,"
        " text, occurred_at, occurred_at_given, recorded_at, payload_hash, extraction_state)"
        " VALUES (?, ?, ?, ?, ?, 'Ana', 'conversation', 'record', ?, ?, 1, ?, ?, 'pending')",
        (f"e{n}", HOME.persona_id, HOME.project_id, session, role, text, *[f"2026-01-01T10:0{n}:00Z"] * 2)
        + (f"hash-{n}",),
    )
    return int(conn.last_insert_rowid())


def test_an_event_has_a_row_per_passage_and_a_short_one_a_single_row(engine: Engine) -> None:
    text = _long_text()
    long = engine.record(HOME, "notes", text, role="user", source="Ana").sequence
    short = engine.record(HOME, "hello", "Hello there.", role="user", source="Ana").sequence
    assert _passage_rows(engine, long) == len(passages.spans(text)) > 10
    assert _passage_rows(engine, short) == 1
    assert _holding(engine, "tuesday") == 1  # the one passage that says it
    assert fulltext.count_missing(engine.db) == (0, 0) and fulltext.orphans(engine.db) == 0


def test_a_forgotten_event_leaves_no_passage_row_and_the_next_event_keeps_its_own(engine: Engine) -> None:
    long = engine.record(HOME, "notes", _long_text(" Codeword zanzibarite."), role="user", source="Ana").sequence
    after = engine.record(HOME, "reply", "Thanks, noted the rotation.", role="assistant", source="Claude").sequence
    assert _holding(engine, "zanzibarit") == 1
    engine.forget(HOME, "notes")
    assert _passage_rows(engine, long) == 0 and _passage_rows(engine, after) == 1
    assert _holding(engine, "zanzibarit") == 0 and _holding(engine, "tuesday") == 0
    assert fulltext.count_missing(engine.db) == (0, 0) and fulltext.orphans(engine.db) == 0
    for table in fulltext.ALL_TABLES:
        fulltext.integrity_check(engine.db, table)


def test_an_older_archive_is_searched_by_its_events_until_its_passages_are_filled(db_path: Any) -> None:
    db = _before(db_path, "m013_passage_fulltext", "p007_passage_fulltext")
    try:
        with db.write() as conn:
            for n, text in enumerate([_long_text(), "Logs rotate every Tuesday.", "Marco set up the database."]):
                fulltext.index_event(conn, _insert(conn, n, f"s{n}", "user", text))  # the tables of that schema
    finally:
        db.close()
    with Engine(make_settings(db_path), backfill_seconds=0) as engine:  # a hook's budget, spent at once
        assert fulltext.passages_behind(engine.db)
        assert fulltext.event_table(engine.db) == fulltext.TABLES["event"]
        assert "e0" in [hit.event.event_id for hit in recall(engine, HOME, "staging password rotate").raw_fallback]
        new = engine.record(HOME, "e3", "The deploys moved to Fridays.", role="user", source="Ana")
        assert _passage_rows(engine, new.sequence) == 1  # recorded after the upgrade: indexed at once
    with Engine(make_settings(db_path)) as engine:  # a server or command: no budget, it finishes the fill
        assert not fulltext.passages_behind(engine.db)
        assert fulltext.event_table(engine.db) == fulltext.PASSAGES
        assert fulltext.count_missing(engine.db) == (0, 0) and fulltext.orphans(engine.db) == 0
        found = recall(engine, HOME, "when does the staging database password rotate", search_mode="fast")
        assert [hit.event.event_id for hit in found.raw_fallback][0] == "e0"


KILN = "The kiln needs a new thermocouple. " + "Please also check the glaze recipes for the spring set. " * 12
GLAZE = "Here is the glaze plan, step by step."


def test_a_passage_carries_only_the_end_of_the_turn_before_it(engine: Engine) -> None:
    assert KILN.lower().rfind("kiln") < len(KILN) - fulltext.PASSAGE_CONTEXT_CHARS and len(passages.spans(KILN)) == 1
    engine.record(HOME, "ask", KILN, role="user", source="Ana", session_id="s1")
    engine.record(HOME, "reply", GLAZE, role="assistant", source="Claude", session_id="s1")
    # the reply's passage row holds the request's last words ("spring"), not its opening ("kiln")
    assert _holding(engine, "kiln") == 1 and _holding(engine, "spring") == 2
    words = search.row_counts(engine.db, fulltext.TABLES["event"], ["kiln"], fresh=True)
    assert words["kiln"] == 2  # the word index keeps 1,000 characters of the turn before


def test_passages_written_with_the_longer_context_are_written_again_after_the_upgrade(db_path: Any) -> None:
    db = _before(db_path, "m014_passage_context", "p008_passage_context")
    try:
        with db.write() as conn:
            for n, (role, text) in enumerate([("user", KILN), ("assistant", GLAZE)]):
                sequence = _insert(conn, n, "s1", role, text)
                fulltext.index_event(conn, sequence)
                # the passage row as the schema before wrote it: 1,000 characters of the turn before
                values = fulltext.event_values(conn, sequence)
                fulltext._write(conn, fulltext.PASSAGES, sequence, values, delete=True)
                row = [(sequence * fulltext.PASSAGE_SLOTS, values)]
                backend_of(conn).fulltext_write_many(conn, fulltext.PASSAGES, "text, attribution, context", row)
    finally:
        db.close()
    with Engine(make_settings(db_path), backfill_seconds=0) as engine:  # m014, and a hook's budget spent at once
        assert fulltext.passages_behind(engine.db) and _holding(engine, "kiln") == 0
        assert fulltext.event_table(engine.db) == fulltext.TABLES["event"]
    with Engine(make_settings(db_path)) as engine:  # a server or command writes them again
        assert not fulltext.passages_behind(engine.db)
        assert _holding(engine, "kiln") == 1 and _holding(engine, "spring") == 2
        assert fulltext.count_missing(engine.db) == (0, 0) and fulltext.orphans(engine.db) == 0
