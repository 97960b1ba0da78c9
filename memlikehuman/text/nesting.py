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

# A JSON string (one left open runs to the end: every match succeeds, so a scan stays linear) or a bracket.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\\?\Z)|[\[\]{}]', re.S)


class TooDeep(ValueError):
    """The text nests deeper than the limit; json was not asked to parse it."""


def depth(text: str) -> int:
    """The deepest nesting of brackets and braces outside JSON strings (0 for a scalar)."""
    deepest = level = 0
    for token in _TOKEN.finditer(text):
        bracket = token.group()
        if bracket[0] != '"':
            level = level + 1 if bracket in "[{" else max(0, level - 1)
            deepest = max(deepest, level)
    return deepest


def outline(text: str, keep: int) -> str:
    """The JSON text with every array and object that opens deeper than ``keep`` levels replaced by null:
    its outer levels (a request's ID and method) read by json whatever lies below them."""
    pieces, level, done, cut = [], 0, 0, -1
    for token in _TOKEN.finditer(text):
        bracket = token.group()
        if bracket[0] == '"':
            continue
        if bracket in "[{":
            level += 1
            if level == keep + 1:
                cut = token.start()
        elif level > 0:
            if level == keep + 1 and cut >= 0:
                pieces += [text[done:cut], "null"]
                done, cut = token.end(), -1
            level -= 1
    return "".join(pieces) + (text[done:cut] if cut >= 0 else text[done:])


def loads(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` of a text nested at most ``max_depth`` deep; raise TooDeep (a ValueError) for a deeper
    one and ValueError for anything else json cannot read."""
    if depth(text) > max_depth:
        raise TooDeep(f"nested deeper than {max_depth} levels")
    return json.loads(text)
