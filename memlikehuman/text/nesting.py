"""How deep a JSON text nests, read before it is parsed.

Python's json recurses once per level of ``[`` and ``{`` and raises RecursionError, not ValueError,
somewhere past a thousand levels, a depth that depends on how deep the caller's stack already is. A
model's answer or a CLI's envelope is a few levels deep; one nested far deeper is unusable, and says so
the same way wherever it is parsed.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 32  # an extraction answer is 3 levels deep, a chat completion or a CLI's envelope about 5

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


class TooDeep(ValueError):
    """The text nests deeper than the limit; json was not asked to parse it."""


def depth(text: str) -> int:
    """The deepest nesting of brackets and braces outside JSON strings (0 for a scalar)."""
    deepest = level = 0
    for bracket in _BRACKET.findall(_STRING.sub("", text)):
        level = level + 1 if bracket in "[{" else max(0, level - 1)
        deepest = max(deepest, level)
    return deepest


def loads(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` of a text nested at most ``max_depth`` deep; raise TooDeep (a ValueError) for a deeper
    one and ValueError for anything else json cannot read."""
    if depth(text) > max_depth:
        raise TooDeep(f"nested deeper than {max_depth} levels")
    return json.loads(text)
