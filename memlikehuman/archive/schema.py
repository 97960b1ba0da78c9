"""Bringing an archive's schema up to date: its backend's list of migrations, applied in order.

SQLite's list is archive/migrations.py, PostgreSQL's archive/postgres/pg_schema.py; both record each
applied migration in the same ledger table, each in one write transaction with its ledger row.
"""

from __future__ import annotations

from ..clock import now_stamp
from .backend import backend_of
from .connection import Connection


def schema_version(db: Connection) -> int:
    """How many migrations the archive has applied (0 for a new one)."""
    return backend_of(db).schema_version(db)


def latest(db: Connection) -> int:
    """How many migrations this memlikehuman has for the archive's backend."""
    return len(backend_of(db).migrations())


def migrate(db: Connection, upto: int | None = None) -> int:
    """Apply pending migrations, each in its own transaction; return the schema version.

    ``upto``: apply only the first ``upto`` migrations (an archive of an older schema, for tests).
    """
    backend = backend_of(db)
    backend.prepare_ledger(db)
    # Read without the write lock: an archive already up to date (every open of every hook and
    # command) takes no write transaction at all.
    applied = {row["id"] for row in db.query("SELECT id FROM schema_migrations")}
    for number, fn in enumerate(backend.migrations()[:upto], start=1):
        if number in applied:
            continue
        with db.write() as conn:
            # Re-checked inside the write lock: another process may have just applied it.
            if db.scalar("SELECT 1 FROM schema_migrations WHERE id = ?", (number,)):
                continue
            fn(conn)
            conn.execute(
                "INSERT INTO schema_migrations (id, name, applied_at) VALUES (?, ?, ?)",
                (number, fn.__name__, now_stamp()),
            )
    return schema_version(db)
