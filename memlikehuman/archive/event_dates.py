"""The absolute dates that relative expressions in an event's text refer to (table event_dates, m008).

Written with the event by every event writer (events.insert, the importer), from dates.relative_spans
of the stored text against its occurred_at; read by recall to lift events whose resolved dates meet
a date the query names. The text itself is never changed; the rows leave with their event (cascade).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..text import dates
from .connection import Connection, Transaction

_INSERT = "INSERT INTO event_dates (event_sequence, day_from, day_to) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"


def write(conn: Transaction, sequence: int, text: str, occurred_at: str) -> None:
    """Store the resolved spans of one event's text (inside the writer's transaction)."""
    write_many(conn, [(sequence, text, occurred_at)])


def write_many(conn: Transaction, texts: Sequence[tuple[int, str, str]]) -> None:
    """write() for many (sequence, text, occurred_at) at once: one statement for all their spans."""
    rows = [
        (sequence, start, end)
        for sequence, text, occurred_at in texts
        for start, end in dates.relative_spans(text, occurred_at)
    ]
    if rows:
        conn.executemany(_INSERT, rows)


def spans_of(db: Connection, sequences: Sequence[int]) -> dict[int, list[tuple[str, str]]]:
    """The resolved spans of those events that have any, by sequence."""
    found: dict[int, list[tuple[str, str]]] = {}
    for begin in range(0, len(sequences), 500):
        chunk = tuple(sequences[begin : begin + 500])
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT event_sequence, day_from, day_to FROM event_dates WHERE event_sequence IN ({marks})"
        for row in db.query(sql, chunk):
            found.setdefault(row["event_sequence"], []).append((row["day_from"], row["day_to"]))
    return found
