"""Rebuilding the derived indexes (full-text rows, vectors) from the stored records.

Both work in committed batches: an interruption keeps what is done, and running again with
``missing_only`` finishes the job. A full rebuild first empties the index, so until it has run
to the end (or a ``missing_only`` run finished it) searches see only part of the archive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..archive import fulltext
from ..archive.connection import Connection
from ..archive.fulltext import Progress
from ..errors import InvalidArgument
from .indexer import Indexer, index_pending

if TYPE_CHECKING:
    from ..records import RebuildResult


def rebuild_fulltext(
    db: Connection, *, missing_only: bool, progress: Progress | None = None, batch: int = fulltext.BATCH
) -> RebuildResult:
    """Write the full-text row of every event and memory (or of those lacking one); return the counts."""
    if not missing_only:
        fulltext.clear(db)
    return fulltext.fill_missing(db, progress, batch)


def rebuild_vectors(indexer: Indexer, *, missing_only: bool, progress: Progress | None = None) -> int:
    """Embed every event and memory (or those lacking a vector of the configured model); return how many.

    Raises InvalidArgument when no embedder is configured, Unavailable when the embedder fails
    (the batches written before stay).
    """
    if indexer.embedder() is None:
        raise InvalidArgument("no embedder is configured (MEMLIKEHUMAN_EMBEDDER=none): set it to local or openai")
    if not missing_only:
        with indexer.db.write() as conn:
            conn.execute("DELETE FROM event_vectors")
            conn.execute("DELETE FROM memory_vectors")
        indexer.cache.clear()
    return index_pending(indexer, progress)
