"""What every open archive offers, whichever engine holds it: the types callers import.

``Connection`` is an open archive (``open_database`` returns one): reads outside a transaction,
read and write transactions, and what messages and the vector cache need to know of it. It is
implemented by ``archive.db.Database`` (a SQLite file) and ``archive.postgres.pg.PgDatabase``, and
by nothing outside archive/ (tests/test_surface.py holds both). ``Transaction`` is what a
transaction yields: apsw's connection, or ``PgConnection`` with the same four methods. A
statement's rows are dicts (``Row``) on both.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

Row = dict[str, Any]
# A statement's parameters: positional for "?" marks, by name for ":name" marks.
Params = Sequence[Any] | dict[str, Any]


class Cursor(Protocol):
    """The result of ``Transaction.execute``: its rows (``Row``), all, the first, or one at a time."""

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class Transaction(Protocol):
    """The handle a write or read transaction yields (``Connection.write``, ``Connection.read``)."""

    def execute(self, sql: str, params: Params = ..., /) -> Cursor: ...
    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> object: ...
    def changes(self) -> int: ...  # rows the last INSERT, UPDATE or DELETE changed
    def last_insert_rowid(self) -> int: ...


class Connection(Protocol):
    """An open archive: a SQLite file (``Database``) or a PostgreSQL database (``PgDatabase``)."""

    @property
    def label(self) -> str: ...  # the archive for messages and logs (a URL without its password)
    @property
    def path(self) -> Path: ...

    def query(self, sql: str, params: Params = ..., /) -> list[Row]: ...
    def one(self, sql: str, params: Params = ..., /) -> Row | None: ...
    def scalar(self, sql: str, params: Params = ..., /) -> Any: ...
    def stream(self, sql: str, params: Params = ..., /) -> Iterator[tuple[Any, ...]]: ...
    def write(self) -> AbstractContextManager[Transaction]: ...
    def read(self) -> AbstractContextManager[Transaction]: ...
    def data_version(self) -> int: ...
    def close(self, *, checkpoint: bool = True) -> None: ...
