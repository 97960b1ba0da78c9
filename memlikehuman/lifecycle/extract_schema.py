"""The answer schema of extraction, with each quote constrained to the sentences of its event.

``SCHEMA`` is the shape of tools.md's "Extraction response". ``for_events`` narrows the ``quote`` of
an item to an ``enum`` of the event's sentences long enough to be quotes (text/quotes.py: a greeting
like "Thanks!" is not; the whole text always is), each an exact slice of the event text: a server
that constrains its output by the schema (OpenAI's strict structured output; llama-cpp-python's
server, which turns the schema into a grammar) can then only write quotes that pass the verbatim
check, and cannot copy one from a context block. Nothing is relaxed: the check stays as it is and
still judges every quote (servers that ignore the schema may answer anything).

Long events keep a free-form quote (the list would outgrow what servers accept in a schema), and so
does an event without a sentence of at most ``MAX_DERIVED_CHARS`` characters.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any

from ..records import BASES, MEMORY_KINDS
from ..text.quotes import too_short
from ..validate import MAX_DERIVED_CHARS

# At most this many choices, and this many characters of them in all (OpenAI allows 1,000 enum
# values and 15,000 characters of them across a schema; a batch holds up to six events).
MAX_CHOICES = 60
MAX_CHOICE_CHARS = 2_400

_NULLABLE_STRING = {"type": ["string", "null"]}
_FIELDS = ["content", "quote", "kind", "basis", "subject", "supersedes", "valid_from", "gist"]
_ITEM: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": _FIELDS,
    "properties": {
        "content": {"type": "string"},
        "quote": {"type": "string"},
        "kind": {"type": "string", "enum": list(MEMORY_KINDS)},
        "basis": {"type": "string", "enum": list(BASES)},
        "subject": _NULLABLE_STRING,
        "supersedes": {"type": ["integer", "null"]},
        "valid_from": _NULLABLE_STRING,
        "gist": _NULLABLE_STRING,
    },
}


def _answer(items: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["memories"],
        "properties": {"memories": {"type": "array", "items": items}},
    }


SCHEMA: dict[str, Any] = _answer(_ITEM)

# A sentence ends at . ! ? or an ellipsis (with closing quotes or brackets) before whitespace, or at a line end.
_SENTENCE_END = re.compile(r"(?<=[.!?\u2026])[\"'\u201d\u2019)\]]*\s+|\s*\n\s*")
_WORD = re.compile(r"\w")
_ABBREVIATION = re.compile(r"(?<![\w.])(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|vs|etc|e\.g|i\.e|[A-Z])\.$")


def sentences(text: str) -> list[str]:
    """The sentences of text, each an exact slice of it (stripped), in order, without repeats."""
    pieces, start = [], 0
    for end in _SENTENCE_END.finditer(text):
        if "\n" not in end.group(0) and _ABBREVIATION.search(text, 0, end.start()):
            continue  # "Dr. Who" is one sentence
        pieces.append(text[start : end.start() + len(end.group(0).rstrip())])
        start = end.end()
    pieces.append(text[start:])
    found = [piece.strip() for piece in pieces]
    return list(dict.fromkeys(p for p in found if _WORD.search(p) and len(p) <= MAX_DERIVED_CHARS))


def quotable(text: str) -> list[str]:
    """The sentences of text the quote check accepts (long enough to place a memory); the whole text
    (stripped) when none is but it is."""
    found = [sentence for sentence in sentences(text) if not too_short(sentence, text)]
    whole = text.strip()
    if not found and whole and len(whole) <= MAX_DERIVED_CHARS and not too_short(whole, text):
        return [whole]
    return found


def quote_choices(texts: Sequence[str]) -> list[list[str]] | None:
    """The quotable sentences of each text, or None when they are too many to list (quotes stay free-form)."""
    choices = [quotable(text) for text in texts]
    count = sum(len(c) for c in choices)
    size = sum(len(s) for c in choices for s in c)
    if any(not c for c in choices) or count > MAX_CHOICES or size > MAX_CHOICE_CHARS:
        return None
    return choices


def _item(choices: list[str] | None) -> dict[str, Any]:
    item = copy.deepcopy(_ITEM)
    if choices is not None:
        item["properties"]["quote"] = {"type": "string", "enum": choices}
    return item


def _numbered(item: dict[str, Any], number: int | None) -> dict[str, Any]:
    """The item with a leading "event" field: that number, or any integer (the check rejects a wrong one)."""
    field: dict[str, Any] = {"type": "integer"} if number is None else {"type": "integer", "enum": [number]}
    item["properties"] = {"event": field, **item["properties"]}
    item["required"] = ["event", *item["required"]]
    return item


def for_event(text: str) -> dict[str, Any]:
    """The schema for one event: quotes drawn from its sentences when they are few enough."""
    choices = quote_choices([text])
    return _answer(_item(choices[0] if choices else None))


def for_batch(texts: Sequence[str]) -> dict[str, Any]:
    """The schema for a batch: each item names its event (1..n) and quotes one of that event's sentences."""
    choices = quote_choices(texts)
    if choices is None:
        return _answer(_numbered(_item(None), None))
    return _answer({"anyOf": [_numbered(_item(c), n) for n, c in enumerate(choices, start=1)]})
