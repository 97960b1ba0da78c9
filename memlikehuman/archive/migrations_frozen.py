"""Frozen copies of the code that released migrations run: never edit, never import live modules.

A migration must do to an old archive what it did when it was released, whatever later commits
change in the live modules. So a migration that needs more than SQL calls a copy here, taken
from the live code on the day it was released and never changed after (tests/test_migrations_frozen.py
pins the source). A later change of what the live code writes comes with a new migration that
rebuilds the rows, never with an edit here (docs/decisions/2026-12-01-frozen-migrations.md).

Only the standard library and the connection passed in are used.
"""

from __future__ import annotations

from typing import Any

# m004: fulltext.py as of d120baf (2026-11-30), the word index only (the n-gram tables of m006
# come later in the list, so they never exist while m004 runs). Constants live inside the functions:
# the test pins each function's code.


def m004_event_values(conn: Any, sequence: int) -> tuple[str, str, str]:
    """(text, attribution, context) of an event's events_fts row, as fulltext.event_values built it in m004."""
    row = conn.execute(
        "SELECT persona_id, project_id, session_id, source, text FROM events WHERE sequence = ?", (sequence,)
    ).fetchone()
    cues = conn.execute(
        "SELECT key, label FROM cues WHERE event_sequence = ? ORDER BY position", (sequence,)
    ).fetchall()
    parts = [row["source"]] + [part for cue in cues for part in (cue["key"], cue["label"] or "")]
    previous = conn.execute(
        "SELECT text FROM events WHERE persona_id = ? AND project_id = ? AND session_id = ? AND sequence < ?"
        " AND kind = 'record' ORDER BY sequence DESC LIMIT 1",
        (row["persona_id"], row["project_id"], row["session_id"], sequence),
    ).fetchone()
    context = previous["text"][-1_000:] if previous else ""  # fulltext.CONTEXT_CHARS then
    return row["text"], " ".join(part for part in parts if part), context


def m004_memory_values(conn: Any, rowid: int) -> tuple[str, str]:
    """(content, attribution) of a memory's memories_fts row, as fulltext.memory_values built it in m004."""
    row = conn.execute(
        "SELECT m.content, m.subject, m.kind, e.source FROM memories m JOIN events e ON e.sequence = m.event_sequence"
        " WHERE m.id = ?",
        (rowid,),
    ).fetchone()
    return row["content"], " ".join(filter(None, [row["source"], row["subject"], row["kind"]]))


def m004_index_all(conn: Any) -> None:
    """Write the events_fts and memories_fts row of every stored event and memory, in rowid order."""
    for row in conn.execute("SELECT sequence FROM events ORDER BY sequence").fetchall():
        conn.execute(
            "INSERT INTO events_fts (rowid, text, attribution, context) VALUES (?, ?, ?, ?)",
            (row["sequence"], *m004_event_values(conn, row["sequence"])),
        )
    for row in conn.execute("SELECT id FROM memories ORDER BY id").fetchall():
        conn.execute(
            "INSERT INTO memories_fts (rowid, content, attribution) VALUES (?, ?, ?)",
            (row["id"], *m004_memory_values(conn, row["id"])),
        )
