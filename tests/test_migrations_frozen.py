"""Released migrations are frozen: pinned by hash, and m004's frozen copy writes what the live code wrote."""

from __future__ import annotations

import ast
import hashlib
import inspect
import io
import tokenize
from collections.abc import Callable
from pathlib import Path
from typing import Any

from upgrade_support import build_archive

from memlikehuman.archive import fulltext, migrations_frozen
from memlikehuman.archive.db import Database
from memlikehuman.archive.migrations import MIGRATIONS
from memlikehuman.archive.postgres import pg_schema
from memlikehuman.archive.schema import migrate

# Every released migration, in order, with the hash of its code (comments and layout excluded,
# SQL text included). Append a row when a migration is released; never change one.
RELEASED = (
    ("m001_create_archive", "eec3659b720f5b64"),
    ("m002_index_memory_links", "141a573dd43c8d87"),
    ("m003_count_events_per_scope", "a2704fd8d1d1dffa"),
    ("m004_purgeable_fulltext", "fcefe260a9f8c683"),  # its rows built by migrations_frozen
    ("m005_known_from_and_event_times", "2b35cf89d966d376"),
    ("m006_ngram_fulltext", "098c61f8b07970f7"),
    ("m007_extraction_claims", "8d6d6380cd633463"),
    ("m008_event_dates", "1dbab56db223e324"),
    ("m009_alias_evidence", "7e136c0f10ade631"),
    ("m010_memory_extractor", "9cfb1ecd85d23e79"),
    ("m011_memory_repeats", "9172111f2e6acb16"),
    ("m012_memory_sources_and_tombstones", "ae01f1d97ca5cb8c"),
    ("m013_passage_fulltext", "bd2c056b63137533"),
    ("m014_passage_context", "87518cf18a2378ed"),
)
# PostgreSQL's own list (archive/postgres/pg_schema.py), pinned the same way; p001's SQL lives in module
# constants its code only names, so their text is pinned too (unchanged since p001's release, eb446ff).
PG_RELEASED = (
    ("p001_create_archive", "1476115e7e7f4554"),
    ("p002_alias_evidence", "98dffaa36eae0668"),
    ("p003_memory_extractor", "6a00fb7d470246c7"),
    ("p004_memory_repeats", "112d149d4277ec5d"),
    ("p005_memory_sources_and_tombstones", "819b5587ae592387"),
    ("p006_vectors_in_pgvector", "c9daf30fcef9726f"),
    ("p007_passage_fulltext", "b5bb95493932d6b4"),
    ("p008_passage_context", "46e45d5823974c35"),
)
PG_P001_SQL = "6b5c9075dfffed71"
# What p006 calls, and pg_vectors.adopt calls again for an archive that gets pgvector later: frozen with it;
# and the full-text table pair p007 creates (p001's SQL holds it too).
PG_FROZEN = (
    ("_fulltext_pair", "50b87d6c4f9d65e8"),
    ("pgvector_columns", "59082be1e3921474"),
    ("pgvector_creatable", "d9a201037dfbb321"),
)
# The frozen copies released migrations call (memlikehuman/migrations_frozen.py).
FROZEN = (
    ("m004_event_values", "29e5796863865f15"),
    ("m004_memory_values", "994419b370b825f7"),
    ("m004_index_all", "29d5b835cc46ead0"),
)
EDITED = (
    "{name} was edited after its release: released migrations (and the frozen code they call) never change."
    " Restore it, and append a new migration to MIGRATIONS that makes the change"
    " (docs/decisions/2026-12-01-frozen-migrations.md). Hash now: {digest}"
)


def code_hash(fn: Callable[..., Any]) -> str:
    """A short hash of a function's tokens without comments, blank lines or indentation."""
    source = inspect.getsource(fn)
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    tokens = [tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type not in skipped]
    return hashlib.sha256("\x00".join(tokens).encode()).hexdigest()[:16]


def test_the_released_migrations_are_unchanged_and_in_order() -> None:
    names = [fn.__name__ for fn in MIGRATIONS]
    assert names[: len(RELEASED)] == [name for name, _ in RELEASED], (
        "a released migration was removed, renamed or reordered: MIGRATIONS is append-only"
    )
    for fn, (name, pinned) in zip(MIGRATIONS, RELEASED, strict=False):
        assert code_hash(fn) == pinned, EDITED.format(name=name, digest=code_hash(fn))


def test_every_migration_is_pinned_here() -> None:
    unpinned = [f'("{fn.__name__}", "{code_hash(fn)}")' for fn in MIGRATIONS[len(RELEASED) :]]
    assert unpinned == [], f"new migrations: add {', '.join(unpinned)} to RELEASED in this file when released"


def test_the_released_postgres_migrations_are_unchanged_pinned_and_in_order() -> None:
    names = [fn.__name__ for fn in pg_schema.MIGRATIONS]
    assert names[: len(PG_RELEASED)] == [name for name, _ in PG_RELEASED], "pg_schema.MIGRATIONS is append-only"
    for fn, (name, pinned) in zip(pg_schema.MIGRATIONS, PG_RELEASED, strict=False):
        assert code_hash(fn) == pinned, EDITED.format(name=name, digest=code_hash(fn))
    sql = pg_schema._FUNCTIONS + pg_schema._TABLES + pg_schema._COUNTERS + pg_schema._fulltext_tables()
    digest = hashlib.sha256(sql.encode()).hexdigest()[:16]
    assert digest == PG_P001_SQL, EDITED.format(name="the SQL of p001_create_archive", digest=digest)
    unpinned = [f'("{fn.__name__}", "{code_hash(fn)}")' for fn in pg_schema.MIGRATIONS[len(PG_RELEASED) :]]
    assert unpinned == [], f"new migrations: add {', '.join(unpinned)} to PG_RELEASED in this file when released"


def test_the_postgres_code_a_released_migration_calls_is_unchanged() -> None:
    for name, pinned in PG_FROZEN:
        digest = code_hash(getattr(pg_schema, name))
        assert digest == pinned, EDITED.format(name=f"pg_schema.{name}", digest=digest)


def test_the_frozen_module_holds_only_pinned_functions() -> None:
    names = {name for name in vars(migrations_frozen) if not name.startswith("__")} - {"annotations", "Any"}
    assert names == {name for name, _ in FROZEN}, "pin every frozen function in FROZEN; keep constants inside them"


def test_the_frozen_code_of_the_migrations_is_unchanged() -> None:
    for name, pinned in FROZEN:
        digest = code_hash(getattr(migrations_frozen, name))
        assert digest == pinned, EDITED.format(name=f"migrations_frozen.{name}", digest=digest)


def test_the_frozen_module_imports_nothing_of_the_package() -> None:
    tree = ast.parse(Path(inspect.getfile(migrations_frozen)).read_text(encoding="utf-8"))
    imported = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    assert imported == ["__future__", "typing"], "frozen code must not call live code: copy what it needs"


# -- m004's frozen copy against the live fulltext code it replaced --------------------------------


def _terms(db: Database, table: str) -> int:
    """How many term instances a full-text table's index holds."""
    with db.write() as conn:
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.v_{table} USING fts5vocab(main, {table}, 'instance')")
    return int(db.scalar(f"SELECT count(*) FROM temp.v_{table}") or 0)


def test_m004_builds_the_full_text_values_the_live_code_builds(tmp_path: Path) -> None:
    # If this fails after a change to fulltext.py, archives hold rows the live 'delete' no longer
    # matches: append a migration that rebuilds the full-text rows (never edit the frozen copy).
    path = tmp_path / "old.sqlite3"
    build_archive(path, 3)
    db = Database(path)
    try:
        with db.read() as conn:
            sequences = [row["sequence"] for row in db.query("SELECT sequence FROM events")]
            rowids = [row["id"] for row in db.query("SELECT id FROM memories")]
            for sequence in sequences:
                assert migrations_frozen.m004_event_values(conn, sequence) == fulltext.event_values(conn, sequence)
            for rowid in rowids:
                assert migrations_frozen.m004_memory_values(conn, rowid) == fulltext.memory_values(conn, rowid)
        assert len(sequences) > 5 and len(rowids) > 3
    finally:
        db.close()


def test_the_rows_m004_writes_are_exactly_the_ones_the_live_code_deletes(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    build_archive(path, 3)
    db = Database(path)
    try:
        migrate(db, upto=4)
        assert _terms(db, "events_fts") > 50 and _terms(db, "memories_fts") > 10
        with db.write() as conn:
            for row in db.query("SELECT sequence FROM events"):
                fulltext.unindex_event(conn, row["sequence"])
            for row in db.query("SELECT id FROM memories"):
                fulltext.unindex_memory(conn, row["id"])
        # A 'delete' with other values than those indexed leaves terms behind (or fails).
        assert _terms(db, "events_fts") == 0 and _terms(db, "memories_fts") == 0
    finally:
        db.close()


def _instances(db: Database, table: str) -> list[tuple[Any, ...]]:
    """Every (term, rowid, column, offset) of a full-text table: its whole index, comparable."""
    _terms(db, table)
    return [tuple(row.values()) for row in db.query(f"SELECT * FROM temp.v_{table} ORDER BY 1, 2, 3, 4")]


def test_m004_writes_the_same_index_as_a_rebuild_by_the_live_code(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    build_archive(path, 3)
    db = Database(path)
    try:
        migrate(db, upto=4)
        by_m004 = {table: _instances(db, table) for table in fulltext.TABLES.values()}
        with db.write() as conn:
            for table in fulltext.TABLES.values():
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")
        fulltext.fill_missing(db, tables=tuple(fulltext.TABLES.values()))
        rebuilt = {table: _instances(db, table) for table in fulltext.TABLES.values()}
    finally:
        db.close()
    assert all(by_m004.values()) and by_m004 == rebuilt
