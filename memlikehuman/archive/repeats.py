"""A fact stated again: the items skipped as repeating a current memory, kept so that forgetting the
first statement does not lose the fact while a later turn still states it (review, issues 30/31 round).

A repeat row names the memory it repeats and the event that stated it again, with the item's kind,
basis, validity start and maker, and its quote as a span of the event's text: no text of its own,
so a forget of either leaves nothing to scrub (both cascade). When a forget deletes a current memory,
its earliest surviving repeat becomes a memory of that event (lifecycle/forget.py) with the memory's
content (equal to the item's, but for case and whitespace) and subject; the later repeats then
repeat the new memory (``restore``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..text.quotes import span
from .db import placeholders
from .timeline import current_sql

if TYPE_CHECKING:
    from ..records import Candidate, Event

COLUMNS = "memory_id, event_sequence, quote_start, quote_length, kind, basis, same_subject, valid_from, extractor"


def record(conn: Any, event: Event, memory: int, item: Candidate, extractor: str | None) -> None:
    """Keep that ``event`` stated ``item`` again, a repeat of memory ``memory`` (once per pair), unless
    the memory is the event's own. A quote found only in the NFC form of the text (the quote check's)
    has no span in it: not kept.
    """
    row = conn.execute("SELECT subject, event_sequence FROM memories WHERE id = ?", (memory,)).fetchone()
    place = span(event.text, item.quote)
    if row is None or row["event_sequence"] == event.sequence or place is None:
        return
    start, end = place
    same = int(item.subject is not None and row["subject"] == item.subject)
    values = (memory, event.sequence, start, end - start, item.kind, item.basis, same, item.valid_from, extractor)
    conn.execute(
        f"INSERT INTO repeats ({COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?"
        " WHERE NOT EXISTS (SELECT 1 FROM repeats WHERE memory_id = ? AND event_sequence = ?)",
        (*values, memory, event.sequence),
    )


@dataclass(frozen=True)
class Waiting:
    """A current memory about to be deleted, with its repeats in surviving events (the earliest first)."""

    content: str
    subject: str | None
    closed: tuple[int, ...]  # the versions it had closed (superseded_by it): closed again by its heir
    repeats: tuple[dict[str, Any], ...]


def waiting(conn: Any, rowids: Sequence[int], going: Sequence[int]) -> dict[int, Waiting]:
    """The current memories among ``rowids`` that surviving events repeat (``going``: events being
    deleted). A corrected or superseded one is not waiting: its fact was replaced.

    Read before the delete: the rows cascade with their memory.
    """
    rows = conn.execute(
        f"SELECT r.*, m.content, m.subject FROM repeats r JOIN memories m ON m.id = r.memory_id"
        f" WHERE r.memory_id IN ({placeholders(rowids)}) AND r.event_sequence NOT IN ({placeholders(going)})"
        f" AND {current_sql('m')} ORDER BY r.memory_id, r.event_sequence",
        [*rowids, *going],
    ).fetchall()
    found: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault(row["memory_id"], []).append(dict(row))
    closed: dict[int, list[int]] = {}
    for row in conn.execute(
        f"SELECT id, superseded_by FROM memories WHERE superseded_by IN ({placeholders(list(found))}) ORDER BY id",
        list(found),
    ):
        closed.setdefault(row["superseded_by"], []).append(row["id"])
    return {
        rowid: Waiting(rows[0]["content"], rows[0]["subject"], tuple(closed.get(rowid, ())), tuple(rows))
        for rowid, rows in found.items()
    }


def restore(conn: Any, memory: int, rows: Sequence[dict[str, Any]]) -> None:
    """Write repeat rows again, now repeating ``memory`` (their first memory was deleted)."""
    for row in rows:
        values = [memory, *(row[c] for c in COLUMNS.split(", ")[1:])]
        conn.execute(f"INSERT INTO repeats ({COLUMNS}) VALUES ({', '.join('?' * len(values))})", values)
