"""The SQLite backend (archive/backend.py): FTS5 tables and bm25(), the file's pragmas, its WAL and pages."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from .. import migrations
from ..connection import Connection, Transaction

if TYPE_CHECKING:
    from ...records import Check
    from ..db import Database, Gone


class SqliteBackend:
    name = "sqlite"

    @property
    def residue(self) -> str:
        from ...records.reports import NOT_SCRUBBED  # reports.py: a hook never forgets

        return NOT_SCRUBBED

    # -- full text (FTS5, contentless-delete tables) -------------------------------------------------

    def fulltext_write(
        self, conn: Transaction, table: str, columns: str, rowid: int, values: Sequence[str], *, delete: bool = False
    ) -> None:
        marks = ", ".join("?" * (len(values) + 1))
        if delete:
            sql = f"INSERT INTO {table} ({table}, rowid, {columns}) VALUES ('delete', {marks})"
        else:
            sql = f"INSERT INTO {table} (rowid, {columns}) VALUES ({marks})"
        conn.execute(sql, (rowid, *values))

    def fulltext_write_many(
        self, conn: Transaction, table: str, columns: str, rows: Sequence[tuple[int, Sequence[str]]]
    ) -> None:
        if not rows:
            return
        flat = [(rowid, *values) for rowid, values in rows]
        marks = ", ".join("?" * len(flat[0]))
        conn.executemany(f"INSERT INTO {table} (rowid, {columns}) VALUES ({marks})", flat)

    def fulltext_table_exists(self, conn: Transaction, table: str) -> bool:
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        return found is not None

    def fulltext_clear(self, conn: Transaction, table: str) -> None:
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")

    def fulltext_records(self, db: Connection, table: str) -> int:
        return int(db.scalar(f"SELECT count(*) FROM {table}_docsize") or 0)  # a row per indexed record

    def fulltext_check(self, db: Connection, table: str) -> None:
        # FTS5 takes the check as an INSERT command, so it needs a write transaction; the command
        # changes nothing and the transaction commits empty.
        with db.write() as conn:
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")

    def fulltext_scored(
        self,
        db: Connection,
        table: str,
        words: Sequence[str],
        weights: Sequence[float],
        counts: dict[str, int] | None,
        floor: int | None,
    ) -> tuple[str, str, str, dict[str, Any]]:
        marks = ", ".join(f":w{i}" for i in range(len(weights)))
        condition = f"{table} MATCH :match" + ("" if floor is None else " AND f.rowid >= :floor")
        params = {"match": match_expression(words), "floor": floor, **{f"w{i}": w for i, w in enumerate(weights)}}
        return f"{table} f", f"-bm25({table}, {marks})", condition, params

    def fulltext_count(self, db: Connection, table: str, word: str) -> int:
        return int(db.scalar(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (match_expression([word]),)))

    def fulltext_nth_newest(
        self, db: Connection, table: str, words: Sequence[str], offset: int, span: tuple[int, int]
    ) -> int | None:
        sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid BETWEEN ? AND ? ORDER BY rowid DESC"
        found = db.scalar(sql + " LIMIT 1 OFFSET ?", (match_expression(words), *span, offset))
        return None if found is None else int(found)

    def memories_with_phrase(self, content: str) -> tuple[str, list[Any]]:
        sql = "SELECT m.id, m.content FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid"
        sql += " WHERE memories_fts MATCH ?"
        # SQLite reads an FTS5 query as a C string: a NUL would end it inside the phrase's quotes.
        return sql, ['content : "' + content.replace('"', '""').replace("\x00", " ") + '"']

    def fulltext_matching(self, table: str, word: str, column: int) -> tuple[str, str, dict[str, Any]]:
        """Rows whose column (by position) holds the word: (FROM item aliased f, condition, parameters)."""
        name = _COLUMN_NAMES[table][column]
        match = f'{name} : "' + word.replace('"', '""').replace("\x00", " ") + '"'
        return f"{table} f", f"{table} MATCH :fm_match", {"fm_match": match}

    # -- rows ----------------------------------------------------------------------------------------

    def insert_events(self, conn: Transaction, insert_sql: str, names: str, rows: Sequence[Sequence[Any]]) -> list[int]:
        """Through a TEMP table and one INSERT ... SELECT, whose AUTOINCREMENT rows take consecutive
        sequences ending at the last one.

        The counter trigger on events (m003) makes each INSERT open a statement journal and copy the
        pages it changes into it; one statement for the whole batch does that once instead of per row
        (measured on 20,000 rows: 10-11 us a row against 17-21 with an INSERT per row). The empty TEMP
        table stays until the connection closes or its temporary storage changes (temp_in_memory).
        """
        conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS staged_events ({names})")
        conn.executemany(f"INSERT INTO temp.staged_events VALUES ({', '.join('?' * len(rows[0]))})", rows)
        conn.execute(f"INSERT INTO events ({names}) SELECT {names} FROM temp.staged_events ORDER BY rowid")
        last = int(conn.last_insert_rowid())
        conn.execute("DELETE FROM temp.staged_events")  # kept for the next batch: creating it costs ~2 ms
        return list(range(last - len(rows) + 1, last + 1))

    # -- schema --------------------------------------------------------------------------------------

    def migrations(self) -> Sequence[Callable[[Any], None]]:
        return migrations.MIGRATIONS

    def prepare_ledger(self, db: Connection) -> None:
        if not db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'schema_migrations'"):
            with db.write() as conn:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations"
                    " (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )

    def schema_version(self, db: Connection) -> int:
        if not db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'schema_migrations'"):
            return 0
        return int(db.scalar("SELECT count(*) FROM schema_migrations") or 0)

    # -- after a forget, and reports -----------------------------------------------------------------

    def scrub(self, db: Connection, gone: Gone, wait: float | None = None) -> bool:
        """Truncate the WAL, then rewrite live pages that still hold a stale copy (scrub.py); each step
        waits at most `wait` seconds (default scrub.SCRUB_TIMEOUT_MS) for other connections."""
        from . import scrub  # with its page parser: only a forget needs it

        timeout_ms = scrub.SCRUB_TIMEOUT_MS if wait is None else int(wait * 1000)
        return scrub.scrub(db, timeout_ms) and scrub.rewrite_stale_pages(db, gone, timeout_ms)

    def leftovers(self, db: Connection, is_forgotten: Callable[[str], bool]) -> tuple[int, int] | None:
        """Copies of forgotten rows in the file and its WAL (leftovers.py): (main, wal)."""
        from . import leftovers  # only the doctor asks

        return (0, 0) if str(db.path) == ":memory:" else leftovers.count(db.path, is_forgotten)

    def sizes(self, db: Connection) -> tuple[int, int, int]:
        free = int(db.scalar("PRAGMA freelist_count")) * int(db.scalar("PRAGMA page_size"))
        return _size(str(db.path)), _size(f"{db.path}-wal"), free

    def integrity(self, db: Connection) -> Check:
        from ...records import Check  # reports.py: only the doctor asks

        rows = [str(next(iter(row.values()))) for row in db.query("PRAGMA integrity_check")]
        if rows == ["ok"]:
            return Check("integrity", "ok", "SQLite integrity_check found no problem")
        shown = "; ".join(rows[:3]) + (f" (and {len(rows) - 3} more)" if len(rows) > 3 else "")
        return Check(
            "integrity",
            "fail",
            f"SQLite integrity_check: {shown}: restore from a backup, or `export` and `import` into a new archive",
        )

    @contextmanager
    def temp_in_memory(self, db: Connection) -> Iterator[None]:
        """SQLite's temporary files (statement journals, TEMP tables) in memory for the block, then as before.

        A bulk write (the import) runs a statement per row on tables with triggers, and each such
        statement opens a statement journal: a temporary file by default. Measured on 20,000 event rows,
        25 us per row with the file against 12 in memory. The setting can only change outside a
        transaction and drops the connection's TEMP tables; inside one nothing changes.
        """
        sqlite = cast("Database", db)  # this backend is only ever given a SQLite archive (backend_of)
        with sqlite._lock:  # no other thread's transaction between the check, the block and the restore
            if not sqlite.conn.get_autocommit():
                yield
                return
            before = int(sqlite.scalar("PRAGMA temp_store"))
            sqlite.conn.execute("PRAGMA temp_store=MEMORY")
            try:
                yield
            finally:
                if sqlite.conn.get_autocommit():  # a transaction left open by a failure: the setting stays
                    sqlite.conn.execute(f"PRAGMA temp_store={before}")

    # -- vectors: float32 BLOBs scanned in the process (index/vectors.py) -------------------------------

    def vector_index(self, db: Connection) -> None:
        return None

    def vector_check(self, db: Connection) -> None:
        return None

    def adopt_vector_index(self, db: Connection) -> None:
        return None


_COLUMN_NAMES = {
    "events_fts": ("text", "attribution", "context"),
    "events_ngrams": ("text", "attribution", "context"),
    "memories_fts": ("content", "attribution"),
    "memories_ngrams": ("content", "attribution"),
}


def match_expression(words: Sequence[str]) -> str | None:
    """An FTS5 query OR-ing the quoted words; None when there is nothing to match."""
    if not words:
        return None
    return " OR ".join(_quoted(w) for w in words)


def _quoted(word: str) -> str:
    # A trailing '*' marks an n-gram prefix (ngrams.Query.terms); word tokens (\w+) never have one.
    if word.endswith("*"):
        return '"' + word[:-1].replace('"', '""') + '"*'
    return '"' + word.replace('"', '""') + '"'


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


SQLITE = SqliteBackend()
