"""The one seam between the archive and the engine it lives in: SQLite (a file) or PostgreSQL (a team database).

Everything the two engines do differently sits behind ``Backend``, implemented by
``archive/sqlite/backend.py`` and ``archive/postgres/backend.py``; the archive object carries its
backend from the moment it opens (``Database.backend``, ``PgDatabase.backend``), and the connection a
write transaction yields carries the same one (SQLite's raw connection does not: ``backend_of`` gives
it SQLite's). No module outside the two backends asks which engine it runs on
(tests/test_layering.py holds that).

What differs:
- full text: writing a record's rows, clearing, counting, scoring a query with bm25, the newest
  matches, the records holding a phrase or a word in one column (FTS5 tables against postings tables
  scored the same way);
- inserting many events at once (one INSERT ... SELECT through a TEMP table against executemany);
- the schema: the list of migrations, the ledger, the version;
- after a forget: what is scrubbed from the files, and what stays (``residue``); copies of forgotten
  rows the files still hold (``leftovers``, for the doctor);
- size and integrity reports; SQLite's in-memory temporary storage for bulk writes;
- vectors: whether the engine itself searches them (``vector_index``: PostgreSQL with pgvector) or
  index/vectors.py scans them in the process's memory (None), and what the doctor says of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from .connection import Connection, Transaction
from .sqlite.backend import SQLITE

if TYPE_CHECKING:
    from ..records import Check, Kind, Scope  # reports.py: a hook's path never loads it
    from .db import Gone


class VectorIndex(Protocol):
    """Top-k and cosines answered by the archive's engine (archive/postgres/pg_vectors.py), not by a matrix."""

    def top(
        self,
        db: Connection,
        kind: Kind,
        model: str,
        scope: Scope,
        queries: Sequence[Sequence[float]],
        ks: Sequence[int],
        *,
        window: int | None,
        allowed: Sequence[int] | None,
    ) -> tuple[list[list[tuple[int, float]]], int, int]: ...
    def cosines(
        self, db: Connection, kind: Kind, model: str, query: Sequence[float], wanted: Sequence[int]
    ) -> dict[int, float]: ...


class Backend(Protocol):
    name: str  # "sqlite" or "postgres", for messages and reports

    @property
    def residue(self) -> str: ...  # what a forget leaves readable for a while (ForgetResult.residue)

    # -- full text ---------------------------------------------------------------------------------
    def fulltext_write(
        self, conn: Transaction, table: str, columns: str, rowid: int, values: Sequence[str], *, delete: bool = False
    ) -> None: ...
    def fulltext_write_many(
        self, conn: Transaction, table: str, columns: str, rows: Sequence[tuple[int, Sequence[str]]]
    ) -> None: ...
    def fulltext_table_exists(self, conn: Transaction, table: str) -> bool: ...
    def fulltext_clear(self, conn: Transaction, table: str) -> None: ...
    def fulltext_records(self, db: Connection, table: str) -> int: ...
    def fulltext_check(self, db: Connection, table: str) -> None: ...
    def fulltext_scored(
        self,
        db: Connection,
        table: str,
        words: Sequence[str],
        weights: Sequence[float],
        counts: dict[str, int] | None,
        floor: int | None,
    ) -> tuple[str, str, str, dict[str, Any]]: ...
    def fulltext_count(self, db: Connection, table: str, word: str) -> int: ...
    def fulltext_nth_newest(
        self, db: Connection, table: str, words: Sequence[str], offset: int, span: tuple[int, int]
    ) -> int | None: ...
    def memories_with_phrase(self, content: str) -> tuple[str, list[Any]]: ...
    def fulltext_matching(self, table: str, word: str, column: int) -> tuple[str, str, dict[str, Any]]: ...

    # -- rows, schema, forgetting, reports -----------------------------------------------------------
    def insert_events(
        self, conn: Transaction, insert_sql: str, names: str, rows: Sequence[Sequence[Any]]
    ) -> list[int]: ...
    def migrations(self) -> Sequence[Callable[[Any], None]]: ...
    def prepare_ledger(self, db: Connection) -> None: ...
    def schema_version(self, db: Connection) -> int: ...
    def scrub(self, db: Connection, gone: Gone, wait: float | None = None) -> bool: ...
    def leftovers(self, db: Connection, is_forgotten: Callable[[str], bool]) -> tuple[int, int] | None: ...
    def sizes(self, db: Connection) -> tuple[int, int, int]: ...
    def integrity(self, db: Connection) -> Check: ...
    def temp_in_memory(self, db: Connection) -> AbstractContextManager[None]: ...

    # -- vectors -------------------------------------------------------------------------------------
    def vector_index(self, db: Connection) -> VectorIndex | None: ...
    def vector_check(self, db: Connection) -> Check | None: ...
    def adopt_vector_index(self, db: Connection) -> None: ...


def backend_of(db_or_conn: Connection | Transaction) -> Backend:
    """The backend of an open archive, or of the connection one of its transactions yields."""
    found: Backend | None = getattr(db_or_conn, "backend", None)
    return SQLITE if found is None else found
