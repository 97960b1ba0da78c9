"""Task checkpoints: validated state snapshots tied to the last event they cover.

Limits of a state (documented in tools.md terms): ``goal`` 1-4,000 characters; ``completed``,
``pending`` and ``constraints`` at most 100 items each, every item 1-4,000 characters; ``next_step``
0-4,000 characters; the whole state at most 200,000 characters (the size of one event).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import clock, validate
from ..errors import InvalidArgument, LimitExceeded
from ..records import Checkpoint, Scope, TaskState
from . import events
from .connection import Connection, Row, Transaction
from .db import placeholders

CHECKPOINT_PREFIX = "ckpt_"
MAX_ITEMS = 100
MAX_STATE_CHARS = 200_000
LIST_FIELDS = ("completed", "pending", "constraints")
STATE_FIELDS = ("goal", *LIST_FIELDS, "next_step")


@dataclass(frozen=True)
class Selection:
    """The checkpoint session_resume uses (None: there is none) and why others were skipped."""

    checkpoint: Checkpoint | None
    warnings: tuple[str, ...] = ()


def _items(value: Any, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise InvalidArgument(f"state.{field} is not a list: send a list of strings (or leave it out)")
    if len(value) > MAX_ITEMS:
        raise LimitExceeded(f"state.{field} has {len(value)} items; at most {MAX_ITEMS} are allowed: merge some")
    return tuple(
        validate.text(item, f"state.{field}[{index}]", validate.MAX_DERIVED_CHARS) for index, item in enumerate(value)
    )


def parse_state(raw: Mapping[str, Any]) -> TaskState:
    """Validate a checkpoint state; raise InvalidArgument or LimitExceeded on the first problem."""
    if not isinstance(raw, Mapping):
        raise InvalidArgument(
            'state is not an object: send {"goal": ..., "completed": [...], "pending": [...],'
            ' "constraints": [...], "next_step": ...}'
        )
    unknown = sorted(set(raw) - set(STATE_FIELDS))
    if unknown:
        raise InvalidArgument(f"state has unknown fields {unknown}: use only {', '.join(STATE_FIELDS)}")
    if raw.get("goal") is None:
        raise InvalidArgument("state.goal is required: say in one or two sentences what the task is")
    next_step = raw.get("next_step")
    state = TaskState(
        goal=validate.text(raw["goal"], "state.goal", validate.MAX_DERIVED_CHARS),
        completed=_items(raw.get("completed"), "completed"),
        pending=_items(raw.get("pending"), "pending"),
        constraints=_items(raw.get("constraints"), "constraints"),
        next_step="" if next_step is None else validate.text(next_step, "state.next_step", 4_000, allow_empty=True),
    )
    size = len(state.goal) + len(state.next_step) + sum(len(i) for f in LIST_FIELDS for i in getattr(state, f))
    if size > MAX_STATE_CHARS:
        raise LimitExceeded(f"the state has {size:,} characters; at most {MAX_STATE_CHARS:,}: summarize it")
    return state


def create(
    db: Connection, scope: Scope, state: Mapping[str, Any], covered_event_id: str, session_id: str
) -> Checkpoint:
    """Store a new snapshot covering ``covered_event_id``.

    Raises InvalidArgument/LimitExceeded for a bad state or a session mismatch, NotFound when the
    event is not in this scope. Nothing is stored on failure.
    """
    import uuid  # here, not at the top: it imports `platform`, a cost on the hook path (SessionStart)

    scope = Scope(*validate.scope(scope.persona_id, scope.project_id))
    validate.identifier(session_id, "session_id")
    validate.identifier(covered_event_id, "covered_event_id", max_len=256)
    task = parse_state(state)
    with db.write() as conn:
        event = events.find(db, scope, covered_event_id)
        if event.session_id != session_id:
            raise InvalidArgument(
                f"covered_event_id {covered_event_id!r} belongs to session {event.session_id!r}, not {session_id!r}:"
                " pass that session_id, or cover the last event of this session"
            )
        checkpoint = Checkpoint(
            checkpoint_id=CHECKPOINT_PREFIX + uuid.uuid4().hex,
            persona_id=scope.persona_id,
            project_id=scope.project_id,
            session_id=session_id,
            covered_event_id=event.event_id,
            covered_sequence=event.sequence,
            created_at=clock.now_stamp(),
            state=task,
        )
        write(
            conn,
            {
                "checkpoint_id": checkpoint.checkpoint_id,
                "persona_id": scope.persona_id,
                "project_id": scope.project_id,
                "session_id": session_id,
                "covered_event_id": event.event_id,
                "covered_sequence": event.sequence,
                "state": json.dumps(task.as_dict(), ensure_ascii=False),
                "created_at": checkpoint.created_at,
            },
        )
    return checkpoint


def write(conn: Transaction, values: Mapping[str, Any]) -> None:
    """The one INSERT of a checkpoint row (session_checkpoint, import)."""
    names = [c for c in _NAMES if c in values]
    if len(names) != len(values):
        raise ValueError(f"not checkpoint columns: {sorted(set(values) - set(_NAMES))}")
    conn.execute(
        f"INSERT INTO checkpoints ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
        [values[c] for c in names],
    )


FORGOTTEN_EVENT = "forgotten"  # the covered event ID of a checkpoint whose event was forgotten


def invalidate(conn: Transaction, scope: Scope, reason: str, *, wipe_state: bool, forgotten: Sequence[str] = ()) -> int:
    """Invalidate every still-valid checkpoint of the scope; return how many were.

    With ``wipe_state`` the saved task state of every invalidated checkpoint of the scope is
    erased too (a forget must not leave the deleted text in a summary). A checkpoint that covered one
    of the ``forgotten`` event IDs names FORGOTTEN_EVENT instead: a hook's event ID holds a digest of
    the text, which a short secret can be guessed back from.
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
    if forgotten:
        conn.execute(
            f"UPDATE checkpoints SET covered_event_id = ? WHERE persona_id = ? AND project_id = ?"
            f" AND covered_event_id IN ({placeholders(forgotten)})",
            (FORGOTTEN_EVENT, scope.persona_id, scope.project_id, *forgotten),
        )
    return count


def _from_row(row: Row) -> Checkpoint:
    state = None
    if row["state"] is not None:
        data = json.loads(row["state"])
        state = TaskState(
            goal=data["goal"],
            completed=tuple(data.get("completed", ())),
            pending=tuple(data.get("pending", ())),
            constraints=tuple(data.get("constraints", ())),
            next_step=data.get("next_step", ""),
        )
    return Checkpoint(
        checkpoint_id=row["checkpoint_id"],
        persona_id=row["persona_id"],
        project_id=row["project_id"],
        session_id=row["session_id"],
        covered_event_id=row["covered_event_id"],
        covered_sequence=row["covered_sequence"],
        created_at=row["created_at"],
        state=state,
        invalidated_at=row["invalidated_at"],
        invalidated_reason=row["invalidated_reason"],
    )


COLUMNS = (
    "checkpoint_id, persona_id, project_id, session_id, covered_event_id, covered_sequence, state, created_at,"
    " invalidated_at, invalidated_reason"
)
_NAMES = tuple(name.strip() for name in COLUMNS.split(","))


def select(db: Connection, scope: Scope, session_id: str | None = None) -> Selection:
    """The latest valid checkpoint of the project (or of one session); newer invalidated ones are named."""
    where = "persona_id = ? AND project_id = ?"
    params: tuple[Any, ...] = (scope.persona_id, scope.project_id)
    if session_id is not None:
        where += " AND session_id = ?"
        params += (session_id,)
    with db.read():
        row = db.one(
            f"SELECT id, {COLUMNS} FROM checkpoints WHERE {where} AND invalidated_at IS NULL AND state IS NOT NULL"
            " ORDER BY id DESC LIMIT 1",
            params,
        )
        newer = db.query(
            f"SELECT {COLUMNS} FROM checkpoints WHERE {where} AND (invalidated_at IS NOT NULL OR state IS NULL)"
            " AND id > ? ORDER BY id DESC",
            (*params, row["id"] if row else 0),
        )
    chosen = _from_row(row) if row else None
    return Selection(chosen, _skipped_warnings([_from_row(r) for r in newer], chosen, session_id))


def _skipped_warnings(skipped: list[Checkpoint], chosen: Checkpoint | None, session_id: str | None) -> tuple[str, ...]:
    if not skipped:
        return ()
    reasons = sorted({c.invalidated_reason or "invalidated" for c in skipped})
    where = f"session {session_id!r}" if session_id is not None else "this project"
    fallback = (
        f"the older valid checkpoint {chosen.checkpoint_id} was used instead"
        if chosen
        else "no valid checkpoint remains, so no task state is included"
    )
    return (
        f"skipped {len(skipped)} newer checkpoint(s) of {where} that were invalidated ({'; '.join(reasons)[:500]}):"
        f" {fallback}; check the task state against recent events and save a new session_checkpoint",
    )
