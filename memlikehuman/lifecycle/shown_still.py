"""Whether what an extraction model was shown is still in the archive as shown (issue 15, review).

A memory forgotten or corrected away, or an event forgotten, while the model was answering may be
restated in its answer: stored, it would bring back what the user took out.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..archive.db import Database, placeholders


def unchanged(db: Database, rowids: Sequence[int], sequences: Sequence[int]) -> bool:
    """Whether the shown memories are all still there and not revoked, and the shown events all still
    exist (call it inside the write transaction that would store the answer)."""
    if rowids:
        sql = f"SELECT count(*) FROM memories WHERE id IN ({placeholders(rowids)}) AND revoked_at IS NULL"
        if db.scalar(sql, tuple(rowids)) != len(set(rowids)):
            return False
    if sequences:
        sql = f"SELECT count(*) FROM events WHERE sequence IN ({placeholders(sequences)})"
        return bool(db.scalar(sql, tuple(sequences)) == len(set(sequences)))
    return True
