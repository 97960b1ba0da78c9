"""Reading the fields of one item the extractor returned: each either gives a stored value or rejects the item.

extract.py checks the item as a whole (above all, that its quote occurs verbatim in the event).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from .. import clock
from ..records import MEMORY_KINDS, Event, Memory
from ..validate import MAX_DERIVED_CHARS

MAX_SUBJECT_CHARS = 200


class Rejected(Exception):
    """One item fails a check; the message says which."""


def text_of(raw: dict[str, Any], field: str) -> str:
    value = raw.get(field)
    if not isinstance(value, str) or not value.strip():
        raise Rejected(f"{field} is missing or empty")
    value = value.strip()
    if len(value) > MAX_DERIVED_CHARS:
        raise Rejected(f"{field} is {len(value):,} characters long; the limit is {MAX_DERIVED_CHARS:,}")
    return value


def kind_of(raw: dict[str, Any], event: Event, notes: list[str]) -> str:
    kind = raw.get("kind")
    if kind not in MEMORY_KINDS:
        raise Rejected(f"kind must be one of {', '.join(MEMORY_KINDS)}; got {kind!r:.40}")
    # Labels with consequences are reserved: persona memories shape the assistant's role, and emotion
    # records are the assistant's own expressions (memory_correct refuses to edit them).
    if kind == "persona" and event.category != "persona":
        notes.append("kind persona is reserved for persona events; stored as fact")
        return "fact"
    if kind == "emotion" and event.role != "assistant":
        notes.append("kind emotion is reserved for the assistant's own expressed feelings; stored as fact")
        return "fact"
    return str(kind)


def subject_of(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise Rejected("subject must be a string or null")
    subject = " ".join(value.split()).casefold()
    if len(subject) > MAX_SUBJECT_CHARS:
        raise Rejected(f"subject is longer than {MAX_SUBJECT_CHARS} characters")
    return subject or None


def target_of(value: Any, event: Event, aliases: dict[int, Memory], notes: list[str]) -> Memory | None:
    """The memory an item explicitly supersedes, when its alias is valid and the category matches."""
    if value is None:
        return None
    memory = aliases.get(value) if isinstance(value, int) and not isinstance(value, bool) else None
    if memory is None:
        notes.append(f"supersedes {value!r:.20} is not an alias of a shown memory; ignored")
        return None
    if memory.category != event.category:
        notes.append(f"a {event.category} event cannot supersede memory #{value} of category {memory.category}")
        return None
    if memory.kind == "event":
        # Something that happened stays true; small models name an alias here for unrelated items, and
        # a closed event memory would hide its event from recall.
        notes.append(f"memory #{value} is an event (something that happened), which no later memory ends; ignored")
        return None
    return memory


def valid_from_of(value: Any, event: Event) -> str:
    """The validity start: the model's date, or the event's time when it gave none.

    A date that cannot be read rejects the item, as a quote that does not match does:
    falling back to the event's time would store a validity window the text may contradict, and a
    wrong start can close an older fact of the same subject at the wrong moment.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return event.occurred_at
    parsed = parse_date(value) if isinstance(value, str) else None
    if parsed is None:
        raise Rejected(f"valid_from {value!r:.40} is not an ISO 8601 date (or null for the event's time)")
    return parsed


def parse_date(value: str) -> str | None:
    """A model-given date in stored form, or None. Dates and times without an offset are taken as UTC.

    Accepts full ISO 8601 date-times, dates (midnight), and bare years or year-months (their first day).
    """
    text = value.strip()
    if re.fullmatch(r"\d{4}", text):
        text += "-01-01"
    elif re.fullmatch(r"\d{4}-\d{2}", text):
        text += "-01"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return clock.format_utc(moment)
    except OverflowError:
        return None


def gist(value: Any, notes: list[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value.strip()) > MAX_DERIVED_CHARS:
        notes.append(f"gist is not a string of at most {MAX_DERIVED_CHARS:,} characters; dropped")
        return None
    return value.strip() or None
