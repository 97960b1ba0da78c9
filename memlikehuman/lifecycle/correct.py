"""memory_correct: a correction event, its replacement memory, the revoked original.

A correction is recorded like any event (``events.kind = 'correction'``, ID ``corr_<hex>``), so it
is attributed, searchable and can itself be forgotten. Its role is ``user``: the contract allows a
correction only on the user's explicit request, so the statement is the user's, relayed by the host
(as every role is a host assertion). Its source is ``memory_correct``.

The replacement takes the original's place in its subject timeline (same predecessor and
successor); the original leaves the timeline, keeps its text for ``memory_read`` and is marked
revoked with the reason and the replacement (archive/timeline.py holds those links). Every
checkpoint of the scope is invalidated, because a summary may repeat the corrected statement.
All of it is one write transaction.
"""

from __future__ import annotations

import uuid

from .. import clock, validate
from ..archive import events, memories, timeline
from ..archive.connection import Connection, Transaction
from ..errors import Conflict, Forbidden
from ..records import CorrectionResult, Event, Memory, Scope

CORRECTION_PREFIX = "corr_"
CORRECTION_ROLE = "user"
CORRECTION_SOURCE = "memory_correct"


def correction_text(memory_id: str, content: str, reason: str) -> str:
    """The correction event's text; it contains ``content`` verbatim, the replacement's quote.

    The revoked statement is deliberately not repeated, so raw search cannot resurface it here.
    """
    return f"Correction of memory {memory_id}: {content}\nReason: {reason}"


def correct(
    db: Connection, scope: Scope, memory_id: str, content: str, reason: str, valid_at: str | None = None
) -> CorrectionResult:
    """Replace a memory by a corrected statement and revoke it, in one transaction.

    Raises InvalidArgument/LimitExceeded for bad input, NotFound when the memory is not in this
    scope, Forbidden for core persona entries and emotion records, Conflict when it is already revoked.
    """
    from ..archive import checkpoints  # its dataclasses stay off the hooks' import path

    scope = Scope(*validate.scope(scope.persona_id, scope.project_id))
    validate.identifier(memory_id, "memory_id", max_len=256)
    content = validate.text(content, "content", validate.MAX_DERIVED_CHARS)
    reason = validate.text(reason, "reason", validate.MAX_DERIVED_CHARS)
    valid_from = None if valid_at is None else clock.stamp(valid_at, "valid_at")
    with db.write() as conn:
        original = memories.find(db, scope, memory_id)
        _check_correctable(original)
        valid_from = valid_from or original.valid_from
        timeline.check_window(conn, original, valid_from)
        event = _record_event(db, conn, original, content, reason)
        replacement = _insert_replacement(conn, event, original, content, valid_from)
        timeline.take_place(conn, original.rowid, replacement)
        timeline.revoke(conn, original.rowid, reason, replacement, clock.now_stamp())
        invalidated = checkpoints.invalidate(
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


def _record_event(db: Connection, conn: Transaction, original: Memory, content: str, reason: str) -> Event:
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
    timeline.link_correction(conn, sequence, original.rowid, reason)
    return events.load(db, sequence)


def _insert_replacement(conn: Transaction, event: Event, original: Memory, content: str, valid_from: str) -> int:
    return memories.write(
        conn,
        {
            "memory_id": memories.new_memory_id(),
            "event_sequence": event.sequence,
            "persona_id": event.persona_id,
            "project_id": event.project_id,
            "session_id": event.session_id,
            "content": content,
            "quote": content,
            "kind": original.kind,
            "basis": "stated",
            "category": original.category,
            "subject": original.subject,
            "gist": None,
            "valid_from": valid_from,
            "recorded_at": event.recorded_at,
            # A correction says the original was wrong: the replacement is known since the original was.
            "known_from": original.known_from,
            "extractor": "correction",
        },
    )
