"""Original events: validation, idempotent recording, loading and paginated text."""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring as _quoted
from typing import TYPE_CHECKING, Any

from .. import clock, validate
from ..errors import Conflict, Forgotten, InvalidArgument, NotFound, OtherScope
from ..records import CATEGORIES, CUE_KINDS, ROLES, Cue, Event, Scope
from ..text.digest import sha256_hex
from . import alias_evidence, event_dates, fulltext, tombstones
from .backend import backend_of
from .connection import Connection, Row, Transaction

if TYPE_CHECKING:
    from ..records import Page, Turn

PENDING_UNCONFIGURED = (
    "no extractor is configured (MEMLIKEHUMAN_EXTRACTOR=none): the raw text is durable and searchable"
)
# Why a recorded event is pending while an extractor is configured.
QUEUED = (
    "extraction is queued in the background (MEMLIKEHUMAN_EXTRACTION_WAIT): the raw text is durable and"
    " searchable; memory_read shows the state and memories once it is done"
)


FORGOTTEN = (
    "event_id {event_id!r} was forgotten with memory_forget and is never stored again: if the user wants it"
    " remembered anew, record it under a new event ID"
)


@dataclass(frozen=True)
class NewEvent:
    """A validated memory_record payload."""

    scope: Scope
    event_id: str
    text: str
    role: str
    source: str
    category: str
    session_id: str
    occurred_at: str | None
    cues: tuple[Cue, ...]

    def payload_hash(self) -> str:
        """Hash of every compared field; occurred_at is compared on its own (it may be defaulted)."""
        return payload_hash(
            self.scope.persona_id,
            self.scope.project_id,
            self.event_id,
            self.text,
            self.role,
            self.source,
            self.category,
            self.session_id,
            [cue.as_dict() for cue in self.cues],
        )


def payload_hash(
    persona_id: str,
    project_id: str,
    event_id: str,
    text: str,
    role: str,
    source: str,
    category: str,
    session_id: str,
    cues: Sequence[Mapping[str, Any]],
) -> str:
    """The payload hash of an event (NewEvent.payload_hash) from its fields; ``cues`` as Cue.as_dict().

    The SHA-256 of ``json.dumps(payload, sort_keys=True, ensure_ascii=False)`` of these nine fields,
    with the JSON written out here in sorted key order (the import hashes every event: the generic
    encoder took ~3x as long); strings are escaped by the function json.dumps uses for them.
    """
    cue_list = json.dumps(list(cues), sort_keys=True, ensure_ascii=False) if cues else "[]"
    payload = (
        f'{{"category": {_quoted(category)}, "cues": {cue_list}, "event_id": {_quoted(event_id)},'
        f' "persona_id": {_quoted(persona_id)}, "project_id": {_quoted(project_id)}, "role": {_quoted(role)},'
        f' "session_id": {_quoted(session_id)}, "source": {_quoted(source)}, "text": {_quoted(text)}}}'
    )
    return sha256_hex(payload.encode())


def parse_cues(raw: Sequence[Any] | None) -> tuple[Cue, ...]:
    """Validate cue objects: at most 20 of {kind: text|photo, key, label?}."""
    if raw is None:
        return ()
    if len(raw) > validate.MAX_CUES:
        raise validate.LimitExceeded(
            f"{len(raw)} cues given; at most {validate.MAX_CUES} are allowed: send the most telling ones"
        )
    cues = []
    for index, item in enumerate(raw):
        data = item if isinstance(item, dict) else getattr(item, "__dict__", None)
        if not isinstance(data, dict):
            raise InvalidArgument(
                f'cues[{index}] is not an object: send {{"kind": "text" or "photo", "key": ..., "label": ...}}'
            )
        extra = set(data) - {"kind", "key", "label"}
        if extra:
            raise InvalidArgument(f"cues[{index}] has unknown fields {sorted(extra)}: use only kind, key and label")
        kind = validate.choice(data.get("kind"), f"cues[{index}].kind", CUE_KINDS)  # type: ignore[arg-type]
        key = validate.identifier(data.get("key"), f"cues[{index}].key")  # type: ignore[arg-type]
        label = data.get("label")
        if label is not None:
            label = validate.text(label, f"cues[{index}].label", validate.MAX_LABEL_CHARS, allow_empty=True)
        cues.append(Cue(kind, key, label))
    return tuple(cues)


def new_event(
    scope: Scope,
    event_id: str,
    text: str,
    role: str,
    source: str,
    category: str = "conversation",
    session_id: str = "default",
    occurred_at: str | None = None,
    cues: Sequence[Any] | None = None,
) -> NewEvent:
    """Validate a memory_record payload; raise InvalidArgument/LimitExceeded on the first problem."""
    return NewEvent(
        scope=Scope(*validate.scope(scope.persona_id, scope.project_id)),
        event_id=validate.event_id(event_id),
        text=validate.text(text, "text", validate.MAX_EVENT_CHARS),
        role=validate.choice(role, "role", ROLES),
        source=validate.identifier(source, "source", max_len=256),
        category=validate.choice(category, "category", CATEGORIES),
        session_id=validate.identifier(session_id, "session_id"),
        occurred_at=None if occurred_at is None else clock.stamp(occurred_at, "occurred_at"),
        cues=parse_cues(cues),
    )


def insert(
    db: Connection, event: NewEvent, *, kind: str = "record", error: str | None = PENDING_UNCONFIGURED
) -> tuple[int, bool]:
    """Store the event unless this exact event exists; return (sequence, duplicate).

    Raises Conflict when the event ID is taken by another payload or scope, Forgotten when an event
    of this ID was forgotten (memory_forget keeps its tombstone: nothing stores it again).
    """
    digest = event.payload_hash()
    with db.write() as conn:
        existing = conn.execute(
            "SELECT sequence, persona_id, project_id, payload_hash, occurred_at FROM events WHERE event_id = ?",
            (event.event_id,),
        ).fetchone()
        if existing is not None:
            _check_same(event, digest, existing)
            return int(existing["sequence"]), True
        if tombstones.forgotten(conn, [event.event_id]):
            raise Forgotten(FORGOTTEN.format(event_id=event.event_id))
        now = clock.now_stamp()
        sequence = write(
            conn,
            (
                event.event_id,
                event.scope.persona_id,
                event.scope.project_id,
                event.session_id,
                event.role,
                event.source,
                event.category,
                kind,
                event.text,
                event.occurred_at or now,
                int(event.occurred_at is not None),
                now,
                digest,
                "pending",
                error,
            ),
            event.cues,
        )
        fulltext.index_event(conn, sequence)
    return sequence, False


# The columns of an event row, in the order write() takes them.
COLUMNS = (
    "event_id", "persona_id", "project_id", "session_id", "role", "source", "category", "kind", "text",
    "occurred_at", "occurred_at_given", "recorded_at", "payload_hash", "extraction_state", "extraction_error",
)  # fmt: skip


_INSERT_SQL = f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
_CUE_SQL = "INSERT INTO cues (event_sequence, position, kind, key, label) VALUES (?, ?, ?, ?, ?)"
_TEXT, _OCCURRED_AT = COLUMNS.index("text"), COLUMNS.index("occurred_at")
_ALIAS_FIELDS = operator.itemgetter(*(COLUMNS.index(name) for name in alias_evidence.FIELDS))


def write(conn: Transaction, values: Sequence[Any], cues: Sequence[Cue]) -> int:
    """The one INSERT of an event row (memory_record, corrections, import), with its cues, resolved
    relative dates and alias evidence; returns its sequence. The caller writes the full-text row
    (fulltext.index_event)."""
    conn.execute(_INSERT_SQL, tuple(values))
    sequence = int(conn.last_insert_rowid())
    if cues:
        conn.executemany(_CUE_SQL, [(sequence, i, cue.kind, cue.key, cue.label) for i, cue in enumerate(cues)])
    event_dates.write(conn, sequence, values[_TEXT], values[_OCCURRED_AT])
    alias_evidence.write(conn, sequence, _ALIAS_FIELDS(values))
    return sequence


def write_many(conn: Transaction, rows: Sequence[Sequence[Any]], cues: Sequence[Sequence[Cue]]) -> list[int]:
    """write() for many new events at once (the import): a few statements per batch instead of a few
    per event. ``rows`` hold COLUMNS values (IDs not in the archive, each once); returns their
    sequences in order. The caller writes the full-text rows (fulltext.index_events)."""
    sequences = _insert_rows(conn, rows)
    cue_rows = [
        (sequence, i, cue.kind, cue.key, cue.label)
        for sequence, event_cues in zip(sequences, cues, strict=True)
        for i, cue in enumerate(event_cues)
    ]
    if cue_rows:
        conn.executemany(_CUE_SQL, cue_rows)
    event_dates.write_many(
        conn, [(sequence, row[_TEXT], row[_OCCURRED_AT]) for sequence, row in zip(sequences, rows, strict=True)]
    )
    alias_evidence.write_many(
        conn, [(sequence, _ALIAS_FIELDS(row)) for sequence, row in zip(sequences, rows, strict=True)]
    )
    return sequences


_NAMES = ", ".join(COLUMNS)


def _insert_rows(conn: Transaction, rows: Sequence[Sequence[Any]]) -> list[int]:
    """INSERT many event rows, in order; their sequences (the backend's fastest way: SqliteBackend.insert_events)."""
    return backend_of(conn).insert_events(conn, _INSERT_SQL, _NAMES, rows)


def delete(conn: Transaction, sequences: Sequence[int]) -> None:
    """Delete event rows (memory_forget): cues, corrections, claims, dates and vectors cascade.
    Their memories and full-text rows go first, by the caller."""
    conn.execute(f"DELETE FROM events WHERE sequence IN ({','.join('?' * len(sequences))})", list(sequences))


def _check_same(event: NewEvent, digest: str, existing: Row) -> None:
    same_scope = (existing["persona_id"], existing["project_id"]) == (
        event.scope.persona_id,
        event.scope.project_id,
    )
    if not same_scope:
        raise OtherScope(f"event_id {event.event_id!r} is already used in another scope: choose a new unique ID")
    if existing["payload_hash"] != digest or (event.occurred_at and event.occurred_at != existing["occurred_at"]):
        raise Conflict(
            f"event_id {event.event_id!r} was already recorded with a different payload: "
            "reuse an ID only to retry the identical event, otherwise choose a new unique ID"
        )


def _event(row: Row, cues: tuple[Cue, ...], memory_ids: tuple[str, ...]) -> Event:
    return Event(
        sequence=row["sequence"],
        event_id=row["event_id"],
        persona_id=row["persona_id"],
        project_id=row["project_id"],
        session_id=row["session_id"],
        role=row["role"],
        source=row["source"],
        category=row["category"],
        kind=row["kind"],
        text=row["text"],
        occurred_at=row["occurred_at"],
        recorded_at=row["recorded_at"],
        extraction_state=row["extraction_state"],
        extraction_error=row["extraction_error"],
        cues=cues,
        memory_ids=memory_ids,
    )


EVENT_COLUMNS = (
    "sequence, event_id, persona_id, project_id, session_id, role, source, category, kind, text,"
    " occurred_at, recorded_at, extraction_state, extraction_error"
)


# One statement (one round trip on PostgreSQL, and one snapshot without a transaction): the event,
# its cues and its memories' IDs as JSON lists.
_LOAD_SQL = f"""
SELECT {EVENT_COLUMNS},
  (SELECT json_group_array(json_object('kind', c.kind, 'key', c.key, 'label', c.label) ORDER BY c.position)
     FROM cues c WHERE c.event_sequence = events.sequence) AS cue_list,
  (SELECT json_group_array(json_object('id', m.memory_id) ORDER BY m.id)
     FROM memories m WHERE m.event_sequence = events.sequence) AS memory_list
FROM events WHERE sequence = ?
"""


def load(db: Connection, sequence: int) -> Event:
    """The event with this sequence, its cues and derived memory IDs."""
    row = db.one(_LOAD_SQL, (sequence,))
    if row is None:
        raise NotFound(
            f"event #{sequence} no longer exists (it was forgotten meanwhile): find the current records"
            " with memory_recall"
        )
    # strict=False: a NUL in a label comes back raw from PostgreSQL's JSON (pg.py NUL_STAND_IN).
    cues = tuple(Cue(c["kind"], c["key"], c["label"]) for c in json.loads(row.pop("cue_list"), strict=False))
    memory_ids = tuple(m["id"] for m in json.loads(row.pop("memory_list"), strict=False))
    return _event(row, cues, memory_ids)


def find(db: Connection, scope: Scope, event_id: str) -> Event:
    """The event with this ID in this scope; NotFound otherwise (also when it is in another scope)."""
    sequence = db.scalar(
        "SELECT sequence FROM events WHERE event_id = ? AND persona_id = ? AND project_id = ?",
        (event_id, scope.persona_id, scope.project_id),
    )
    if sequence is None:
        raise NotFound(
            f"no event {event_id!r} in persona {scope.persona_id!r}, project {scope.project_id!r}: check the ID and the"
            " persona_id/project_id, or find the event with memory_recall"
        )
    return load(db, int(sequence))


def scope_of(db: Connection, record_id: str) -> Scope | None:
    """The scope of the event or memory with this ID, None when the archive holds none: an event, a
    correction or a memory ID is unique in the whole archive, whatever its scope."""
    from .memories import MEMORY_PREFIX

    table = "memories WHERE memory_id" if record_id.startswith(MEMORY_PREFIX) else "events WHERE event_id"
    row = db.one(f"SELECT persona_id, project_id FROM {table} = ?", (record_id,))
    return Scope(str(row["persona_id"]), str(row["project_id"])) if row else None


def set_state(db: Connection, sequence: int, state: str, error: str | None) -> None:
    """Record the outcome of an extraction attempt."""
    with db.write() as conn:
        conn.execute(
            "UPDATE events SET extraction_state = ?, extraction_error = ? WHERE sequence = ?",
            (state, error, sequence),
        )


def leave(db: Connection, sequence: int, state: str, error: str) -> Event:
    """Record why a recorded event is not complete, unless another process completed it meanwhile.

    Returns the event as it was found under the write lock. Raises NotFound when it was deleted.
    """
    with db.write():
        found = load(db, sequence)
        unchanged = found.extraction_state == "complete" or found.kind != "record"
        if not unchanged and (found.extraction_state, found.extraction_error) != (state, error):
            set_state(db, sequence, state, error)
    return found


def page(text: str, offset: int, max_chars: int) -> Page:
    """The window [offset, offset+max_chars) of text; next_offset is None at the end."""
    from ..records import Page  # reports.py: a hook never reads

    if offset > len(text):
        raise InvalidArgument(
            f"offset {offset} is past the end of the text ({len(text)} characters): use 0..{len(text)}"
        )
    end = min(len(text), offset + max_chars)
    return Page(
        text=text[offset:end],
        offset=offset,
        next_offset=end if end < len(text) else None,
        total_chars=len(text),
    )


def session_turns(db: Connection, scope: Scope, session_id: str) -> list[Turn]:
    """The record events of one session in recording order."""
    from ..records import Turn  # reports.py: only a compaction or session end cuts a checkpoint

    rows = db.query(
        "SELECT event_id, role, text, extraction_state AS state,"
        " (SELECT count(*) FROM memories m WHERE m.event_sequence = e.sequence) AS n"
        " FROM events e WHERE persona_id = ? AND project_id = ? AND session_id = ? AND kind = 'record'"
        " ORDER BY sequence",
        (scope.persona_id, scope.project_id, session_id),
    )
    return [Turn(str(r["event_id"]), str(r["role"]), str(r["text"]), int(r["n"]), str(r["state"])) for r in rows]


def retry_queue(db: Connection, persona_id: str | None = None, project_id: str | None = None) -> list[int]:
    """Sequences of the pending and failed recorded events of one scope (or of all, given None)."""
    sql = "SELECT sequence FROM events WHERE extraction_state != 'complete' AND kind = 'record'"
    params: tuple[str, ...] = ()
    if persona_id is not None and project_id is not None:
        sql += " AND persona_id = ? AND project_id = ?"
        params = (persona_id, project_id)
    return [int(row["sequence"]) for row in db.query(sql + " ORDER BY sequence", params)]
