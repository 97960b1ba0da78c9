"""The PostgreSQL backend (archive/backend.py): postings tables scored like FTS5, its own schema, VACUUM."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from ..connection import Connection, Transaction
from . import pg_fulltext, pg_schema, pg_vectors, scrub

if TYPE_CHECKING:
    from ...records import Check


# Per connection: the tables the catalog said exist. A table, once created, is never dropped (the schema
# only grows), so a recorded event need not ask again; an absent one is asked each time (a migration
# may create it).
_PRESENT: weakref.WeakKeyDictionary[Transaction, set[str]] = weakref.WeakKeyDictionary()


class PostgresBackend:
    name = "postgres"

    @property
    def residue(self) -> str:
        from ...records.reports import NOT_SCRUBBED_POSTGRES  # reports.py: a hook never forgets

        return NOT_SCRUBBED_POSTGRES

    # -- full text (pg_fulltext.py: a row per record and its postings) ------------------------------

    def fulltext_write(
        self, conn: Transaction, table: str, columns: str, rowid: int, values: Sequence[str], *, delete: bool = False
    ) -> None:
        pg_fulltext.write(conn, table, rowid, values, delete=delete)

    def fulltext_write_many(
        self, conn: Transaction, table: str, columns: str, rows: Sequence[tuple[int, Sequence[str]]]
    ) -> None:
        for rowid, values in rows:  # each row's postings are computed in process
            pg_fulltext.write(conn, table, rowid, values)

    def fulltext_table_exists(self, conn: Transaction, table: str) -> bool:
        present = _PRESENT.setdefault(conn, set())
        if table not in present:
            if conn.execute("SELECT to_regclass(?) IS NOT NULL AS present", (table,)).fetchone()["present"] is not True:
                return False
            present.add(table)
        return True

    def fulltext_clear(self, conn: Transaction, table: str) -> None:
        pg_fulltext.clear(conn, table)

    def fulltext_records(self, db: Connection, table: str) -> int:
        return int(db.scalar(f"SELECT count(*) FROM {table}") or 0)

    def fulltext_check(self, db: Connection, table: str) -> None:
        return None  # PostgreSQL checks its own tables

    def fulltext_scored(
        self,
        db: Connection,
        table: str,
        words: Sequence[str],
        weights: Sequence[float],
        counts: dict[str, int] | None,
        floor: int | None,
    ) -> tuple[str, str, str, dict[str, Any]]:
        sql, params = pg_fulltext.scored(db, table, words, weights, counts, floor)
        return f"{sql} f", "f.score", "TRUE", params

    def fulltext_count(self, db: Connection, table: str, word: str) -> int:
        return pg_fulltext.count_matching(db, table, word)

    def fulltext_nth_newest(
        self, db: Connection, table: str, words: Sequence[str], offset: int, span: tuple[int, int]
    ) -> int | None:
        return pg_fulltext.nth_newest(db, table, words, offset, span)

    def memories_with_phrase(self, content: str) -> tuple[str, list[Any]]:
        rowids, params = pg_fulltext.containing_all("memories_fts", 0, content)
        return f"SELECT m.id, m.content FROM memories m WHERE m.id IN ({rowids})", params

    def fulltext_matching(self, table: str, word: str, column: int) -> tuple[str, str, dict[str, Any]]:
        terms = pg_fulltext.tokens(table, word, query=True) or [""]
        return f"{table}_terms f", "f.term = :fm_term AND f.col = :fm_col", {"fm_term": terms[0], "fm_col": column}

    # -- rows ----------------------------------------------------------------------------------------

    def insert_events(self, conn: Transaction, insert_sql: str, names: str, rows: Sequence[Sequence[Any]]) -> list[int]:
        conn.executemany(insert_sql, [tuple(row) for row in rows])
        ids = [row[0] for row in rows]
        sql = f"SELECT event_id, sequence FROM events WHERE event_id IN ({', '.join('?' * len(ids))})"
        found = {r["event_id"]: int(r["sequence"]) for r in conn.execute(sql, ids)}
        return [found[event_id] for event_id in ids]

    # -- schema --------------------------------------------------------------------------------------

    def migrations(self) -> Sequence[Callable[[Any], None]]:
        return pg_schema.MIGRATIONS

    def prepare_ledger(self, db: Connection) -> None:
        pg_schema.create_ledger(db)

    def schema_version(self, db: Connection) -> int:
        return pg_schema.schema_version(db)

    # -- after a forget, and reports -----------------------------------------------------------------

    def scrub(self, db: Connection, gone: object, wait: float | None = None) -> bool:
        """VACUUM what the forget deleted from (scrub.PgCleanup); `wait` is SQLite's (its WAL)."""
        # This backend is only ever given its own archive (PgDatabase.backend), which maintains itself.
        return scrub.vacuum(cast(scrub.Maintained, db))

    def leftovers(self, db: Connection, is_forgotten: Callable[[str], bool]) -> tuple[int, int] | None:
        return None  # the server's files are not ours to read (docs/reliability.md, PostgreSQL)

    def sizes(self, db: Connection) -> tuple[int, int, int]:
        return int(db.scalar("SELECT pg_database_size(current_database())")), 0, 0  # no WAL or free list of its own

    def integrity(self, db: Connection) -> Check:
        from ...records import Check

        return Check("integrity", "ok", "PostgreSQL keeps its own pages consistent (no file check here)")

    @contextmanager
    def temp_in_memory(self, db: Connection) -> Iterator[None]:
        yield  # PostgreSQL has no statement journals to keep in memory

    # -- vectors (pg_vectors.py): pgvector where the archive has it, else the process's matrices ---------

    def vector_index(self, db: Connection) -> pg_vectors.PgVectors | None:
        if pg_vectors.present(db):
            return pg_vectors.PG_VECTORS
        pg_vectors.warn_once()
        return None

    def vector_check(self, db: Connection) -> Check:
        return pg_vectors.check(db)

    def adopt_vector_index(self, db: Connection) -> None:
        pg_vectors.adopt(db)


POSTGRES = PostgresBackend()
