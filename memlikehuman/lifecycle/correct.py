"""memory_correct: a correction event, its replacement memory, the revoked original.

A correction is recorded like any event (``events.kind = 'correction'``, ID ``corr_<hex>``), so it
is attributed, searchable and can itself be forgotten. Its role is ``user``: the contract allows a
correction only on the user's explicit request, so the statement is the user's, relayed by the host
(as every role is a host assertion). Its source is ``memory_correct``.

The replacement takes the original's place in its subject timeline (same predecessor and
successor); the original leaves the timeline, keeps its text for ``memory_read`` and is marked
revoked with the reason and the replacement. Every checkpoint of the scope is invalidated, because
a summary may repeat the corrected statement. All of it is one write transaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from .. import clock, validate
from ..archive import events, fulltext, memories
from ..archive.db import Database
from ..errors import Conflict, Forbidden, InvalidArgument
from ..records import Event, Memory, Scope

CORRECTION_PREFIX = "corr_"
CORRECTION_ROLE = "user"
CORRECTION_SOURCE = "memory_correct"


@dataclass(frozen=True)
class CorrectionResult:
    replacement_id: str
    revoked_ids: tuple[str, ...]
    correction_event_id: str
    invalidated_checkpoints: int


def correction_text(memory_id: str, content: str, reason: str) -> str:
    """The correction event's text; it contains ``content`` verbatim, the replacement's quote.

    The revoked statement is deliberately not repeated, so raw search cannot resurface it here.
    """
    return f"Correction of memory {memory_id}: {content}\nReason: {reason}"


def correct(
    db: Database, scope: Scope, memory_id: str, content: str, reason: str, valid_at: str | None = None
) -> CorrectionResult:
    """Replace a memory by a corrected statement and revoke it, in one transaction.

    Raises InvalidArgument/LimitExceeded for bad input, NotFound when the memory is not in this
    scope, Forbidden for core persona entries and emotion records, Conflict when it is already revoked.
    """
    scope = Scope(*validate.scope(scope.persona_id, scope.project_id))
    validate.identifier(memory_id, "memory_id", max_len=256)
    content = validate.text(content, "content", validate.MAX_DERIVED_CHARS)
    reason = validate.text(reason, "reason", validate.MAX_DERIVED_CHARS)
    valid_from = None if valid_at is None else clock.stamp(valid_at, "valid_at")
    with db.write() as conn:
        original = memories.find(db, scope, memory_id)
        _check_correctable(original)
        valid_from = valid_from or original.valid_from
        _check_window(conn, original, valid_from)
        event = _record_event(db, conn, original, content, reason)
        replacement = _insert_replacement(conn, event, original, content, valid_from)
        take_place(conn, original.rowid, replacement)
        now = clock.now_stamp()
        conn.execute(
            "UPDATE memories SET revoked_at = ?, revoke_reason = ?, replaced_by = ?, supersedes = NULL,"
            " superseded_by = NULL WHERE id = ?",
            (now, reason, replacement, original.rowid),
        )
        invalidated = invalidate_checkpoints(
            conn, scope, f"memory {memory_id} was corrected by {event.event_id}", wipe_state=False
        )
        replacement_id = conn.execute("SELECT memory_id FROM memories WHERE id = ?", (replacement,)).fetchone()
    return CorrectionResult(
        replacement_id=replacement_id["memory_id"],
        revoked_ids=(memory_id,),
        correction_event_id=event.event_id,
        invalidated_checkpoints=invalidated,
    )


def _check_correctable(memory: Memory) -> None:
    # Everything the persona resource shows (memories of role-definition events) and every persona-kind
    # memory is part of the core persona: the contract says it cannot be altered through the tools.
    if memory.category == "persona" or memory.kind == "persona":
        raise Forbidden(
            f"memory {memory.memory_id} is a core persona entry, which memory_correct cannot alter:"
            " edit the core persona with `memlikehuman persona set` on the command line, or remove this"
            f" entry with memory_forget (it deletes its source event {memory.event_id}) and record"
            " the corrected role definition with memory_record (category persona)"
        )
    if memory.kind == "emotion":
        raise Forbidden(
            f"memory {memory.memory_id} is an emotion record, which cannot be rewritten: forget it with"
            " memory_forget and record a new assistant-expression event with memory_record"
        )
    if memory.revoked_at:
        replacement = f", replaced by {memory.replaced_by}" if memory.replaced_by else ""
        hint = f"correct {memory.replaced_by} instead" if memory.replaced_by else "correct its current version"
        raise Conflict(
            f"memory {memory.memory_id} was already corrected (revoked at {memory.revoked_at}{replacement}): {hint}"
        )


def _check_window(conn: Any, original: Memory, valid_from: str) -> None:
    """The new validity start must keep the subject timeline in order."""
    before = _valid_from(conn, original.supersedes)
    after = _valid_from(conn, original.superseded_by)
    if before is not None and valid_from < before:
        raise InvalidArgument(
            f"valid_at {valid_from} is before {before}, when the previous version of this fact"
            f" ({original.supersedes}) started: give a later valid_at or correct that version instead"
        )
    if after is not None and valid_from >= after:
        raise InvalidArgument(
            f"valid_at {valid_from} is not before {after}, when the next version of this fact"
            f" ({original.superseded_by}) started: give an earlier valid_at or correct that version instead"
        )


def _valid_from(conn: Any, memory_id: str | None) -> str | None:
    if memory_id is None:
        return None
    row = conn.execute("SELECT valid_from FROM memories WHERE memory_id = ?", (memory_id,)).fetchone()
    return None if row is None else str(row["valid_from"])


def _record_event(db: Database, conn: Any, original: Memory, content: str, reason: str) -> Event:
    payload = events.NewEvent(
        scope=Scope(original.persona_id, original.project_id),
        event_id=CORRECTION_PREFIX + uuid.uuid4().hex,
        text=correction_text(original.memory_id, content, reason),
        role=CORRECTION_ROLE,
        source=CORRECTION_SOURCE,
        category=original.category,
        session_id=original.session_id,
        occurred_at=None,
        cues=(),
    )
    sequence, _ = events.insert(db, payload, kind="correction", error=None)
    # Nothing is left to extract: the replacement is stored right here, so retries must skip it.
    events.set_state(db, sequence, "complete", None)
    conn.execute(
        "INSERT INTO corrections (event_sequence, original_id, reason) VALUES (?, ?, ?)",
        (sequence, original.rowid, reason),
    )
    return events.load(db, sequence)


def _insert_replacement(conn: Any, event: Event, original: Memory, content: str, valid_from: str) -> int:
    conn.execute(
        "INSERT INTO memories (memory_id, event_sequence, persona_id, project_id, session_id, content, quote, kind,"
        " basis, category, subject, gist, valid_from, recorded_at, known_from)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'stated', ?, ?, NULL, ?, ?, ?)",
        (
            memories.new_memory_id(),
            event.sequence,
            event.persona_id,
            event.project_id,
            event.session_id,
            content,
            content,
            original.kind,
            original.category,
            original.subject,
            valid_from,
            event.recorded_at,
            # A correction says the original was wrong: the replacement is known since the original was.
            original.known_from,
        ),
    )
    rowid = int(conn.last_insert_rowid())
    fulltext.index_memory(conn, rowid)
    return rowid


def take_place(conn: Any, old: int, new: int) -> None:
    """Put memory ``new`` where ``old`` stands in its subject timeline; ``old`` keeps no links.

    Predecessors closed by ``old`` are now closed at ``new``'s start; ``new`` ends where ``old``
    ended. The links are found from both sides, so a half-linked timeline is repaired too.
    """
    row = conn.execute("SELECT supersedes, superseded_by, valid_to FROM memories WHERE id = ?", (old,)).fetchone()
    start = conn.execute("SELECT valid_from FROM memories WHERE id = ?", (new,)).fetchone()["valid_from"]
    conn.execute(
        "UPDATE memories SET supersedes = ?, superseded_by = ?, valid_to = ? WHERE id = ?",
        (row["supersedes"], row["superseded_by"], row["valid_to"], new),
    )
    conn.execute("UPDATE memories SET superseded_by = ?, valid_to = ? WHERE superseded_by = ?", (new, start, old))
    conn.execute("UPDATE memories SET supersedes = ? WHERE supersedes = ?", (new, old))
    conn.execute("UPDATE memories SET supersedes = NULL, superseded_by = NULL WHERE id = ?", (old,))


def invalidate_checkpoints(conn: Any, scope: Scope, reason: str, *, wipe_state: bool) -> int:
    """Invalidate every still-valid checkpoint of the scope; return how many were.

    With ``wipe_state`` the saved task state of every invalidated checkpoint of the scope is
    erased too (a forget must not leave the deleted text in a summary).
    """
    now = clock.now_stamp()
    conn.execute(
        "UPDATE checkpoints SET invalidated_at = ?, invalidated_reason = ?"
        " WHERE persona_id = ? AND project_id = ? AND invalidated_at IS NULL",
        (now, reason, scope.persona_id, scope.project_id),
    )
    count = int(conn.changes())
    if wipe_state:
        conn.execute(
            "UPDATE checkpoints SET state = NULL WHERE persona_id = ? AND project_id = ? AND state IS NOT NULL",
            (scope.persona_id, scope.project_id),
        )
    return count
