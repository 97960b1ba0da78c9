"""Provenance: what each memory was made from, recorded when it is made (no guessing later).

A memory's first source is its own row: ``memories.event_sequence`` and ``memories.quote``. Beside it:

- further events that state it (``memory_sources`` with a quote span of the event's text as stored):
  an item a later extraction or agent call returned again is not stored twice; the memory gains the
  event as a source instead. Forgetting one source keeps the memory, with its ID, quoted from one
  that remains (``requote``); forgetting its last source deletes it (lifecycle/forget_plan.py).
- what the extraction prompt that made it showed: its preceding events and, in a batch, the other
  events of the batch (``memory_sources`` without a span), and the current memories shown under
  aliases (``memory_shown``). Memories the agent gives and corrections' replacements had no prompt.

The rows hold no text: a forget of either side cascades them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..text.quotes import span
from .connection import Transaction
from .db import placeholders

if TYPE_CHECKING:
    from ..records import Event


@dataclass(frozen=True)
class Shown:
    """What an extraction prompt showed beside the event it extracts: events (sequences) and memories (row IDs)."""

    events: tuple[int, ...] = ()
    memories: tuple[int, ...] = ()


@dataclass(frozen=True)
class Quote:
    """A further event that states a memory: its sequence and the quote's span in its text."""

    sequence: int
    start: int
    length: int


def record_shown(conn: Transaction, memory: int, shown: Shown) -> None:
    """Keep what the prompt that made ``memory`` showed (what was forgotten since is gone: left out)."""
    if shown.events:
        conn.executemany(
            "INSERT INTO memory_sources (memory_id, event_sequence) SELECT ?, sequence FROM events"
            " WHERE sequence = ? ON CONFLICT DO NOTHING",
            [(memory, sequence) for sequence in dict.fromkeys(shown.events)],
        )
    if shown.memories:
        conn.executemany(
            "INSERT INTO memory_shown (memory_id, shown_id) SELECT ?, id FROM memories WHERE id = ?"
            " ON CONFLICT DO NOTHING",
            [(memory, shown_id) for shown_id in dict.fromkeys(shown.memories) if shown_id != memory],
        )


def restated(conn: Transaction, memory: int, event: Event, quote: str) -> None:
    """Keep that ``event`` states ``memory`` too (its item was not stored again), with the quote's span.

    Nothing when it is the memory's own event, or when the quote has no span in the text as stored
    (it was found only in the text's NFC form).
    """
    add_quote(conn, memory, event.sequence, event.text, quote)


def add_quote(conn: Transaction, memory: int, sequence: int, text: str, quote: str) -> None:
    """``restated`` from the event's sequence and text (an import restores sources this way)."""
    own = conn.execute("SELECT event_sequence FROM memories WHERE id = ?", (memory,)).fetchone()
    place = span(text, quote)
    if own is None or own["event_sequence"] == sequence or place is None:
        return
    start, end = place
    conn.execute(
        "INSERT INTO memory_sources (memory_id, event_sequence, quote_start, quote_length) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (memory_id, event_sequence) DO UPDATE SET quote_start = excluded.quote_start,"
        " quote_length = excluded.quote_length WHERE memory_sources.quote_start IS NULL",
        (memory, sequence, start, end - start),
    )


def quotes(conn: Transaction, memories: Sequence[int]) -> dict[int, list[Quote]]:
    """The further events that state each memory, earliest first."""
    if not memories:
        return {}
    rows = conn.execute(
        "SELECT memory_id, event_sequence, quote_start, quote_length FROM memory_sources"
        f" WHERE memory_id IN ({placeholders(memories)}) AND quote_start IS NOT NULL"
        " ORDER BY memory_id, event_sequence",
        list(memories),
    )
    found: dict[int, list[Quote]] = {}
    for row in rows:
        found.setdefault(row["memory_id"], []).append(
            Quote(row["event_sequence"], row["quote_start"], row["quote_length"])
        )
    return found


def stated_by(conn: Transaction, events: Sequence[int]) -> list[int]:
    """The memories these events state as a further source."""
    if not events:
        return []
    sql = "SELECT DISTINCT memory_id FROM memory_sources WHERE event_sequence IN ({}) AND quote_start IS NOT NULL"
    return [row["memory_id"] for row in conn.execute(sql.format(placeholders(events)), list(events))]


def shown_to(conn: Transaction, events: Sequence[int], memories: Sequence[int]) -> list[int]:
    """The memories whose making was shown one of these events or memories."""
    found: set[int] = set()
    if events:
        sql = f"SELECT memory_id FROM memory_sources WHERE event_sequence IN ({placeholders(events)})"
        found.update(row["memory_id"] for row in conn.execute(sql + " AND quote_start IS NULL", list(events)))
    if memories:
        sql = f"SELECT memory_id FROM memory_shown WHERE shown_id IN ({placeholders(memories)})"
        found.update(row["memory_id"] for row in conn.execute(sql, list(memories)))
    return sorted(found)


def shown_of(conn: Transaction, memory: int) -> Shown:
    """What the prompt that made ``memory`` showed (nothing for a memory made without a prompt)."""
    events = conn.execute(
        "SELECT event_sequence FROM memory_sources WHERE memory_id = ? AND quote_start IS NULL ORDER BY event_sequence",
        (memory,),
    )
    shown = conn.execute("SELECT shown_id FROM memory_shown WHERE memory_id = ? ORDER BY shown_id", (memory,))
    return Shown(tuple(row["event_sequence"] for row in events), tuple(row["shown_id"] for row in shown))


def requote(conn: Transaction, memory: int, quote: Quote) -> None:
    """Make a further source the memory's own event: its quote is now that span of the event's text.

    The memory keeps its ID, content and place in time; it is known since that event. The caller
    unindexes its full-text row before (the row's attribution names the event's speaker) and indexes
    it after.
    """
    row = conn.execute("SELECT session_id, occurred_at, text FROM events WHERE sequence = ?", (quote.sequence,))
    event = row.fetchone()
    text = event["text"][quote.start : quote.start + quote.length]
    conn.execute(
        "UPDATE memories SET event_sequence = ?, session_id = ?, quote = ?, known_from = ? WHERE id = ?",
        (quote.sequence, event["session_id"], text, event["occurred_at"], memory),
    )
    conn.execute("DELETE FROM memory_sources WHERE memory_id = ? AND event_sequence = ?", (memory, quote.sequence))
