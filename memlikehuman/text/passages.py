"""Passages: a long text as the stretches a reader would quote, for excerpts and the hooks' lines.

A text is cut at its paragraph breaks (a blank line, or a line break before a heading, a list item or
a code fence), and the paragraphs are packed, in order, into passages of at most `size` characters.
A paragraph longer than that is cut after the last sentence end (". ", "! ", "? ", a line break)
before the limit, else after the last space, else at the limit. The passage shown for a query is the
one that holds the most of its words (then the most matches; then the first). Pure functions over
plain strings, importing nothing of ours but text/.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from . import ngrams

PASSAGE_CHARS = 800
_BREAK = re.compile(r"\n[ \t]*\n|\n(?=[ \t]*(?:#|[-*+] |\d+[.)] |```))")
_SENTENCE_END = re.compile(r"[.!?。！？](?=\s)|\n")


def spans(text: str, size: int = PASSAGE_CHARS) -> list[tuple[int, int]]:
    """The (start, end) of each passage of text, in order; covering it whole, one span when it fits."""
    if len(text) <= size:
        return [(0, len(text))]
    pieces: list[tuple[int, int]] = []
    start = 0
    for found in _BREAK.finditer(text):
        pieces.extend(_cut(text, start, found.end(), size))
        start = found.end()
    pieces.extend(_cut(text, start, len(text), size))
    packed: list[tuple[int, int]] = []
    for piece in pieces:
        if packed and piece[1] - packed[-1][0] <= size:
            packed[-1] = (packed[-1][0], piece[1])
        else:
            packed.append(piece)
    return packed


def _cut(text: str, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """One paragraph as pieces of at most size characters, cut after a sentence end or a space."""
    out = []
    while end - start > size:
        limit = start + size
        cut = max((m.end() for m in _SENTENCE_END.finditer(text, start + size // 3, limit)), default=-1)
        if cut <= start:
            cut = text.rfind(" ", start + size // 3, limit) + 1 or limit
        out.append((start, cut))
        start = cut
    if end > start:
        out.append((start, end))
    return out


def best(text: str, words: Sequence[str], size: int = PASSAGE_CHARS) -> tuple[int, int]:
    """The span of the passage that holds the most distinct query words, then the most matches of them."""
    found = spans(text, size)
    if len(found) == 1 or not words:
        return found[0]
    lowered = text.lower()
    patterns = [p for p, needle in zip(_patterns(words), _needles(words), strict=True) if needle in lowered]
    if not patterns:
        return found[0]

    def held(span: tuple[int, int]) -> tuple[int, int]:
        counts = [len(p.findall(lowered, *span)) for p in patterns]
        return sum(1 for n in counts if n), sum(counts)

    return max(found, key=lambda span: (held(span), -span[0]))


def match_positions(text: str, words: Sequence[str]) -> list[tuple[str, int]]:
    """(word, position) of every place a query word (or its stem; an n-gram of an unsegmented script
    anywhere) occurs in text, in order of position."""
    lowered = text.lower()
    found = [(word, m.start()) for word, p in zip(words, _patterns(words), strict=True) for m in p.finditer(lowered)]
    return sorted(found, key=lambda pair: pair[1])


def _needles(words: Sequence[str]) -> list[str]:
    """Per query word, a string every match of its pattern contains (the stem; "" where n-grams match)."""
    return ["" if ngrams.query(w).grams else (w if len(w) <= 4 else w[: max(4, len(w) - 2)]) for w in words]


def _patterns(words: Sequence[str]) -> list[re.Pattern[str]]:
    """Per query word, what finds it in lowercased text: its stem at a word start (the index's porter
    stemmer matches "deploy" for "deployed"), or any of its n-grams in an unsegmented script."""
    return [_pattern(word) for word in words]


@functools.lru_cache(maxsize=4096)
def _pattern(word: str) -> re.Pattern[str]:
    stem = word if len(word) <= 4 else word[: max(4, len(word) - 2)]
    alternatives = [r"\b" + re.escape(stem), *(re.escape(gram) for gram in ngrams.query(word).grams)]
    return re.compile("|".join(alternatives))
