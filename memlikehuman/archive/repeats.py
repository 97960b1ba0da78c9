"""A fact stated again: the items skipped as repeating a current memory, kept so that forgetting the
first statement does not lose the fact while a later turn still states it (review, issues 30/31 round).

A repeat row names the memory it repeats and the event that stated it again, with the item's kind,
basis, subject, validity start and maker, and its quote as a span of the event's whitespace-collapsed
NFC text (the quote check's form): no text of its own, so a forget of either leaves nothing to scrub
(both cascade). When a forget deletes a memory, its earliest surviving repeat becomes a memory of
that event (lifecycle/forget.py), with the memory's content (equal to the item's, but for case and
whitespace); the later repeats then repeat the new memory (``restore``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .db import placeholders

if TYPE_CHECKING:
    from ..records import Candidate, Event

COLUMNS = "memory_id, event_sequence, quote_start, quote_length, kind, basis, subject, valid_from, extractor"


def collapsed(text: str) -> str:
    """The text as quotes are checked against it: NFC, runs of white space as one space, trimmed."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFC", text)).strip()


def record(conn: Any, event: Event, memory: int, item: Candidate, extractor: str | None) -> None:
    """Keep that ``event`` stated ``item`` again, a repeat of memory ``memory`` (once per pair)."""
    source, quote = collapsed(event.text), collapsed(item.quote)
    start = source.find(quote)
    if start < 0:  # the quote check passed on the same text: cannot happen, and a repeat is optional
        return
    conn.execute(
        f"INSERT INTO repeats ({COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?"
        " WHERE NOT EXISTS (SELECT 1 FROM repeats WHERE memory_id = ? AND event_sequence = ?)",
        (
            memory,
            event.sequence,
            start,
            len(quote),
            item.kind,
            item.basis,
            item.subject,
            item.valid_from,
            extractor,
            memory,
            event.sequence,
        ),
    )


@dataclass(frozen=True)
class Waiting:
    """A memory about to be deleted, with its repeats in surviving events (the earliest first)."""

    content: str
    repeats: tuple[dict[str, Any], ...]


def waiting(conn: Any, rowids: Sequence[int], going: Sequence[int]) -> dict[int, Waiting]:
    """The memories among ``rowids`` that surviving events repeat (``going``: events being deleted).

    Read before the delete: the rows cascade with their memory.
    """
    rows = conn.execute(
        f"SELECT r.*, m.content FROM repeats r JOIN memories m ON m.id = r.memory_id"
        f" WHERE r.memory_id IN ({placeholders(rowids)}) AND r.event_sequence NOT IN ({placeholders(going)})"
        " ORDER BY r.memory_id, r.event_sequence",
        [*rowids, *going],
    ).fetchall()
    found: dict[int, list[dict[str, Any]]] = {}
    contents: dict[int, str] = {}
    for row in rows:
        found.setdefault(row["memory_id"], []).append(dict(row))
        contents[row["memory_id"]] = row["content"]
    return {rowid: Waiting(contents[rowid], tuple(repeated)) for rowid, repeated in found.items()}


def restore(conn: Any, memory: int, rows: Sequence[dict[str, Any]]) -> None:
    """Write repeat rows again, now repeating ``memory`` (their first memory was deleted)."""
    for row in rows:
        values = [memory, *(row[c] for c in COLUMNS.split(", ")[1:])]
        conn.execute(f"INSERT INTO repeats ({COLUMNS}) VALUES ({', '.join('?' * len(values))})", values)
