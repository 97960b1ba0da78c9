"""Memories the agent gives with its memory_record call: the extractor's answer, written by the host's model.

An agent that has just read "I prefer pnpm over npm for this repo" can say at once what to remember,
in the shape the extractor answers with (tools.md, "Extraction response"). Each item goes through
the same checks as an extractor's item (``extract.check``: above all, its quote must occur verbatim
in the event's text; the limits of 30 items and 4,000 characters); one that fails is reported by
its position and stored nowhere. The accepted ones are stored with ``extractor = "agent"`` and the
event becomes complete in the same transaction: the configured extractor is not asked for it.

The event may have been recorded before without memories (a host's hook records every prompt): the
first call that gives memories for it stores them, with the same payload (event_id, text, role,
source, session_id, ...) as the stored event, else `conflict` as for any event. Retrying a call that
stored memories is safe: the retry stores nothing and changes no state. Each item it accepts must be
one the first call stored for the event (the same content, quote, kind, basis, subject, valid_from
and gist; revoked ones too: a corrected memory never comes back) or one the first call skipped as
repeating a memory of the scope (this event became a further source of it, and its own after the
first statement was forgotten); anything else is `conflict`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from .. import clock
from ..archive import events, memories
from ..archive.connection import Connection
from ..errors import Conflict, InvalidArgument, LimitExceeded
from ..records import Event
from ..text.quotes import collapsed
from .extract import MAX_ITEMS, Outcome, check

AGENT = "agent"
# Why an event the agent gave memories for has none of them (each repeated a memory of the scope, or was rejected).
NONE_KEPT = "the agent gave memories for this event; none was kept (repeats of the scope's, or rejected)"
FIELDS = ("content", "quote", "kind", "basis", "subject", "valid_from", "gist")
DEFAULTS = {"kind": "fact", "basis": "stated"}


def validated(items: Any) -> list[dict[str, Any]]:
    """The items as the extractor's answer would hold them; raise before anything is stored.

    Raises LimitExceeded for more than MAX_ITEMS items and InvalidArgument for anything that is not
    a list of objects with only the known fields. What an item says is checked later, per item.
    """
    if not isinstance(items, Sequence) or isinstance(items, str | bytes):
        raise InvalidArgument("memories must be a list of objects {content, quote, kind?, basis?, ...}")
    if len(items) > MAX_ITEMS:
        raise LimitExceeded(
            f"memories holds {len(items)} items; at most {MAX_ITEMS} per event: keep the ones worth remembering"
        )
    checked = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidArgument(f"memories[{index}] must be an object with content and quote")
        unknown = sorted(set(item) - set(FIELDS))
        if unknown:
            raise InvalidArgument(
                f"memories[{index}] has unknown field(s) {', '.join(unknown)}: use only {', '.join(FIELDS)}"
            )
        _check_offset(index, item.get("valid_from"))
        checked.append({**DEFAULTS, **{k: v for k, v in item.items() if v is not None}})
    return checked


def _check_offset(index: int, value: Any) -> None:
    """A valid_from with a time of day needs its offset (tools.md: never silently UTC); a date alone is a day."""
    if not isinstance(value, str) or len(value.strip()) <= len("2026-11-30"):
        return
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return  # not a date at all: the item's own check rejects it with a warning
    if moment.tzinfo is None:
        raise InvalidArgument(
            f"memories[{index}].valid_from {value.strip()!r:.40} has no timezone offset: add one (e.g. 'Z' or"
            " '+01:00') or give the date alone; local time is never assumed"
        )


def store(db: Connection, sequence: int, items: Sequence[dict[str, Any]], *, retry: bool = False) -> Outcome:
    """Check the items against the event's text, store the accepted ones and complete the event.

    `retry`: the event was already recorded (a duplicate): `_retried`.
    Returns the event's outcome with one warning per rejected item ("memories[i] rejected: ...").
    Raises NotFound when the event was deleted meanwhile.
    """
    with db.write():
        event = events.load(db, sequence)
        if retry and _given_before(db, sequence):
            return _retried(db, event, items)
        known = {memories.normalized(row["content"]) for row in _rows(db, sequence)}
        fresh = [
            (i, item) for i, item in enumerate(items) if memories.normalized(str(item.get("content"))) not in known
        ]
        candidates, targets, notes = check([item for _, item in fresh], event, {})
        notes = _renumbered(notes, [i for i, _ in fresh])
        if candidates:
            _, skipped = memories.store(db, event, candidates, clock.now_stamp(), targets, extractor=AGENT)
            if skipped:
                notes.append(f"memories: {skipped} item(s) repeat a current memory of this scope; not stored again")
        kept = _given_before(db, sequence)
        if event.extraction_state != "complete" or not kept:
            # Complete either way; when none of the agent's items was kept, the event says so (and a
            # retry of the call is recognised as one).
            events.set_state(db, sequence, "complete", None if kept else NONE_KEPT)
    event = events.load(db, sequence)
    return Outcome("complete", None, event.memory_ids, tuple(notes))


def _given_before(db: Connection, sequence: int) -> bool:
    """Whether a call gave memories for this event before: some are stored (a corrected one too), or none
    of its items was kept (the event says NONE_KEPT). A call with memories is then a retry. An event
    recorded without them, by a host hook or by the agent, takes them once."""
    row = db.one("SELECT count(*) AS n FROM memories WHERE event_sequence = ? AND extractor = ?", (sequence, AGENT))
    return bool(row and row["n"]) or events.load(db, sequence).extraction_error == NONE_KEPT


def _retried(db: Connection, event: Event, items: Sequence[dict[str, Any]]) -> Outcome:
    """A retry's answer: the same as the first call's, with nothing written; Conflict when the call differs."""
    differs = (
        f"event_id {event.event_id!r} was already recorded with other memories: a retry must send the same"
        " ones; record what else to remember with a new event"
    )
    if event.extraction_state != "complete":  # a call with memories completes its event
        raise Conflict(differs.replace("with other memories", "without memories"))
    candidates, _, notes = check(items, event, {})
    stored = {memories.normalized(row["content"]): row for row in _rows(db, event.sequence)}
    seen: set[str] = set()
    for candidate in candidates:
        key = memories.normalized(candidate.content)
        if key in seen:
            continue  # a repeat within the call, which the first call skipped too
        seen.add(key)
        row = stored.get(key)
        if row is None and memories.repeats(db, event.scope, candidate.content, current_only=False):
            continue  # skipped by the first call as a repeat of the scope's memory
        if row is not None and row["recorded_at"] < event.recorded_at:
            # Made for an earlier event that stated it first, and quoted from this one since that event
            # was forgotten (archive/sources.py): the first call skipped it as a repeat.
            continue
        if row is None or _fields(row) != _fields(candidate.__dict__):
            raise Conflict(differs)
    return Outcome("complete", None, event.memory_ids, tuple(_renumbered(notes, range(len(items)))))


_SAME = ("quote", "kind", "basis", "subject", "valid_from", "gist")


def _fields(values: Any) -> tuple[Any, ...]:
    """The fields a retry must repeat, the quote as the check reads it (white space collapsed)."""
    return (collapsed(values["quote"]), *(values[f] for f in _SAME[1:]))


def _rows(db: Connection, sequence: int) -> list[Any]:
    sql = f"SELECT content, recorded_at, {', '.join(_SAME)} FROM memories WHERE event_sequence = ?"
    return db.query(sql, (sequence,))


def _renumbered(notes: Sequence[str], positions: Sequence[int]) -> list[str]:
    """The checks' "extraction: item n ..." notes as "memories[i] ...", i the item's place in the call."""
    out = []
    for note in notes:
        head, _, rest = note.partition(": item ")
        number, _, tail = rest.partition(" ")
        if head == "extraction" and number.rstrip(":").isdigit():
            index = positions[int(number.rstrip(":")) - 1]
            out.append(f"memories[{index}]{':' if number.endswith(':') else ''} {tail}")
        else:
            out.append(note.replace("extraction: ", "memories: ", 1))
    return out
