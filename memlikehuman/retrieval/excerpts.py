"""Raw-event excerpts: at most EXCERPT_CHARS characters of an event, centred on the query's words."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..text import ngrams

EXCERPT_CHARS = 2_000
_SNAP = 40


def excerpt(text: str, words: Sequence[str], cap: int = EXCERPT_CHARS) -> tuple[str, bool]:
    """At most `cap` characters of text, centred on where the query words occur; (excerpt, truncated)."""
    if len(text) <= cap:
        return text, False
    positions = _match_positions(text, words)
    centre = _densest(positions, cap // 2) if positions else 0
    start = max(0, min(len(text) - cap, centre - cap // 2))
    end = start + cap
    # Start and end on word boundaries when one is near, so no word is cut in half.
    if start > 0:
        space = text.find(" ", start, start + _SNAP)
        start = space + 1 if space != -1 else start
    if end < len(text):
        space = text.rfind(" ", end - _SNAP, end)
        end = space if space > start else end
    return text[start:end], True


def _match_positions(text: str, words: Sequence[str]) -> list[int]:
    lowered = text.lower()
    positions: list[int] = []
    for word in words:
        stem = word if len(word) <= 4 else word[: max(4, len(word) - 2)]
        positions.extend(m.start() for m in re.finditer(r"\b" + re.escape(stem), lowered))
        # Inside unsegmented text there is no word boundary: its n-grams are found anywhere.
        for gram in ngrams.query(word).grams:
            positions.extend(m.start() for m in re.finditer(re.escape(gram), lowered))
    return sorted(positions)


def _densest(positions: Sequence[int], span: int) -> int:
    """The centre of the span-long stretch that holds the most positions."""
    best, best_count, j = positions[0], 0, 0
    for i, start in enumerate(positions):
        while positions[j] < start - span:
            j += 1
        if i - j + 1 > best_count:
            best_count, best = i - j + 1, (positions[j] + start) // 2
    return best
