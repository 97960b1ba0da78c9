"""Full-text rows built from what is stored, and rebuilding the two indexes in committed batches.

``events_fts`` and ``memories_fts`` are contentless FTS5 tables with secure-delete: the index keeps
no copy of the text, so a row is (re)built from the ``events`` and ``memories`` tables, and removing
one takes the exact values it was built from (the FTS5 'delete' command), which also purges its
terms from the index b-tree. Every writer builds rows here: recording, extraction, correction,
import, reindex and forgetting, so the values always match.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .db import Database
from .records import Cue

BATCH = 500
Progress = Callable[[int, int], None]

_MISSING = {
    "event": "SELECT e.sequence AS id FROM events e WHERE e.sequence > ?"
    " AND NOT EXISTS (SELECT 1 FROM events_fts f WHERE f.rowid = e.sequence) ORDER BY e.sequence LIMIT ?",
    "memory": "SELECT m.id AS id FROM memories m WHERE m.id > ?"
    " AND NOT EXISTS (SELECT 1 FROM memories_fts f WHERE f.rowid = m.id) ORDER BY m.id LIMIT ?",
}
_COUNT_MISSING = {
    "event": "SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM events_fts f WHERE f.rowid = e.sequence)",
    "memory": "SELECT count(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memories_fts f WHERE f.rowid = m.id)",
}
TABLES = {"event": "events_fts", "memory": "memories_fts"}


# How much of the session's previous event an event's full-text row carries as `context`.
CONTEXT_CHARS = 1_000


def attribution(source: str, cues: Sequence[Cue]) -> str:
    """The searchable attribution of an event: who said it, and its cue keys and labels."""
    parts = [source] + [part for cue in cues for part in (cue.key, cue.label or "")]
    return " ".join(part for part in parts if part)


def memory_attribution(source: str, subject: str | None, kind: str) -> str:
    """The searchable attribution of a memory: its event's speaker, its subject slot and kind."""
    return " ".join(filter(None, [source, subject, kind]))


def event_values(conn: Any, sequence: int) -> tuple[str, str, str]:
    """(text, attribution, context) of an event's full-text row, derived from what is stored now.

    The context is the tail of the previous record event of the same session. Whoever changes
    what these values derive from (forgetting the previous event) must unindex first, then reindex.
    """
    row = conn.execute(
        "SELECT persona_id, project_id, session_id, source, text FROM events WHERE sequence = ?", (sequence,)
    ).fetchone()
    cues = [
        Cue(r["kind"], r["key"], r["label"])
        for r in conn.execute(
            "SELECT kind, key, label FROM cues WHERE event_sequence = ? ORDER BY position", (sequence,)
        )
    ]
    previous = previous_text(conn, row["persona_id"], row["project_id"], row["session_id"], sequence)
    return event_row(row["text"], row["source"], cues, previous)


def event_row(text: str, source: str, cues: Sequence[Cue], previous: str | None) -> tuple[str, str, str]:
    """(text, attribution, context) from an event's fields and the text of the session's previous record event."""
    return text, attribution(source, cues), previous[-CONTEXT_CHARS:] if previous else ""


def previous_text(conn: Any, persona_id: str, project_id: str, session_id: str, sequence: int) -> str | None:
    """The text of the record event of the session just before ``sequence`` (None: there is none)."""
    row = conn.execute(
        "SELECT text FROM events WHERE persona_id = ? AND project_id = ? AND session_id = ? AND sequence < ?"
        " AND kind = 'record' ORDER BY sequence DESC LIMIT 1",
        (persona_id, project_id, session_id, sequence),
    ).fetchone()
    return None if row is None else str(row["text"])


def memory_values(conn: Any, rowid: int) -> tuple[str, str]:
    """(content, attribution) of a memory's full-text row."""
    row = conn.execute(
        "SELECT m.content, m.subject, m.kind, e.source FROM memories m JOIN events e ON e.sequence = m.event_sequence"
        " WHERE m.id = ?",
        (rowid,),
    ).fetchone()
    return row["content"], memory_attribution(row["source"], row["subject"], row["kind"])


def index_event(conn: Any, sequence: int, values: tuple[str, str, str] | None = None) -> None:
    """Write the full-text row of a stored event (``values``: its event_row, when the caller has it)."""
    conn.execute(
        "INSERT INTO events_fts (rowid, text, attribution, context) VALUES (?, ?, ?, ?)",
        (sequence, *(values or event_values(conn, sequence))),
    )


def unindex_event(conn: Any, sequence: int) -> None:
    """Remove an event's full-text row, terms included (FTS5 'delete' with secure-delete on).

    Call it while the event and its session's previous event are still stored: the 'delete'
    command needs the exact values that were indexed.
    """
    conn.execute(
        "INSERT INTO events_fts (events_fts, rowid, text, attribution, context) VALUES ('delete', ?, ?, ?, ?)",
        (sequence, *event_values(conn, sequence)),
    )


def index_memory(conn: Any, rowid: int) -> None:
    """Write the full-text row of a stored memory."""
    conn.execute(
        "INSERT INTO memories_fts (rowid, content, attribution) VALUES (?, ?, ?)", (rowid, *memory_values(conn, rowid))
    )


def unindex_memory(conn: Any, rowid: int) -> None:
    """Remove a memory's full-text row, terms included; call it while the memory is still stored."""
    conn.execute(
        "INSERT INTO memories_fts (memories_fts, rowid, content, attribution) VALUES ('delete', ?, ?, ?)",
        (rowid, *memory_values(conn, rowid)),
    )


@dataclass(frozen=True)
class RebuildResult:
    """How many full-text rows a rebuild wrote."""

    events: int
    memories: int


def count_missing(db: Database) -> tuple[int, int]:
    """(events, memories) that have no full-text row."""
    return int(db.scalar(_COUNT_MISSING["event"]) or 0), int(db.scalar(_COUNT_MISSING["memory"]) or 0)


def clear(db: Database) -> None:
    """Empty both full-text indexes in one transaction (the start of a full rebuild)."""
    with db.write() as conn:
        for table in TABLES.values():
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")


def fill_missing(db: Database, progress: Progress | None = None, batch: int = BATCH) -> RebuildResult:
    """Write the full-text row of every event and memory that lacks one, ``batch`` rows per transaction.

    Each batch is committed before ``progress(done, total)`` is called, so an interruption loses
    at most the batch in flight and a second call finishes the job. Rows added meanwhile by
    another process are not missing, so they are never written twice.
    """
    missing_events, missing_memories = count_missing(db)
    total = missing_events + missing_memories
    done = {"event": 0, "memory": 0}
    writers: dict[str, Callable[[Any, int], None]] = {"event": index_event, "memory": index_memory}
    if progress:
        progress(0, total)
    for kind in ("event", "memory"):
        floor = 0
        while True:
            with db.write() as conn:
                ids = [row["id"] for row in conn.execute(_MISSING[kind], (floor, batch))]
                for row_id in ids:
                    writers[kind](conn, row_id)
            if not ids:
                break
            floor = ids[-1]
            done[kind] += len(ids)
            if progress:
                progress(done["event"] + done["memory"], max(total, done["event"] + done["memory"]))
    return RebuildResult(events=done["event"], memories=done["memory"])
