"""The export format: the fields of each record type, their checks, and the SQL that reads them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ... import clock, validate
from ...archive import checkpoints, events, memories, personas
from ...archive.db import Row
from ...errors import InvalidArgument, MemLikeHumanError
from ...lifecycle.correct import CORRECTION_PREFIX
from ...records import BASES, CATEGORIES, MEMORY_KINDS, ROLES, memory_status
from ...text import nesting

FORMAT = "memlikehuman-export"
VERSION = 1
TYPES = ("persona_version", "event", "memory", "correction", "checkpoint")
MAX_LISTED = 50

Check = Callable[[Any, str], Any]


@dataclass(frozen=True)
class Rule:
    """A field's check (validates and normalizes, raises MemLikeHumanError) and its fast path.

    ``fast(value)`` is True only when ``check`` would return the value itself unchanged; it may say
    False for a valid value (the check then runs). So rejecting and normalizing stay the check's
    alone, and a file of well-formed values skips the error-message plumbing of every field.
    """

    check: Check
    fast: Callable[[Any], bool]


def _ident(max_len: int = 128) -> Rule:
    control = validate.CONTROL.search
    return Rule(
        lambda value, field: validate.identifier(value, field, max_len),
        lambda value: type(value) is str and 0 < len(value) <= max_len and control(value) is None,
    )


def _text(max_len: int, *, allow_empty: bool = False) -> Rule:
    # Non-ASCII text goes through the check: only it can hold a lone surrogate.
    return Rule(
        lambda value, field: validate.text(value, field, max_len, allow_empty=allow_empty),
        lambda value: type(value) is str and (allow_empty or value != "") and len(value) <= max_len and value.isascii(),
    )


def _one_of(options: tuple[str, ...]) -> Rule:
    allowed = frozenset(options)
    return Rule(
        lambda value, field: validate.choice(value, field, options),
        lambda value: type(value) is str and value in allowed,
    )


def _optional(rule: Rule) -> Rule:
    return Rule(
        lambda value, field: None if value is None else rule.check(value, field),
        lambda value: value is None or rule.fast(value),
    )


# The stored form of a timestamp (clock.format_utc): such a value that parses is its own stored form.
_STORED_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")


def _stored_stamp(value: Any) -> bool:
    if type(value) is not str or _STORED_STAMP.fullmatch(value) is None:
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _flag(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(f"{field} must be true or false")
    return value


def _cues(value: Any, field: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise InvalidArgument(f"{field} must be a list of cue objects")
    return [cue.as_dict() for cue in events.parse_cues(value)]


def _sources(value: Any, field: str) -> dict[str, Any] | None:
    """A memory's provenance beyond its own event (archive/sources.py): events that state it (with the
    quote) or were shown to its extractor (quote null), and the memories its extractor was shown."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"events", "memories"}:
        raise InvalidArgument(f'{field} must be null or {{"events": [...], "memories": [...]}}')
    events, memory_ids = value["events"], value["memories"]
    if not isinstance(events, list) or not isinstance(memory_ids, list) or len(events) + len(memory_ids) > 1_000:
        raise InvalidArgument(f"{field}.events and {field}.memories must be lists (at most 1,000 entries)")
    checked = []
    for event in events:
        if not isinstance(event, dict) or set(event) != {"event_id", "quote"}:
            raise InvalidArgument(f'{field}.events holds {{"event_id": ..., "quote": ... or null}} objects')
        quote = None if event["quote"] is None else validate.text(event["quote"], f"{field}.quote", 4_000)
        checked.append({"event_id": validate.identifier(event["event_id"], f"{field}.event_id", 256), "quote": quote})
    shown = [validate.identifier(memory_id, f"{field}.memories", 256) for memory_id in memory_ids]
    return {"events": checked, "memories": shown}


def _state(value: Any, field: str) -> dict[str, Any] | None:
    return None if value is None else checkpoints.parse_state(value).as_dict()


_STAMP = Rule(lambda value, field: clock.stamp(value, field), _stored_stamp)
_PERSONA = Rule(
    lambda value, field: validate.persona_id(value),
    lambda value: type(value) is str and validate.PERSONA_ID.fullmatch(value) is not None and value.strip(".") != "",
)
_FLAG = Rule(_flag, lambda value: type(value) is bool)
_VERSION = Rule(
    lambda value, field: validate.int_range(value, field, 1, 2**62),
    lambda value: type(value) is int and 1 <= value <= 2**62,
)
_CUES = Rule(_cues, lambda value: type(value) is list and not value)
_STATE = Rule(_state, lambda value: value is None)
_SOURCES = Rule(_sources, lambda value: value is None)
ID, SCOPE = _ident(256), {"persona_id": _PERSONA, "project_id": _ident(), "session_id": _ident()}
LONG = _text(20_000, allow_empty=True)
DERIVED = _text(validate.MAX_DERIVED_CHARS)

# Field order here is the order of the keys in every exported line.
SPECS: dict[str, dict[str, Rule]] = {
    "persona_version": {
        "persona_id": _PERSONA,
        "version": _VERSION,
        "created_at": _STAMP,
        "text": _text(personas.MAX_PERSONA_CHARS),
    },
    "event": {
        "event_id": ID,
        **SCOPE,
        "kind": _one_of(("record", "correction")),
        "role": _one_of(ROLES),
        "source": ID,
        "category": _one_of(CATEGORIES),
        "occurred_at": _STAMP,
        "occurred_at_given": _FLAG,
        "recorded_at": _STAMP,
        "extraction_state": _one_of(("complete", "pending", "failed")),
        "extraction_error": _optional(LONG),
        "cues": _CUES,
        "text": _text(validate.MAX_EVENT_CHARS),
    },
    "memory": {
        "memory_id": ID,
        "event_id": ID,
        **SCOPE,
        "kind": _one_of(MEMORY_KINDS),
        "basis": _one_of(BASES),
        "category": _one_of(CATEGORIES),
        "subject": _optional(DERIVED),
        "status": _one_of(("current", "superseded", "revoked")),
        "valid_from": _STAMP,
        "valid_to": _optional(_STAMP),
        "recorded_at": _STAMP,
        "supersedes": _optional(ID),
        "superseded_by": _optional(ID),
        "revoked_at": _optional(_STAMP),
        "revoke_reason": _optional(LONG),
        "replaced_by": _optional(ID),
        "content": DERIVED,
        "quote": DERIVED,
        "gist": _optional(_text(validate.MAX_DERIVED_CHARS, allow_empty=True)),
        "extractor": _optional(ID),
        "sources": _SOURCES,
    },
    "correction": {"event_id": ID, "original_memory_id": ID, "reason": DERIVED},
    "checkpoint": {
        "checkpoint_id": ID,
        **SCOPE,
        "covered_event_id": ID,
        "created_at": _STAMP,
        "invalidated_at": _optional(_STAMP),
        "invalidated_reason": _optional(LONG),
        "state": _STATE,
    },
}
# Fields that are local bookkeeping of an event, not its payload: an event already in the archive
# is "the same" when everything else matches (as for a memory_record retry).
EVENT_BOOKKEEPING = ("occurred_at_given", "recorded_at", "extraction_state", "extraction_error")
# Provenance grows after a memory is made (an event states it again): compared never, written for new memories.
DERIVED_FIELDS = ("status", "sources")


# A memory's provenance (archive/sources.py) as two JSON lists beside its row.
_SOURCES_SQL = """
  (SELECT json_group_array(json_object('event_id', se.event_id, 'quote', CASE WHEN s.quote_start IS NULL THEN NULL
     ELSE substr(se.text, CAST(s.quote_start AS INTEGER) + 1, CAST(s.quote_length AS INTEGER)) END)
     ORDER BY s.event_sequence)
     FROM memory_sources s JOIN events se ON se.sequence = s.event_sequence WHERE s.memory_id = m.id) AS source_events,
  (SELECT json_group_array(json_object('id', sm.memory_id) ORDER BY sm.id)
     FROM memory_shown h JOIN memories sm ON sm.id = h.shown_id WHERE h.memory_id = m.id) AS source_memories"""


@dataclass(frozen=True)
class Section:
    kind: str
    select: str  # SELECT ... FROM ..., the FROM clause using `alias`
    source: str  # the FROM clause alone, for counting
    alias: str  # whose persona_id/project_id a filter restricts
    order: str
    key: str  # the WHERE clause that finds one record by its ID(s)


SECTIONS = (
    Section(
        "persona_version",
        "SELECT persona_id, version, created_at, text FROM persona_versions p",
        "FROM persona_versions p",
        "p.",
        "ORDER BY p.persona_id, p.version",
        "p.persona_id = ? AND p.version = ?",
    ),
    Section(
        "event",
        "SELECT e.event_id, e.persona_id, e.project_id, e.session_id, e.kind, e.role, e.source, e.category,"
        " e.occurred_at, e.occurred_at_given, e.recorded_at, e.extraction_state, e.extraction_error,"
        " (SELECT json_group_array(json_object('kind', c.kind, 'key', c.key, 'label', c.label) ORDER BY c.position)"
        " FROM cues c WHERE c.event_sequence = e.sequence) AS cues, e.text FROM events e",
        "FROM events e",
        "e.",
        "ORDER BY e.sequence",
        "e.event_id = ?",
    ),
    Section(
        "memory",
        memories.MEMORY_SELECT.replace("\nFROM memories m", f",\n{_SOURCES_SQL}\nFROM memories m", 1),
        "FROM memories m",
        "m.",
        "ORDER BY m.id",
        "m.memory_id = ?",
    ),
    Section(
        "correction",
        "SELECT e.event_id, m.memory_id AS original_memory_id, c.reason FROM corrections c"
        " JOIN events e ON e.sequence = c.event_sequence JOIN memories m ON m.id = c.original_id",
        "FROM corrections c JOIN events e ON e.sequence = c.event_sequence",
        "e.",
        "ORDER BY c.event_sequence",
        "e.event_id = ?",
    ),
    Section(
        "checkpoint",
        f"SELECT {checkpoints.COLUMNS} FROM checkpoints k",
        "FROM checkpoints k",
        "k.",
        "ORDER BY k.id",
        "k.checkpoint_id = ?",
    ),
)
BY_KIND = {section.kind: section for section in SECTIONS}


def to_record(kind: str, row: Row) -> dict[str, Any]:
    """A stored row as an export record, keys in SPECS order."""
    values = dict(row)
    if kind == "event":
        values["cues"] = json.loads(values["cues"], strict=False)  # a raw NUL from PostgreSQL (pg.py)
        values["occurred_at_given"] = bool(values["occurred_at_given"])
    elif kind == "memory":
        values["status"] = memory_status(values["revoked_at"], values["valid_to"])
        events = json.loads(values["source_events"], strict=False)
        shown = [item["id"] for item in json.loads(values["source_memories"], strict=False)]
        values["sources"] = {"events": events, "memories": shown} if events or shown else None
    elif kind == "checkpoint":
        values["state"] = None if values["state"] is None else json.loads(values["state"])
    record = {"type": kind, **{field: values[field] for field in SPECS[kind]}}
    if kind == "memory" and record["sources"] is None:
        del record["sources"]  # a memory without provenance reads as a file of schema 11 wrote it
    return record


def line(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def parse(raw: bytes, number: int) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
        record = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidArgument(f"line {number} is not a JSON object in UTF-8 ({exc}): is this an export file?") from None
    except RecursionError:  # Python's json gives up near a thousand levels
        levels = nesting.depth(text)
        raise InvalidArgument(
            f"line {number} is nested {levels:,} levels deep, too deep to read: is this an export file?"
        ) from None
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        raise InvalidArgument(f"line {number} has no 'type': is this a memlikehuman export file?")
    return record


def checked(record: dict[str, Any], number: int) -> dict[str, Any]:
    """The record with every field validated and normalized; InvalidArgument naming the line otherwise."""
    kind = record["type"]
    rules = _RULES.get(kind)
    if rules is None:
        raise InvalidArgument(f"line {number}: unknown record type {kind!r:.60}; expected one of {', '.join(TYPES)}")
    if kind == "memory" and "extractor" not in record:
        record = {**record, "extractor": None}  # a file written before schema 10
    if kind == "memory" and "sources" not in record:
        record = {**record, "sources": None}  # a file written before schema 12
    if record.keys() != _KEYS[kind]:
        fields, spec = record.keys() - {"type"}, set(SPECS[kind])
        detail = f"missing {sorted(spec - fields)}" if spec - fields else f"unknown {sorted(fields - spec)}"
        raise InvalidArgument(f"line {number}: {kind} record has wrong fields ({detail})")
    checked: dict[str, Any] = {"type": kind}
    try:
        for field, fast, check, name in rules:
            value = record[field]
            checked[field] = value if fast(value) else check(value, name)
        _check_ids(checked)
    except MemLikeHumanError as exc:
        raise InvalidArgument(f"line {number}: {exc.message}") from None
    return checked


# Per record type: (field, fast path, check, the name its messages use), and the keys of a line.
_RULES = {
    kind: tuple((field, rule.fast, rule.check, f"{kind}.{field}") for field, rule in spec.items())
    for kind, spec in SPECS.items()
}
_KEYS = {kind: frozenset(("type", *spec)) for kind, spec in SPECS.items()}


def _check_ids(record: dict[str, Any]) -> None:
    kind = record["type"]
    # The event_id field's own rule already checked what validate.event_id checks but the prefixes.
    if kind == "event" and record["kind"] == "record" and record["event_id"].startswith(validate.RESERVED_PREFIXES):
        validate.event_id(record["event_id"])
    if kind == "event" and record["kind"] == "correction" and not record["event_id"].startswith(CORRECTION_PREFIX):
        raise InvalidArgument(f"a correction event's ID must start with {CORRECTION_PREFIX!r}")
    for field, prefix in (("memory_id", memories.MEMORY_PREFIX), ("checkpoint_id", checkpoints.CHECKPOINT_PREFIX)):
        if field in record and not record[field].startswith(prefix):
            raise InvalidArgument(f"{kind}.{field} must start with {prefix!r}")


def header(first: bytes | None) -> None:
    if first is None:
        raise InvalidArgument("the file is empty: expected a memlikehuman export (JSON Lines)")
    header = parse(first, 1)
    if header.get("type") != "header" or header.get("format") != FORMAT:
        raise InvalidArgument(f"line 1 is not a {FORMAT} header: is this a memlikehuman export file?")
    if header.get("version") != VERSION:
        raise InvalidArgument(
            f"the file is format version {header.get('version')!r}; this memlikehuman reads version {VERSION}:"
            " upgrade memlikehuman to import it"
        )
