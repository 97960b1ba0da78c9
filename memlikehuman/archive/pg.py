"""The PostgreSQL connection (psycopg 3): the same interface as the SQLite ``Database``.

The archive modules write one SQL dialect, SQLite's, with ``?`` and ``:name`` parameters. A
``PgConnection`` passes each statement through ``translate`` (cached): parameters become psycopg's
``%s`` / ``%(name)s``, and the few SQLite spellings the code uses get their PostgreSQL form (listed
in _REWRITES). Functions SQLite has and PostgreSQL lacks (``total``, ``group_concat``,
``unixepoch``, ``json_group_array``) are created by the schema (archive/pg_schema.py).

Writers are serialized as SQLite serializes them: every write transaction first takes one
transaction-level advisory lock of the archive. So sequences are assigned in commit order (the
coverage sequence increases strictly in commit order, as with SQLite's one writer), and a
read-then-write inside a write transaction is safe across servers. Read transactions run at
REPEATABLE READ: every query inside sees one snapshot.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import InvalidArgument, Unavailable

Row = dict[str, Any]
# Any constant: the one advisory lock every write transaction of an archive takes.
WRITE_LOCK = 0x6D6C68  # "mlh"
SETTING = "MEMLIKEHUMAN_DB (or --db)"
URL_PREFIXES = ("postgresql://", "postgres://")

_REWRITES = (
    (re.compile(r"\s+NOT INDEXED\b"), ""),
    # SQLite's CROSS JOIN ... ON is an inner join that fixes the loop order.
    (re.compile(r"\bCROSS JOIN(\s+\w+\s+\w+\s+ON)\b"), r"JOIN\1"),
    (re.compile(r"\btemp\."), "pg_temp."),
    # An empty list: SQLite's x IN () is false and x NOT IN () true, for any x.
    (re.compile(r"\bNOT IN \(\)"), "<> ALL('{}')"),
    (re.compile(r"\bIN \(\)"), "= ANY('{}')"),
    (re.compile(r"\bjson_object\("), "json_build_object("),
    # SQLite's substr(x, -n) is the last n characters.
    (re.compile(r"\bsubstr\(([\w.]+), -(\d+)\)"), r"right(\1, \2)"),
)
_PIECES = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|\?|(?<!:):(\w+)|%")


def redacted(url: str) -> str:
    """The URL without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1@", url)


def is_url(target: str | Path) -> bool:
    """Whether an archive setting names a PostgreSQL database rather than a SQLite file."""
    return isinstance(target, str) and target.startswith(URL_PREFIXES)


@lru_cache(maxsize=2048)
def translate(sql: str) -> str:
    """One statement of the archive's SQLite dialect in PostgreSQL's, with psycopg's parameters."""
    for pattern, replacement in _REWRITES:
        sql = pattern.sub(replacement, sql)

    def piece(match: re.Match[str]) -> str:
        text = match.group(0)
        if text == "?":
            return "%s"
        if text == "%":
            return "%%"
        if match.group(1):
            return f"%({match.group(1)})s"
        return text.replace("%", "%%")

    return _PIECES.sub(piece, sql)


def _number(data: Any) -> int | float:
    value = Decimal(bytes(data).decode())
    return int(value) if value == value.to_integral_value() else float(value)


class PgConnection:
    """The connection a write or read transaction yields: apsw's execute/changes/last_insert_rowid."""

    dialect = "postgres"

    def __init__(self, conn: Any) -> None:
        self.raw = conn
        self._changes = 0

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        cursor = self.raw.cursor()
        cursor.execute(translate(sql), params if params else None)
        self._changes = max(cursor.rowcount, 0)
        return cursor

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        cursor = self.raw.cursor()
        cursor.executemany(translate(sql), list(rows))
        self._changes = max(cursor.rowcount, 0)

    def script(self, sql: str) -> None:
        """Several statements without parameters, as one simple query (schema migrations)."""
        self.raw.execute(sql, prepare=False)

    def changes(self) -> int:
        return self._changes

    def last_insert_rowid(self) -> int:
        return int(self.raw.execute("SELECT lastval()").fetchone()["lastval"])


def _connect(url: str) -> Any:
    try:
        import psycopg
        from psycopg.rows import dict_row
    except ImportError:
        raise Unavailable(
            f'{SETTING} names a PostgreSQL database, but psycopg is not installed: pip install "memlikehuman[postgres]"'
        ) from None
    try:
        conn = psycopg.connect(url, autocommit=True, row_factory=dict_row, connect_timeout=10)
    except psycopg.ProgrammingError as exc:
        raise InvalidArgument(f"{SETTING} is not a valid PostgreSQL URL ({_first_line(exc)}): fix it") from None
    except psycopg.OperationalError as exc:
        raise Unavailable(
            f"cannot connect to the PostgreSQL archive ({_first_line(exc)}): start the server or fix {SETTING}"
        ) from None
    _adapt(conn)
    return conn


# PostgreSQL text cannot hold NUL, SQLite's can: a NUL is stored as this noncharacter and read back as
# NUL (a text holding U+10FFFE itself reads back with NUL there; docs/team.md).
NUL_STAND_IN = "\U0010fffe"


def _adapt(conn: Any) -> None:
    """Numbers as int/float (sums are numeric), and text with NUL stored and read back whole."""
    from psycopg.adapt import Loader
    from psycopg.types.string import StrDumperUnknown, TextLoader

    class NumberLoader(Loader):
        def load(self, data: Any) -> int | float:
            return _number(data)

    class NulDumper(StrDumperUnknown):
        def dump(self, obj: str) -> Any:
            return super().dump(obj.replace("\x00", NUL_STAND_IN) if "\x00" in obj else obj)

    class NulLoader(TextLoader):
        def load(self, data: Any) -> str:
            text = str(super().load(data))
            return text.replace(NUL_STAND_IN, "\x00") if NUL_STAND_IN in text else text

    conn.adapters.register_loader("numeric", NumberLoader)
    conn.adapters.register_dumper(str, NulDumper)
    conn.adapters.register_loader("text", NulLoader)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class PgDatabase:
    """An open PostgreSQL archive with the interface of archive.db.Database."""

    dialect = "postgres"

    def __init__(self, url: str) -> None:
        self.url = url
        self.label = redacted(url)
        self.path = Path(url)
        self.raw = _connect(url)
        self.conn = PgConnection(self.raw)
        self._lock = threading.RLock()
        self._depth = 0

    def data_version(self) -> int:
        """A number that changes when another connection writes vectors (archive_writes, pg_schema.py)."""
        return int(self.scalar("SELECT coalesce(sum(n), 0) FROM archive_writes WHERE pid <> pg_backend_pid()"))

    def vacuum(self, tables: Sequence[str]) -> None:
        """VACUUM these tables (outside any transaction): dead rows and their index entries go."""
        with self._lock:
            self.raw.execute("VACUUM " + ", ".join(tables))

    def close(self) -> None:
        with self._lock:
            self.raw.close()

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Row]:
        with self._lock:
            return list(self.conn.execute(sql, params).fetchall())

    def stream(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Iterator[tuple[Any, ...]]:
        from psycopg.rows import tuple_row

        with self._lock:
            cursor = self.raw.cursor(row_factory=tuple_row)
            cursor.execute(translate(sql), params if params else None)
            yield from cursor

    def one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Row | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        row = self.one(sql, params)
        return None if row is None else next(iter(row.values()))

    @contextmanager
    def write(self) -> Iterator[PgConnection]:
        """A write transaction holding the archive's write lock; nested calls join the outer one."""
        with self._transaction("BEGIN", lock=True) as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[PgConnection]:
        """A read transaction: every query inside sees one snapshot."""
        with self._transaction("BEGIN ISOLATION LEVEL REPEATABLE READ", lock=False) as conn:
            yield conn

    @contextmanager
    def _transaction(self, begin: str, *, lock: bool) -> Iterator[PgConnection]:
        import psycopg

        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            try:
                self.raw.execute(begin)
                if lock:
                    self.raw.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            except psycopg.OperationalError as exc:
                raise Unavailable(f"the PostgreSQL archive is out of reach ({_first_line(exc)}): retry") from None
            self._depth = 1
            try:
                yield self.conn
            except BaseException:
                self._depth = 0
                self._rollback()
                raise
            self._depth = 0
            self.raw.execute("COMMIT")

    def _rollback(self) -> None:
        import psycopg

        with suppress(psycopg.Error):
            self.raw.execute("ROLLBACK")
