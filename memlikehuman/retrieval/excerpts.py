"""Raw-event excerpts: a short event whole, a long one by the passage that holds most of the query's words.

Recall shows an event of at most PASSAGE_CHARS characters whole; of a longer one the passage
(text/passages.py: paragraphs packed up to that size) that holds the most distinct query words, then
the most matches, with where it starts (`offset`, for memory_read) and `truncated`. A hit found by
meaning alone, with no query word in it, shows its first passage. Several passages fit where one long
head of a message used to: 2,000 tokens of returned text hold about ten of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..text import passages

EXCERPT_CHARS = 2_000  # the contract's cap of an excerpt (a gap excerpt may join several stretches)
PASSAGE_CHARS = passages.PASSAGE_CHARS


class Excerpt(NamedTuple):
    text: str
    offset: int | None  # where it starts in the event's text (None: not one stretch of it)
    truncated: bool


def excerpt(text: str, words: Sequence[str]) -> Excerpt:
    """The event's text whole when it is short, else its best passage for the query words."""
    if len(text) <= PASSAGE_CHARS:
        return Excerpt(text, 0, False)
    start, end = passages.best(text, words)
    return Excerpt(text[start:end].strip(), start + _leading_space(text[start:end]), True)


def gap_excerpt(text: str, words: Sequence[str]) -> Excerpt:
    """An excerpt of the uncovered stretches of an event joined together (no one offset in the event)."""
    if len(text) <= EXCERPT_CHARS:
        return Excerpt(text, None, True)
    start, end = passages.best(text, words, EXCERPT_CHARS)
    return Excerpt(text[start:end].strip(), None, True)


def around(text: str, words: Sequence[str], cap: int) -> str:
    """At most `cap` characters of text around where the query words are densest (a hook's one line)."""
    if len(text) <= cap:
        return text
    positions = [at for _, at in passages.match_positions(text, words)]
    centre = _densest(positions, cap // 2) if positions else 0
    start = max(0, min(len(text) - cap, centre - cap // 2))
    if start > 0:
        space = text.find(" ", start, start + 40)
        start = space + 1 if space != -1 else start
    return text[start : start + cap]


def _leading_space(passage: str) -> int:
    return len(passage) - len(passage.lstrip())


def _densest(positions: Sequence[int], span: int) -> int:
    """The centre of the span-long stretch that holds the most positions."""
    best, best_count, j = positions[0], 0, 0
    for i, start in enumerate(positions):
        while positions[j] < start - span:
            j += 1
        if i - j + 1 > best_count:
            best_count, best = i - j + 1, (positions[j] + start) // 2
    return best
