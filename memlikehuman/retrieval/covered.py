"""Memories standing in for the events recall's raw fallback left out as covered (gaps.py).

Events and memories are scored on their own scales, so without this a covered event's memory could
rank far below the raw event it replaces (bench/extraction.py: memories + raw scored lower than raw only).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..archive.connection import Connection
from . import ranking, search
from .search import Filters


def ranked(
    db: Connection, filters: Filters, scores: dict[int, float], covered: Mapping[int, tuple[float, bool]]
) -> dict[int, float]:
    """Memory scores where each covered event passes its score to its best memory.

    `covered`: event sequence -> (its score, whether its own text holds a query word). The best
    memory is the best-scoring current one; one that matched no query word stands in for its event
    only when the event's own text holds a query word (not when only context ranked it).
    """
    if not covered:
        return scores
    marks = ",".join("?" * len(covered))
    rows = db.query(f"SELECT id, event_sequence FROM memories WHERE event_sequence IN ({marks})", tuple(covered))
    ids = [row["id"] for row in rows]
    # Current ones only: with include_history, a superseded version keeps its own (lower) rank.
    eligible = search.eligible_memories(db, ids, filters) - search.closed_by_as_of(db, ids, filters.as_of)
    pairs = [(row["id"], row["event_sequence"]) for row in rows]
    return ranking.with_covered(scores, covered, pairs, eligible)
