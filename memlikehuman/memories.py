"""Derived memories: storing checked candidates with supersession, and loading them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from . import fulltext
from .db import Database, Row
from .errors import NotFound
from .records import Candidate, Event, Memory, Scope

MEMORY_PREFIX = "mem_"

MEMORY_SELECT = """
SELECT m.id, m.memory_id, m.event_sequence, m.persona_id, m.project_id, m.session_id, m.content, m.quote,
       m.kind, m.basis, m.category, m.subject, m.gist, m.valid_from, m.valid_to, m.recorded_at,
       m.revoked_at, m.revoke_reason,
       (SELECT memory_id FROM memories r WHERE r.id = m.replaced_by) AS replaced_by,
       (SELECT memory_id FROM memories s WHERE s.id = m.superseded_by) AS superseded_by,
       (SELECT memory_id FROM memories p WHERE p.id = m.supersedes) AS supersedes,
       m.known_from,
       (SELECT o.memory_id FROM corrections c JOIN memories o ON o.id = c.original_id
         WHERE c.event_sequence = m.event_sequence) AS corrects,
       e.event_id, e.role, e.source, e.occurred_at
FROM memories m JOIN events e ON e.sequence = m.event_sequence
"""


def new_memory_id() -> str:
    """A server-made memory ID; the prefix is refused as an event ID."""
    import uuid  # here, not at the top: it imports `platform`, a cost on the hook path

    return MEMORY_PREFIX + uuid.uuid4().hex


def from_row(row: Row) -> Memory:
    """Build a Memory from a MEMORY_SELECT row."""
    return Memory(
        rowid=row["id"],
        memory_id=row["memory_id"],
        event_sequence=row["event_sequence"],
        persona_id=row["persona_id"],
        project_id=row["project_id"],
        session_id=row["session_id"],
        content=row["content"],
        quote=row["quote"],
        kind=row["kind"],
        basis=row["basis"],
        category=row["category"],
        subject=row["subject"],
        gist=row["gist"],
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        recorded_at=row["recorded_at"],
        revoked_at=row["revoked_at"],
        revoke_reason=row["revoke_reason"],
        replaced_by=row["replaced_by"],
        superseded_by=row["superseded_by"],
        supersedes=row["supersedes"],
        known_from=row["known_from"],
        corrects=row["corrects"],
        event_id=row["event_id"],
        role=row["role"],
        source=row["source"],
        occurred_at=row["occurred_at"],
    )


def find(db: Database, scope: Scope, memory_id: str) -> Memory:
    """The memory with this ID in this scope; NotFound otherwise."""
    row = db.one(
        MEMORY_SELECT + " WHERE m.memory_id = ? AND m.persona_id = ? AND m.project_id = ?",
        (memory_id, scope.persona_id, scope.project_id),
    )
    if row is None:
        raise NotFound(
            f"no memory {memory_id!r} in persona {scope.persona_id!r}, project {scope.project_id!r}:"
            " check the ID and the persona_id/project_id, or find the memory with memory_recall"
        )
    return from_row(row)


def by_rowids(db: Database, rowids: Sequence[int]) -> dict[int, Memory]:
    """Memories by internal row ID (missing ones are simply absent)."""
    if not rowids:
        return {}
    marks = ",".join("?" * len(rowids))
    rows = db.query(MEMORY_SELECT + f" WHERE m.id IN ({marks})", tuple(rowids))
    return {row["id"]: from_row(row) for row in rows}


def settle_known_from(conn: Any) -> None:
    """Fill ``known_from`` where it is missing (imported rows): the event's time, and for a correction's
    replacement the time its original became known (a correction takes the original's place in time).
    A chain of corrections is followed one step per pass."""
    conn.execute(
        "UPDATE memories SET known_from = (SELECT occurred_at FROM events WHERE sequence = memories.event_sequence)"
        " WHERE known_from IS NULL"
    )
    original = (
        "(SELECT o.known_from FROM corrections c JOIN memories o ON o.id = c.original_id"
        " WHERE c.event_sequence = memories.event_sequence)"
    )
    while True:
        conn.execute(
            f"UPDATE memories SET known_from = {original} WHERE event_sequence IN"
            f" (SELECT event_sequence FROM corrections) AND known_from IS NOT {original}"
        )
        if not conn.changes():
            return


def normalized(text: str) -> str:
    """Case- and whitespace-insensitive form used for duplicate checks."""
    return re.sub(r"\s+", " ", text).strip().casefold()


def current(db: Database, scope: Scope, limit: int = 200) -> list[Memory]:
    """The newest current (not revoked, not superseded) memories of the scope."""
    rows = db.query(
        MEMORY_SELECT + " WHERE m.persona_id = ? AND m.project_id = ? AND m.revoked_at IS NULL"
        " AND m.valid_to IS NULL ORDER BY m.id DESC LIMIT ?",
        (scope.persona_id, scope.project_id, limit),
    )
    return [from_row(row) for row in rows]


def _insert(conn: Any, event: Event, item: Candidate, recorded_at: str) -> int:
    conn.execute(
        "INSERT INTO memories (memory_id, event_sequence, persona_id, project_id, session_id, content, quote, kind,"
        " basis, category, subject, gist, valid_from, recorded_at, known_from)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            new_memory_id(),
            event.sequence,
            event.persona_id,
            event.project_id,
            event.session_id,
            item.content,
            item.quote,
            item.kind,
            item.basis,
            event.category,
            item.subject,
            item.gist,
            item.valid_from,
            recorded_at,
            event.occurred_at,
        ),
    )
    rowid = int(conn.last_insert_rowid())
    fulltext.index_memory(conn, rowid)
    return rowid


def _versions(conn: Any, event: Event, rowid: int, subject: str) -> list[Row]:
    """The other live versions of a subject: same scope, same category, oldest first."""
    return list(
        conn.execute(
            "SELECT id, valid_from FROM memories WHERE persona_id = ? AND project_id = ? AND category = ?"
            " AND subject = ? AND id != ? AND revoked_at IS NULL ORDER BY valid_from, id",
            (event.persona_id, event.project_id, event.category, subject, rowid),
        )
    )


def _close(conn: Any, older: int, newer: int, at: str) -> None:
    """End `older`'s validity at `at`, when `newer` takes over; link the two both ways."""
    conn.execute("UPDATE memories SET valid_to = ?, superseded_by = ? WHERE id = ?", (at, newer, older))
    conn.execute("UPDATE memories SET supersedes = ? WHERE id = ?", (older, newer))


def _supersede(conn: Any, event: Event, rowid: int, item: Candidate) -> None:
    """Insert the new memory into the timeline of its subject, closing validity windows.

    The timeline is ordered by valid_from (ties: the later recording wins). The version before the
    new one ends where the new one starts; a version after it (the new fact dates from earlier than
    what is known) ends the new one's window. Category is part of the key: a quoted document never
    supersedes what a user said, and conversation never rewrites a persona definition.
    """
    if item.subject is None:
        return
    versions = _versions(conn, event, rowid, item.subject)
    before = [row for row in versions if row["valid_from"] <= item.valid_from]
    after = [row for row in versions if row["valid_from"] > item.valid_from]
    if before:
        _close(conn, before[-1]["id"], rowid, item.valid_from)
    if after:
        _close(conn, rowid, after[0]["id"], after[0]["valid_from"])


def _replace_target(conn: Any, event: Event, rowid: int, target: int, valid_from: str) -> None:
    """Close a memory the extractor named (by alias) as updated by the new one, if still open."""
    conn.execute(
        "UPDATE memories SET valid_to = ?, superseded_by = ? WHERE id = ? AND persona_id = ? AND project_id = ?"
        " AND category = ? AND valid_to IS NULL AND revoked_at IS NULL AND valid_from <= ?",
        (valid_from, rowid, target, event.persona_id, event.project_id, event.category, valid_from),
    )
    if conn.changes():
        conn.execute("UPDATE memories SET supersedes = coalesce(supersedes, ?) WHERE id = ?", (target, rowid))


def _repeats_current(db: Database, scope: Scope, content: str) -> bool:
    """Whether a current memory of the scope has this content, ignoring case and whitespace.

    The full-text index narrows the comparison to memories containing the same phrase, so the cost
    does not grow with the number of memories in the scope.
    """
    live = "m.persona_id = ? AND m.project_id = ? AND m.revoked_at IS NULL AND m.valid_to IS NULL"
    if re.search(r"\w", content):
        sql = (
            "SELECT m.content FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid WHERE memories_fts MATCH ?"
        )
        # SQLite reads an FTS5 query as a C string: a NUL would end it inside the phrase's quotes.
        needle = 'content : "' + content.replace('"', '""').replace("\x00", " ") + '"'
    else:  # no words to search for: compare the text itself
        sql, needle = "SELECT m.content FROM memories m WHERE m.content = ?", content
    rows = db.query(f"{sql} AND {live}", (needle, scope.persona_id, scope.project_id))
    key = normalized(content)
    return any(normalized(row["content"]) == key for row in rows)


def store(
    db: Database,
    event: Event,
    items: Sequence[Candidate],
    recorded_at: str,
    targets: Sequence[int | None] | None = None,
) -> tuple[list[int], int]:
    """Store checked candidates of one event; return (new row IDs, duplicates skipped).

    An item whose content repeats a current memory of the scope (ignoring case and whitespace) is
    skipped. ``targets[i]``, when given, is the row ID of a memory of the same scope that item i
    explicitly updates: it is closed where the new one starts (if it is still open and not newer).
    """
    targets = list(targets) if targets is not None else [None] * len(items)
    rowids: list[int] = []
    skipped = 0
    seen: set[str] = set()
    with db.write() as conn:
        for item, target in zip(items, targets, strict=True):
            key = normalized(item.content)
            if key in seen or _repeats_current(db, event.scope, item.content):
                skipped += 1
                continue
            seen.add(key)
            rowid = _insert(conn, event, item, recorded_at)
            if item.subject:
                _supersede(conn, event, rowid, item)
            if target is not None:
                _replace_target(conn, event, rowid, target, item.valid_from)
            rowids.append(rowid)
    return rowids, skipped
