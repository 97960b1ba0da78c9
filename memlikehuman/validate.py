"""Input rules shared by every tool: identifiers, lengths, enumerations."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .errors import InvalidArgument, LimitExceeded

MAX_EVENT_CHARS = 200_000
MAX_DERIVED_CHARS = 4_000
MAX_CUES = 20
MAX_QUERY_CHARS = 4_000
MAX_LABEL_CHARS = 1_000
MAX_LIMIT = 100  # the most results of one memory_recall (tools.md: limit 1-100)
MAX_BUDGET = 1_000_000  # the largest token_budget of session_resume
RESERVED_PREFIXES = ("mem_", "corr_", "ckpt_")

PERSONA_ID = re.compile(r"[A-Za-z0-9._:\-]{1,128}")


# Exactly the code points of categories Cc (C0/C1 controls: NUL, newline, tab, U+0085), Cs (surrogates)
# and Zl/Zp (U+2028/U+2029 line breaks); tests/test_validate.py compares it with unicodedata.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
CONTROL_CATEGORIES = ("Cc", "Cs", "Zl", "Zp")


def _has_control(value: str) -> bool:
    return CONTROL.search(value) is not None


def encodable(value: str, field: str) -> str:
    """Reject text that cannot be stored as UTF-8 (lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(f"{field} contains a lone surrogate code point: send valid Unicode text") from None
    return value


def identifier(value: str, field: str, max_len: int = 128) -> str:
    """1..max_len characters, no control characters."""
    if not isinstance(value, str) or not value:
        raise InvalidArgument(
            f"{field} is missing or not a string: send a non-empty string of at most {max_len} characters"
        )
    if len(value) > max_len:
        raise InvalidArgument(f"{field} is {len(value)} characters long: use at most {max_len}")
    if _has_control(value):
        raise InvalidArgument(f"{field} contains control characters: remove them")
    return value


def persona_id(value: str) -> str:
    """An identifier that is also safe inside persona://{persona_id}/current."""
    identifier(value, "persona_id")
    if not PERSONA_ID.fullmatch(value):
        raise InvalidArgument(
            "persona_id may contain only ASCII letters and digits, '.', '_', '-' and ':' (it is part of a URI):"
            " choose an ID such as 'assistant' or 'team:alice'"
        )
    if not value.strip("."):
        # "." and ".." are dot segments to URI and path tools: persona://../current is not a name.
        raise InvalidArgument(
            "persona_id must not consist of dots only ('.', '..'): choose a name with a letter or digit"
        )
    return value


def scope(persona: str, project: str) -> tuple[str, str]:
    """Validate and return the (persona_id, project_id) pair."""
    return persona_id(persona), identifier(project, "project_id")


MAX_PERSONA_CHARS = 20_000


def persona_text(persona: str, value: Any) -> str:
    """A core persona's text as stored: line breaks as "\n" (a browser's form sends "\r\n"), no
    surrounding whitespace. Raises InvalidArgument for a bad persona_id or an empty text, LimitExceeded
    over the limit."""
    persona_id(persona)
    if isinstance(value, str):
        value = value.replace("\r\n", "\n").replace("\r", "\n").strip()
    return text(value, "persona text", MAX_PERSONA_CHARS)


def text(value: str, field: str, max_len: int, *, allow_empty: bool = False) -> str:
    """A free-text field: length-limited, valid Unicode. Over the limit is limit_exceeded."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{field} is not a string: send it as JSON text")
    if not value and not allow_empty:
        raise InvalidArgument(f"{field} is empty: send at least one character")
    if len(value) > max_len:
        raise LimitExceeded(f"{field} is {len(value):,} characters long; the limit is {max_len:,}: shorten or split it")
    return encodable(value, field)


def choice(value: str, field: str, allowed: Iterable[str]) -> str:
    """One of a fixed set of values."""
    options = tuple(allowed)
    if value not in options:
        raise InvalidArgument(f"{field} is {value!r:.60}, which is not allowed: use one of {', '.join(options)}")
    return value


def int_range(value: int, field: str, low: int, high: int) -> int:
    """An integer within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidArgument(f"{field} must be an integer from {low} to {high}: send a whole number in that range")
    return value


def event_id(value: str) -> str:
    """A caller-chosen event ID: 1-256 characters, no control characters, no reserved prefix."""
    identifier(value, "event_id", max_len=256)
    if value.startswith(RESERVED_PREFIXES):
        raise InvalidArgument(
            f"event_id must not start with {', '.join(RESERVED_PREFIXES)} (reserved for server IDs): use a UUID"
        )
    return value
