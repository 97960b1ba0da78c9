"""The rows that migrations leave to today's code, written after `migrate` (Engine opens an archive)."""

from __future__ import annotations

from . import alias_evidence, fulltext
from .backend import backend_of
from .connection import Connection


def complete(db: Connection, seconds: float | None) -> None:
    """Rows that migrations leave to today's code, written in committed batches (an interruption keeps them):
    the n-gram index of m006, the alias evidence of m009 (p002) and the passage index of m013 (p007); none
    started after `seconds`. Without a bound (a server or a command, not a hook) also the vector index the
    engine may have gained since (PostgreSQL: pgvector installed after the archive was made)."""
    if seconds is None:
        backend_of(db).adopt_vector_index(db)
    ngrams, aliases, passages = fulltext.ngrams_behind(db), alias_evidence.behind(db), fulltext.passages_behind(db)
    if not (ngrams or aliases or passages):
        return
    import logging  # not on a hook's path to an up-to-date archive
    import time

    log = logging.getLogger("memlikehuman")
    deadline = None if seconds is None else time.monotonic() + seconds
    if ngrams:
        fulltext.complete_ngrams(db, fulltext.logged_progress(log, "n-gram full-text index (schema 6)"), deadline)
    if aliases:
        label = "speaker-alias evidence (schema 9), by event sequence"
        alias_evidence.complete(db, fulltext.logged_progress(log, label), deadline=deadline)
    if passages:
        fulltext.complete_passages(db, fulltext.logged_progress(log, "passage full-text index (schema 13)"), deadline)
