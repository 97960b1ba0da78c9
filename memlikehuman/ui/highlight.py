"""Where each memory's quote sits in its event's text, and that text with the quotes marked.

Extraction accepts a quote that matches the source after collapsing runs of whitespace, so a
quote is found with its words joined by ``\\s+`` (first occurrence, case-sensitive, then
case-insensitive). Marks are cut to the shown page of a long event.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .html import Safe, el, join


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    memory_id: str


def find(text: str, quote: str, memory_id: str) -> Span | None:
    """The span of ``quote`` in ``text``, or None when it is not there (e.g. text edited elsewhere)."""
    words = quote.split()
    if not words:
        return None
    pattern = r"\s+".join(re.escape(word) for word in words)
    match = re.search(pattern, text) or re.search(pattern, text, re.IGNORECASE)
    return Span(match.start(), match.end(), memory_id) if match else None


def marked(text: str, offset: int, spans: Sequence[Span]) -> Safe:
    """``text`` (the page starting at ``offset`` of the whole text) with every span inside it marked.

    Overlapping quotes split the text at every boundary; a piece inside one or more spans is a
    ``<mark>`` naming their memories. The first piece of each span carries its anchor ``q-<memory>``.
    """
    end = offset + len(text)
    inside = [s for s in spans if s.start < end and s.end > offset]
    cuts = sorted({offset, end, *(max(s.start, offset) for s in inside), *(min(s.end, end) for s in inside)})
    pieces: list[object] = []
    anchored: set[str] = set()
    for left, right in zip(cuts, cuts[1:], strict=False):
        chunk = text[left - offset : right - offset]
        covering = [s for s in inside if s.start <= left and s.end >= right]
        if not covering:
            pieces.append(chunk)
            continue
        ids = " ".join(s.memory_id for s in covering)
        first = next((s.memory_id for s in covering if s.memory_id not in anchored and s.start >= left), None)
        if first is not None:
            anchored.add(first)
        pieces.append(el("mark", chunk, title=ids, id=f"q-{first}" if first else None, class_="quote"))
    return join(pieces)
