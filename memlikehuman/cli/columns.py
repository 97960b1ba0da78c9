"""Text that fits a terminal: stored text made safe and flat, measured in columns, cut, wrapped and packed.

A command's default output fits WIDTH columns (a narrower terminal's width, when stdout is one);
`--wide` prints whole cells on long lines instead. Columns, not characters: an East Asian wide
character takes two, a combining mark none. Stored text reaches the terminal flat (whitespace runs as
one space) and harmless: control characters (an escape sequence could rewrite the screen) and the
characters `shapes.visible` escapes for a model are shown as escapes (`\\u001b`).
"""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
import unicodedata
from collections.abc import Iterable

from ..shapes import visible

WIDTH = 100
NARROWEST = 60
ELLIPSIS = "…"


def width() -> int:
    """The columns a command's output may use: WIDTH, or less when stdout is a narrower terminal."""
    if not sys.stdout.isatty():
        return WIDTH
    return max(NARROWEST, min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns))


def flat(value: object) -> str:
    """One line of text for a terminal: whitespace runs as one space, controls as escapes."""
    text = visible(" ".join(str(value).split()))
    return "".join(json.dumps(ch)[1:-1] if unicodedata.category(ch) == "Cc" else ch for ch in text)


def columns(text: str) -> int:
    """How many terminal columns `text` takes (wide characters two, combining marks and formats none)."""
    total = 0
    for ch in text:
        if unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        total += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return total


def clip(text: str, room: int) -> str:
    """`text` cut to `room` columns, ending in "…" when it was cut."""
    if columns(text) <= room:
        return text
    kept, used = [], 1
    for ch in text:
        used += columns(ch)
        if used > room:
            break
        kept.append(ch)
    return "".join(kept).rstrip() + ELLIPSIS


def wrap(text: str, room: int, lines: int = 2) -> list[str]:
    """`text` in at most `lines` lines of `room` columns, broken between words; the last ends in "…" when
    text is left over. A word longer than a line is cut."""
    out: list[str] = []
    rest = text.split(" ")
    while rest and len(out) < lines:
        line = clip(rest.pop(0), room)
        while rest and columns(line) + 1 + columns(rest[0]) <= room:
            line += " " + rest.pop(0)
        out.append(line)
    if rest:
        out[-1] = clip(out[-1] + " " + " ".join(rest), room)
    return out


def pack(items: Iterable[str], room: int, lead: str = "", indent: str = "", sep: str = "  ") -> list[str]:
    """Items side by side, `sep` apart, in lines of `room` columns: the first line after `lead`, the next
    ones after `indent`. An item is never cut (an ID must stay whole): one longer than a line stands
    alone."""
    lines: list[str] = []
    for item in items:
        if lines and columns(lines[-1]) + len(sep) + columns(item) <= room:
            lines[-1] += sep + item
        else:
            lines.append((indent if lines else lead) + item)
    return lines


def fill(text: str, room: int | None, indent: str = "") -> str:
    """Our own sentence in lines of `room` columns (None: one line), broken between words; a path or an ID
    longer than a whole line is cut across lines."""
    if room is None:
        return text
    return textwrap.fill(text, room, subsequent_indent=indent, break_long_words=True, break_on_hyphens=False)
