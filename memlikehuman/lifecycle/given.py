"""Memories the agent gives with its memory_record call (issue 29): the extractor's answer, written by the host's model.

An agent that has just read "I prefer pnpm over npm for this repo" can say at once what to remember,
in the shape the extractor answers with (tools.md, "Extraction response"). Each item goes through
the same checks as an extractor's item (``extract.check``: above all, its quote must occur verbatim
in the event's text; the limits of 30 items and 4,000 characters); one that fails is reported by
its position and stored nowhere. The accepted ones are stored with ``extractor = "agent"`` and the
event becomes complete in the same transaction: the configured extractor is not asked for it.

Retrying the same call is safe: an item whose content repeats a memory this event already has
(current, superseded or revoked: a corrected memory never comes back) is left out without a word.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import clock
from ..archive import events, memories
from ..archive.db import Database
from ..errors import Conflict, InvalidArgument, LimitExceeded
from .extract import MAX_ITEMS, Outcome, check

AGENT = "agent"
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
        checked.append({**DEFAULTS, **{k: v for k, v in item.items() if v is not None}})
    return checked


def store(db: Database, sequence: int, items: Sequence[dict[str, Any]], *, retry: bool = False) -> Outcome:
    """Check the items against the event's text, store the accepted ones and complete the event.

    `retry`: the event was already recorded (a duplicate). A retry stores nothing new: an item that
    would be stored now was not in the first call, so the payload differs (Conflict, nothing written).
    Returns the event's outcome with one warning per rejected item ("memories[i] rejected: ...").
    Raises NotFound when the event was deleted meanwhile.
    """
    with db.write():
        event = events.load(db, sequence)
        known = {memories.normalized(m) for m in _contents(db, sequence)}
        fresh = [
            (i, item) for i, item in enumerate(items) if memories.normalized(str(item.get("content"))) not in known
        ]
        candidates, targets, notes = check([item for _, item in fresh], event, {})
        notes = _renumbered(notes, [i for i, _ in fresh])
        if candidates:
            made, skipped = memories.store(db, event, candidates, clock.now_stamp(), targets, extractor=AGENT)
            if made and retry:  # raised inside the transaction: nothing of this call is kept
                raise Conflict(
                    f"event_id {event.event_id!r} was already recorded with other memories: a retry must send"
                    " the same ones; record what else to remember with a new event"
                )
            if skipped:
                notes.append(f"memories: {skipped} item(s) repeat a current memory of this scope; not stored again")
        if event.extraction_state != "complete":
            events.set_state(db, sequence, "complete", None)
    event = events.load(db, sequence)
    return Outcome("complete", None, event.memory_ids, tuple(notes))


def _contents(db: Database, sequence: int) -> list[str]:
    return [row["content"] for row in db.query("SELECT content FROM memories WHERE event_sequence = ?", (sequence,))]


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
