"""The SQLite connection: bundled SQLite (apsw), pragmas, and transactions.

One ``Database`` per process and archive file. apsw connections are safe to share between
threads; the re-entrant lock keeps each transaction to one thread at a time, which is what the
MCP SDK's worker threads need.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import apsw

from .. import files
from ..errors import InvalidArgument, Unavailable, unreadable
from .connection import Connection, Params, Row

BUSY_TIMEOUT_MS = 30_000
LOCKED = "the archive stayed locked by another process for 30 s: retry the call"
PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA foreign_keys=ON",
    # Freed pages are zeroed, so deleted text does not linger in the file.
    "PRAGMA secure_delete=ON",
    # FULL: a returned memory_record survives power loss, not only a crash.
    "PRAGMA synchronous=FULL",
)


# What a forget deleted, by table: the texts, and the row keys they had (a backend's scrub reads it).
Gone = dict[str, tuple[list[str], list[int]]]


def unscrubbed_marker(path: Path) -> Path:
    """The file beside the archive that says a forget could not truncate its WAL (archive/sqlite/scrub.py)."""
    return path.with_name(path.name + "-unscrubbed")


def placeholders(values: Iterable[Any]) -> str:
    """One "?" per value, comma-separated: for ``IN (...)`` lists."""
    return ",".join("?" for _ in values)


def _dict_row(cursor: apsw.Cursor, row: tuple[Any, ...]) -> Row:
    return {name: value for (name, _), value in zip(cursor.get_description(), row, strict=True)}


def _plain_row(cursor: apsw.Cursor, row: tuple[Any, ...]) -> tuple[Any, ...]:
    return row


class _Rows:
    """A cursor's row tracer that reads the column names once, not once per row (``Database.query``).

    get_description() builds a new tuple of tuples on every call: per row that was about a tenth
    of a fast recall's time at 100k events.
    """

    def __init__(self) -> None:
        self.names: tuple[str, ...] | None = None

    def __call__(self, cursor: apsw.Cursor, row: tuple[Any, ...]) -> Row:
        if self.names is None or len(self.names) != len(row):
            self.names = tuple(name for name, _ in cursor.get_description())
        return dict(zip(self.names, row, strict=True))


def _set_pragmas(conn: apsw.Connection, seconds: float = BUSY_TIMEOUT_MS / 1000) -> None:
    """PRAGMAS, retried on SQLITE_BUSY for at most `seconds` in all.

    SQLite answers busy at once, without calling the busy handler, when several processes open a new
    file together and one switches it to WAL while another reads its header: retrying is safe, the
    pragmas are idempotent. Each retry may wait only what is left of the time (busy timeout), and
    the connection's busy timeout is put back afterwards.
    """
    deadline = time.monotonic() + seconds
    try:
        while True:
            try:
                for pragma in PRAGMAS:
                    conn.execute(pragma).fetchall()
                return
            except apsw.BusyError:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
                conn.set_busy_timeout(max(1, int(left * 1000)))
                time.sleep(min(0.002, left))
    finally:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)


class Database:
    """An open archive file with WAL, foreign keys, secure delete and a busy timeout (its backend:
    archive/sqlite/, which backend_of gives it and its connection)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            _private_file(self.path)
        try:
            self.conn = apsw.Connection(str(self.path))
        except apsw.Error as exc:
            raise Unavailable(f"cannot open the archive {self.path}: {exc}") from None
        self.conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        self.conn.row_trace = _dict_row
        self._lock = threading.RLock()
        self._depth = 0
        try:
            _set_pragmas(self.conn)
        except apsw.BusyError:
            self.conn.close()
            raise Unavailable(LOCKED) from None
        except apsw.Error as exc:
            self.conn.close()
            raise Unavailable(unreadable(self.path, exc)) from None
        except BaseException:  # an interrupt while waiting: the connection is not kept
            self.conn.close()
            raise

    @property
    def label(self) -> str:
        """The archive for messages and logs."""
        return str(self.path)

    def data_version(self) -> int:
        """A number that changes when another connection commits (PRAGMA data_version)."""
        return int(self.scalar("PRAGMA data_version"))

    def close(self, *, checkpoint: bool = True) -> None:
        """Close the connection (idempotent).

        checkpoint=False leaves the WAL as it is when this is the last connection (SQLite would
        otherwise copy it into the file and delete it): for processes that live for one hook call.
        Commits are durable either way (synchronous=FULL); a server's or command's close, forget
        (which truncates the WAL) or SQLite's auto-checkpoint (at 1,000 pages) moves the pages into
        the file. While a forget could not truncate the WAL (its marker file exists), every close
        checkpoints, so the deleted text's old page images go as soon as the last connection closes;
        the close that finds the WAL gone after it removes the marker.
        """
        marker = unscrubbed_marker(self.path)
        unscrubbed = marker.exists()
        with self._lock:
            if not checkpoint and not unscrubbed:
                with suppress(apsw.ConnectionClosedError):  # already closed: nothing to leave
                    self.conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
            self.conn.close()
        if unscrubbed and not self.path.with_name(self.path.name + "-wal").exists():
            marker.unlink(missing_ok=True)  # no WAL, no old page images: hooks may skip the checkpoint again

    def query(self, sql: str, params: Params = ()) -> list[Row]:
        """Run a read statement and return all rows as dicts."""
        with self._lock:
            cursor = self.conn.cursor()
            cursor.row_trace = _Rows()
            return list(cursor.execute(sql, params))

    def stream(self, sql: str, params: Params = ()) -> Iterator[tuple[Any, ...]]:
        """The rows of a read statement as plain tuples, one at a time (for scans too large for a list).

        The connection stays locked until the iterator is exhausted or closed: consume it at once.
        """
        with self._lock:
            cursor = self.conn.cursor()
            cursor.row_trace = _plain_row
            yield from cursor.execute(sql, params)

    def one(self, sql: str, params: Params = ()) -> Row | None:
        """The first row of a read statement, or None."""
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Params = ()) -> Any:
        """The first column of the first row, or None."""
        row = self.one(sql, params)
        return None if row is None else next(iter(row.values()))

    @contextmanager
    def write(self) -> Iterator[apsw.Connection]:
        """A write transaction (BEGIN IMMEDIATE); nested calls join the outer one."""
        with self._transaction("BEGIN IMMEDIATE") as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[apsw.Connection]:
        """A read transaction: every query inside sees one snapshot."""
        with self._transaction("BEGIN DEFERRED") as conn:
            yield conn

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[apsw.Connection]:
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            try:
                self.conn.execute(begin)
            except apsw.BusyError:
                raise Unavailable(LOCKED) from None
            self._depth = 1
            try:
                yield self.conn
            except BaseException:
                self._depth = 0
                self.conn.execute("ROLLBACK")
                raise
            self._depth = 0
            self.conn.execute("COMMIT")


def _private_file(path: Path) -> None:
    """The archive file, created empty and 0600 (its directories 0700) when missing, so SQLite gives its
    -wal and -shm files the same mode; an existing one readable by others is tightened, with a line on stderr.

    Refused (Unavailable) in a directory where another user could delete or replace the archive's files
    (its WAL: a lost commit)."""
    try:
        files.private_dirs(path.parent)
        shared = files.open_to_others(path.parent)
    except OSError as exc:
        raise InvalidArgument(f"cannot create the archive directory {path.parent}: {exc}") from None
    if shared is not None:
        raise Unavailable(
            f"the archive's directory {path.parent} {shared}; move the archive (MEMLIKEHUMAN_DB) to a private"
            f" directory or chmod go-w {path.parent}"
        )
    try:
        if files.create_private(path):
            return
    except OSError as exc:
        raise Unavailable(f"cannot create the archive {path}: {exc}") from None
    beside = [path, *(path.with_name(path.name + suffix) for suffix in SIDE_SUFFIXES)]
    theirs = files.owned_by_another(beside)
    if theirs is not None:
        raise Unavailable(
            f"{theirs} belongs to another user (uid {theirs.stat().st_uid}), who could read what is written to it:"
            " use an archive of your own (--db or MEMLIKEHUMAN_DB)"
        )
    files.tighten(beside)


# Files SQLite and memlikehuman keep beside an archive, all as private as the archive.
SIDE_SUFFIXES = ("-wal", "-shm", "-unscrubbed", ".hooks.json", ".hooks.log", ".injected.json", ".replies.json",
                 ".starts.json", ".sampling.json", ".cli.json")  # fmt: skip


URL_PREFIXES = ("postgresql://", "postgres://")


def is_url(target: Path | str) -> bool:
    """Whether an archive setting names a PostgreSQL database rather than a SQLite file."""
    return isinstance(target, str) and target.startswith(URL_PREFIXES)


def open_database(target: Path | str) -> Connection:
    """The archive a setting names: a PostgreSQL URL opens a PgDatabase (archive/postgres/pg.py), else a file."""
    if is_url(target):
        from .postgres import pg  # only then: a hook's start-up stays short

        return pg.PgDatabase(str(target))
    return Database(target)
