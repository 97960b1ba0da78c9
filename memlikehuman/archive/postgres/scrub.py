"""What a forget on PostgreSQL cleans after its commit: VACUUM of the tables it deleted from (PgCleanup)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..connection import Connection

log = logging.getLogger("memlikehuman")


# The PostgreSQL tables a forget deletes from (docs/reliability.md says what VACUUM leaves).
POSTGRES_TABLES = (
    "events",
    "cues",
    "memories",
    "corrections",
    "event_vectors",
    "memory_vectors",
    "checkpoints",
    "extraction_claims",
    "event_dates",
    "alias_evidence",
    "events_fts",
    "events_fts_terms",
    "memories_fts",
    "memories_fts_terms",
    "events_ngrams",
    "events_ngrams_terms",
    "memories_ngrams",
    "memories_ngrams_terms",
    "events_passages",
    "events_passages_terms",
)


@dataclass(frozen=True)
class PgCleanup:
    """What a forget on PostgreSQL runs after its commit (measurements: docs/reliability.md, "PostgreSQL").

    ``vacuum``: VACUUM (INDEX_CLEANUP ON) of these tables: dead rows, their TOAST chunks and index
    entries go, but PostgreSQL does not zero the space they leave, so their bytes stay in the pages
    until new rows overwrite them. ``rewrite``: VACUUM FULL of these instead, while together (with
    TOAST and indexes) they are at most ``rewrite_bytes``: each is copied into new files and the old
    ones are truncated, so nothing of the deleted rows stays in their files. It holds an exclusive
    lock for as long as it runs, so above that size it is left out. ``checkpoint``: then a
    CHECKPOINT, when the role may (superuser or pg_checkpoint), so the files get the cleaned pages
    now instead of at the next checkpoint (up to checkpoint_timeout, 5 min by default, later).
    """

    vacuum: tuple[str, ...] = POSTGRES_TABLES
    rewrite: tuple[str, ...] = ("events", "memories")
    rewrite_bytes: int = 128 * 2**20
    checkpoint: bool = True


POSTGRES_CLEANUP = PgCleanup()


class Maintained(Connection, Protocol):
    """What the cleanup asks of a PostgreSQL archive (pg.PgDatabase) beyond any archive's connection."""

    def owns(self, tables: Sequence[str]) -> bool: ...
    def size(self, tables: Sequence[str]) -> int: ...
    def vacuum(self, tables: Sequence[str], *, full: bool = False) -> None: ...
    def checkpoint(self) -> bool: ...


def vacuum(db: Maintained, cleanup: PgCleanup | None = None) -> bool:
    """Clean what a forget deleted from (``PgCleanup``); False when the VACUUM could not run."""
    cleanup = cleanup or POSTGRES_CLEANUP
    tables = (*cleanup.vacuum, *cleanup.rewrite)
    try:
        if tables and not db.owns(tables):
            log.warning("memory_forget: the role does not own the archive's tables, so it may not VACUUM them")
            return False
        rewrite = cleanup.rewrite if db.size(cleanup.rewrite) <= cleanup.rewrite_bytes else ()
        if vacuum := tuple(table for table in cleanup.vacuum if table not in rewrite):
            db.vacuum(vacuum)
        if rewrite:
            db.vacuum(rewrite, full=True)
    except Exception as exc:  # noqa: BLE001 - the forget has committed: report, never fail it
        log.warning("memory_forget: VACUUM after the forget failed (%s); dead rows stay until autovacuum", exc)
        return False
    try:
        if cleanup.checkpoint and not db.checkpoint():
            log.info("memory_forget: no CHECKPOINT (the role lacks pg_checkpoint); the files follow at the next one")
    except Exception as exc:  # noqa: BLE001 - as above
        log.warning("memory_forget: CHECKPOINT after the forget failed (%s)", exc)
    return True
