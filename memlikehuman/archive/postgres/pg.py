"""The PostgreSQL connection (psycopg 3): the same interface as the SQLite ``Database``.

The archive modules write one SQL dialect, SQLite's, with ``?`` and ``:name`` parameters. A
``PgConnection`` passes each statement through ``translate`` (cached): parameters become psycopg's
``%s`` / ``%(name)s``, and the few SQLite spellings the code uses get their PostgreSQL form (listed
in _REWRITES). Functions SQLite has and PostgreSQL lacks (``total``, ``group_concat``,
``unixepoch``, ``json_group_array``) are created by the schema (archive/postgres/pg_schema.py).

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

from ...errors import InvalidArgument, Unavailable
from ..connection import Params, Row
from .backend import POSTGRES
from .pg_fulltext import PLAN_PER_CALL

_ROWID = "mlh_inserted_rowid"
# Any constant: the one advisory lock every write transaction of an archive takes.
WRITE_LOCK = 0x6D6C68  # "mlh"
SETTING = "MEMLIKEHUMAN_DB (or --db)"
# pg_checkpoint: PostgreSQL 15 and later; before, only a superuser may.
_MAY_CHECKPOINT = (
    "SELECT rolsuper OR EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'pg_checkpoint'"
    " AND pg_has_role(r.oid, 'USAGE')) AS may FROM pg_roles WHERE rolname = current_user"
)
# How long a forget's VACUUM FULL waits for other transactions' locks (PgDatabase.vacuum).
REWRITE_LOCK_WAIT = "2s"

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
# An INSERT into these tables returns its new key, so last_insert_rowid costs no round trip.
_RETURNING = {"events": "sequence", "memories": "id"}
_INSERT = re.compile(r"^\s*INSERT INTO (\w+) \([^)]*\) VALUES \([^()]*\)\s*$")
_PIECES = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|\?|(?<!:):(\w+)|%")


def redacted(url: str) -> str:
    """The URL without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1@", url)


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

    sql = _PIECES.sub(piece, sql)
    insert = _INSERT.match(sql)
    if insert and insert.group(1) in _RETURNING:
        sql += f" RETURNING {_RETURNING[insert.group(1)]} AS {_ROWID}"
    return sql


def _number(data: Any) -> int | float:
    value = Decimal(bytes(data).decode())
    return int(value) if value == value.to_integral_value() else float(value)


class PgConnection:
    """The connection a write or read transaction yields: apsw's execute/changes/last_insert_rowid."""

    backend = POSTGRES

    def __init__(self, conn: Any) -> None:
        self.raw = conn
        self._changes = 0
        self._inserted: int | None = None

    def execute(self, sql: str, params: Params = ()) -> Any:
        cursor = self.raw.cursor()
        statement = translate(sql)
        # psycopg prepares a statement run 5 times; after 5 more the server may keep one generic plan.
        # A full-text query's best plan depends on its terms (a speaker's name is in a third of the
        # rows): those are never prepared, so each call is planned with its values.
        prepare = False if PLAN_PER_CALL in statement else None
        cursor.execute(statement, params if params else None, prepare=prepare)
        self._changes = max(cursor.rowcount, 0)
        returning = statement.endswith(f" AS {_ROWID}")
        self._inserted = int(cursor.fetchone()[_ROWID]) if returning else None
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
        if self._inserted is not None:
            inserted, self._inserted = self._inserted, None
            return inserted
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
        raise Unavailable(f"cannot connect to the PostgreSQL archive ({_first_line(exc)}): {_hint(exc)}") from None
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
    # Settings for queries of milliseconds, for this connection: JIT compiled a full-text query over
    # a common word (costed high) in about a second, and parallel workers cost more to start than
    # they save on the few thousand rows a recall reads.
    conn.execute("SET jit = off; SET max_parallel_workers_per_gather = 0", prepare=False)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


# What to do about a failed connection, by a piece of libpq's message (else: _HINT_OTHER).
_HINTS = (
    (re.compile(r'database ".*" does not exist'), f"create the database (docs/team.md) or fix {SETTING}"),
    (
        re.compile(
            r'role ".*" does not exist|authentication failed|no pg_hba.conf entry|permission denied for database'
        ),
        f"fix the user or password in {SETTING}, or have the role given access (docs/team.md)",
    ),
    (
        re.compile(r"No such file or directory|Connection refused|timeout expired|could not translate host"),
        f"start the server or fix {SETTING}",
    ),
)
_HINT_OTHER = f"start the server, or fix {SETTING}"


def _hint(exc: BaseException) -> str:
    text = str(exc)
    return next((hint for pattern, hint in _HINTS if pattern.search(text)), _HINT_OTHER)


def _no_rights(exc: BaseException) -> Unavailable:
    return Unavailable(
        f"the PostgreSQL role of {SETTING} lacks a right on the archive ({_first_line(exc)}): grant the rights"
        f" docs/team.md lists, or set {SETTING} to a role that has them"
    )


def _out_of_reach(exc: BaseException) -> Unavailable:
    return Unavailable(
        f"the PostgreSQL archive is out of reach ({_first_line(exc)}): retry; the next call reconnects. If it"
        f" stays, start the server or fix {SETTING}"
    )


class PgDatabase:
    """An open PostgreSQL archive with the interface of archive.db.Database."""

    backend = POSTGRES

    def __init__(self, url: str) -> None:
        self.url = url
        self.label = redacted(url)
        self.pgvector: bool | None = None  # whether vectors live in pgvector's column (pg_vectors.present)
        self.path = Path(url)
        self.raw = _connect(url)
        self.conn = PgConnection(self.raw)
        self._lock = threading.RLock()
        self._depth = 0

    def data_version(self) -> int:
        """A number that changes when another connection writes vectors (archive_writes, pg_schema.py)."""
        return int(self.scalar("SELECT coalesce(sum(n), 0) FROM archive_writes WHERE pid <> pg_backend_pid()"))

    def vacuum(self, tables: Sequence[str], *, full: bool = False) -> None:
        """VACUUM these tables (outside any transaction): dead rows, their TOAST and index entries go.

        INDEX_CLEANUP ON: the default (AUTO) leaves the index entries when few rows died. ``full``:
        VACUUM FULL, which copies each table into new files under an exclusive lock; it waits at
        most REWRITE_LOCK_WAIT for other transactions' locks (else Unavailable), so that waiting
        request does not hold up every other server's reads behind it.
        """
        with self._lock, self._guard():
            if not full:
                self.raw.execute("VACUUM (INDEX_CLEANUP ON) " + ", ".join(tables))
                return
            self.raw.execute(f"SET lock_timeout = '{REWRITE_LOCK_WAIT}'")
            try:
                self.raw.execute("VACUUM (FULL) " + ", ".join(tables))
            finally:
                self.raw.execute("RESET lock_timeout")

    def owns(self, tables: Sequence[str]) -> bool:
        """Whether the role has its tables' owner's rights (VACUUM skips other tables with a warning)."""
        sql = "SELECT bool_and(pg_has_role(relowner, 'USAGE')) AS owns FROM pg_class WHERE oid = ANY(?::regclass[])"
        return bool(self.scalar(sql, (list(tables),)))

    def size(self, tables: Sequence[str]) -> int:
        """The bytes of these tables with their TOAST and indexes."""
        sql = "SELECT coalesce(sum(pg_total_relation_size(oid)), 0) AS n FROM pg_class WHERE oid = ANY(?::regclass[])"
        return int(self.scalar(sql, (list(tables),)))

    def checkpoint(self) -> bool:
        """CHECKPOINT when the role may (superuser or pg_checkpoint): changed pages go to the files now."""
        may = (
            "SELECT rolsuper OR pg_has_role('pg_checkpoint', 'USAGE') AS may FROM pg_roles WHERE rolname = current_user"
        )
        if not self.scalar(may):
            return False
        with self._lock, self._guard():
            self.raw.execute("CHECKPOINT")
        return True

    def close(self, *, checkpoint: bool = True) -> None:
        """Close the connection (idempotent); checkpoint is SQLite's concern (the server checkpoints here)."""
        with self._lock:
            self.raw.close()

    def __del__(self) -> None:
        # Like an apsw connection, an archive dropped without close() closes quietly.
        with suppress(Exception):
            self.raw.close()

    def query(self, sql: str, params: Params = ()) -> list[Row]:
        with self._lock, self._guard():
            return list(self.conn.execute(sql, params).fetchall())

    def stream(self, sql: str, params: Params = ()) -> Iterator[tuple[Any, ...]]:
        from psycopg.rows import tuple_row

        with self._lock, self._guard():
            cursor = self.raw.cursor(row_factory=tuple_row)
            cursor.execute(translate(sql), params if params else None)
            yield from cursor

    def one(self, sql: str, params: Params = ()) -> Row | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Params = ()) -> Any:
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
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            with self._guard():
                self._begin(begin, lock)
            self._depth = 1
            try:
                with self._guard():
                    yield self.conn
            except BaseException:
                self._depth = 0
                self._rollback()
                raise
            self._depth = 0
            with self._guard():
                self.raw.execute("COMMIT")

    def _begin(self, begin: str, lock: bool) -> None:
        """BEGIN (and the write lock); once more on a new connection when the old one was lost."""
        import psycopg

        try:
            self._execute_begin(begin, lock)
        except psycopg.OperationalError:
            if not self.raw.closed:
                raise
            self._reconnect()
            self._execute_begin(begin, lock)

    def _execute_begin(self, begin: str, lock: bool) -> None:
        # One simple query, one round trip: the BEGIN and (writers) the archive's lock.
        lock_sql = f"; SELECT pg_advisory_xact_lock({WRITE_LOCK})" if lock else ""
        self.raw.execute(begin + lock_sql, prepare=False)

    def _reconnect(self) -> None:
        """A new connection in place of a lost one (the server restarted, or the network broke)."""
        self.raw = _connect(self.url)
        self.conn = PgConnection(self.raw)

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """The server's and the connection's failures as coded errors; outside a transaction, a
        connection lost earlier is replaced first."""
        import psycopg

        if not self._depth and self.raw.closed:
            self._reconnect()
        try:
            yield
        except psycopg.errors.InsufficientPrivilege as exc:
            raise _no_rights(exc) from None
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise _out_of_reach(exc) from None

    def _rollback(self) -> None:
        import psycopg

        with suppress(psycopg.Error):
            self.raw.execute("ROLLBACK")
