"""Derived memories: the one writer of memory rows, storing checked candidates, and loading them.

The links between versions of a fact are set by timeline.py."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import NotFound
from ..records import Event, Memory, Scope
from . import fulltext, sources, timeline
from .backend import backend_of
from .connection import Connection, Row, Transaction
from .db import placeholders

if TYPE_CHECKING:
    from ..records import Candidate

MEMORY_PREFIX = "mem_"

MEMORY_SELECT = """
SELECT m.id, m.memory_id, m.event_sequence, m.persona_id, m.project_id, m.session_id, m.content, m.quote,
       m.kind, m.basis, m.category, m.subject, m.gist, m.valid_from, m.valid_to, m.recorded_at,
       m.revoked_at, m.revoke_reason,
       (SELECT memory_id FROM memories r WHERE r.id = m.replaced_by) AS replaced_by,
       (SELECT memory_id FROM memories s WHERE s.id = m.superseded_by) AS superseded_by,
       (SELECT memory_id FROM memories p WHERE p.id = m.supersedes) AS supersedes,
       m.known_from, m.extractor,
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
        extractor=row["extractor"],
        corrects=row["corrects"],
        event_id=row["event_id"],
        role=row["role"],
        source=row["source"],
        occurred_at=row["occurred_at"],
    )


def find(db: Connection, scope: Scope, memory_id: str) -> Memory:
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


def by_rowids(db: Connection, rowids: Sequence[int]) -> dict[int, Memory]:
    """Memories by internal row ID (missing ones are simply absent)."""
    if not rowids:
        return {}
    marks = ",".join("?" * len(rowids))
    rows = db.query(MEMORY_SELECT + f" WHERE m.id IN ({marks})", tuple(rowids))
    return {row["id"]: from_row(row) for row in rows}


def normalized(text: str) -> str:
    """Case- and whitespace-insensitive form used for duplicate checks."""
    return re.sub(r"\s+", " ", text).strip().casefold()


def current(db: Connection, scope: Scope, limit: int = 200) -> list[Memory]:
    """The newest current (not revoked, not superseded) memories of the scope."""
    rows = db.query(
        MEMORY_SELECT + f" WHERE m.persona_id = ? AND m.project_id = ? AND {timeline.current_sql()}"
        " ORDER BY m.id DESC LIMIT ?",
        (scope.persona_id, scope.project_id, limit),
    )
    return [from_row(row) for row in rows]


# The columns a writer may set; the rest keep their defaults (NULL) until the timeline links them.
COLUMNS = (
    "memory_id", "event_sequence", "persona_id", "project_id", "session_id", "content", "quote", "kind", "basis",
    "category", "subject", "gist", "valid_from", "valid_to", "recorded_at", "revoked_at", "revoke_reason", "known_from",
    "extractor",
)  # fmt: skip


def write(conn: Transaction, values: Mapping[str, Any]) -> int:
    """The one INSERT of a memory row (extraction, correction, import), with its full-text row; returns its rowid.

    Timeline links are set afterwards by archive/timeline.py.
    """
    unknown = set(values) - set(COLUMNS)
    if unknown:
        raise ValueError(f"not memory columns: {sorted(unknown)}")
    names = [c for c in COLUMNS if c in values]
    conn.execute(
        f"INSERT INTO memories ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", [values[c] for c in names]
    )
    rowid = int(conn.last_insert_rowid())
    fulltext.index_memory(conn, rowid)
    return rowid


def write_many(conn: Transaction, rows: Sequence[Mapping[str, Any]], sources: Sequence[str]) -> list[int]:
    """write() for many new memories with the same columns (the import), in a few statements per batch;
    ``sources``: the source of each one's event (its full-text attribution). Returns their rowids."""
    names = [c for c in COLUMNS if c in rows[0]]
    if set(names) != set(rows[0]):
        raise ValueError(f"not memory columns: {sorted(set(rows[0]) - set(COLUMNS))}")
    conn.executemany(
        f"INSERT INTO memories ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
        [[row[c] for c in names] for row in rows],
    )
    ids = [row["memory_id"] for row in rows]
    sql = f"SELECT memory_id, id FROM memories WHERE memory_id IN ({placeholders(ids)})"
    found = {r["memory_id"]: int(r["id"]) for r in conn.execute(sql, ids)}
    rowids = [found[memory_id] for memory_id in ids]
    fulltext.index_memories(
        conn,
        [
            (rowid, (row["content"], fulltext.memory_attribution(source, row["subject"], row["kind"])))
            for rowid, row, source in zip(rowids, rows, sources, strict=True)
        ],
    )
    return rowids


def insert(conn: Transaction, event: Event, item: Candidate, recorded_at: str, extractor: str | None) -> int:
    """Write one checked candidate of the event as a memory row; returns its rowid (no timeline links)."""
    return write(
        conn,
        {
            "memory_id": new_memory_id(),
            "event_sequence": event.sequence,
            "persona_id": event.persona_id,
            "project_id": event.project_id,
            "session_id": event.session_id,
            "content": item.content,
            "quote": item.quote,
            "kind": item.kind,
            "basis": item.basis,
            "category": event.category,
            "subject": item.subject,
            "gist": item.gist,
            "valid_from": item.valid_from,
            "recorded_at": recorded_at,
            "known_from": event.occurred_at,
            "extractor": _label(extractor),
        },
    )


def _label(extractor: str | None) -> str | None:
    """An extractor's label as stored: one line of at most 128 characters (it names a model or a program)."""
    if extractor is None:
        return None
    return "".join(c if c.isprintable() else " " for c in extractor)[:128] or None


def delete(conn: Transaction, rowids: Sequence[int]) -> None:
    """Delete memory rows (memory_forget; their vectors cascade). Full-text rows go first, by the caller."""
    conn.execute(f"DELETE FROM memories WHERE id IN ({','.join('?' * len(rowids))})", list(rowids))


def repeats(db: Connection, scope: Scope, content: str, *, current_only: bool = True) -> bool:
    """Whether a current memory of the scope (with `current_only` False: any memory, superseded and
    revoked ones too) has this content, ignoring case and whitespace."""
    return repeated(db, scope, content, current_only=current_only) is not None


def repeated(db: Connection, scope: Scope, content: str, *, current_only: bool = True) -> int | None:
    """The rowid of the oldest memory ``repeats`` finds, or None.

    The full-text index narrows the comparison to memories containing the same phrase, so the cost
    does not grow with the number of memories in the scope.
    """
    live = "m.persona_id = ? AND m.project_id = ?" + (f" AND {timeline.current_sql()}" if current_only else "")
    params: list[Any]
    if re.search(r"\w", content):
        sql, params = backend_of(db).memories_with_phrase(content)
    else:  # no words to search for: compare the text itself
        sql, params = "SELECT m.id, m.content FROM memories m WHERE m.content = ?", [content]
    rows = db.query(f"{sql} AND {live} ORDER BY m.id", (*params, scope.persona_id, scope.project_id))
    key = normalized(content)
    return next((int(row["id"]) for row in rows if normalized(row["content"]) == key), None)


def store(
    db: Connection,
    event: Event,
    items: Sequence[Candidate],
    recorded_at: str,
    targets: Sequence[int | None] | None = None,
    extractor: str | None = None,
    shown: sources.Shown | None = None,
) -> tuple[list[int], int]:
    """Store checked candidates of one event; return (new row IDs, duplicates skipped).

    ``extractor`` labels who made them (the memories' ``extractor``: "agent", "sampling:...", ...);
    ``shown``: what the extraction prompt showed beside the event (archive/sources.py), kept with each.

    An item whose content repeats a current memory of the scope (ignoring case and whitespace) is
    skipped, and the event becomes a further source of that memory when it is another event's.
    ``targets[i]``, when given, is the row ID of a memory of the same scope that item i explicitly
    updates: it is closed where the new one starts (if it is still open and not newer).
    """
    targets = list(targets) if targets is not None else [None] * len(items)
    rowids: list[int] = []
    skipped = 0
    seen: set[str] = set()
    with db.write() as conn:
        for item, target in zip(items, targets, strict=True):
            key = normalized(item.content)
            earlier = None if key in seen else repeated(db, event.scope, item.content)
            if key in seen or earlier is not None:
                if earlier is not None:
                    sources.restated(conn, earlier, event, item.quote)
                skipped += 1
                continue
            seen.add(key)
            rowid = insert(conn, event, item, recorded_at, extractor)
            if shown is not None:
                sources.record_shown(conn, rowid, shown)
            if item.subject and item.kind != "event":  # something that happened stays true: no timeline
                timeline.insert_version(conn, event, rowid, item)
            if target is not None:
                timeline.close_target(conn, event, rowid, target, item.valid_from)
            rowids.append(rowid)
    return rowids, skipped
