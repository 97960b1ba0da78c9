"""What of an event its memories do not cover: the gaps raw fallback may still show.

A memory's quote is a verbatim span of its event (whitespace may differ). The sentences that hold the
quote of any memory of an event, revoked and superseded ones included, are covered: a corrected-away
statement never resurfaces through its event, and history stays reachable through `include_history`;
what is left of a quoted sentence ("Bad news:", ", that's the hard deadline.") is no gap, a fragment
that holds the fact's words but not the fact. Whole sentences between them are the gaps. Recall shows
a covered event as a raw excerpt only where a query word falls in a gap, and then only the gaps (e.g.
an extractor kept "I live in Lisbon." of "I live in Lisbon. My locker code is 4411." and missed the
locker: a query about the locker gets the second sentence).

Pure functions over plain strings; no database.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from ..text import quotes

GAP_JOINER = " \u2026 "
# Fragments left between quotes with no word in them (", and", ".") are no gap worth showing.
_WORD = re.compile(r"\w", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?。！？؟]+(?=\s)|\n")


def quote_span(text: str, quote: str) -> tuple[int, int] | None:
    """Where `quote` occurs in `text` (or in its NFC form), whitespace runs matching any whitespace."""
    return quotes.span(text, quote) or quotes.span(unicodedata.normalize("NFC", text), quote)


def gaps(text: str, quotes: Iterable[str]) -> list[tuple[int, int]] | None:
    """The uncovered (start, end) stretches of text that hold a word; None when a quote cannot be placed.

    None means "treat the event as covered": a quote that is not found cannot be subtracted, and
    showing the whole text could resurface what that memory stands for.
    """
    spans = []
    ends = [0, *(m.end() for m in _SENTENCE_END.finditer(text)), len(text)]
    for quote in quotes:
        span = quote_span(text, quote)
        if span is None:
            return None
        spans.append(_sentences_of(span, ends))
    uncovered, position = [], 0
    for start, end in sorted(spans):
        if start > position:
            uncovered.append((position, start))
        position = max(position, end)
    if position < len(text):
        uncovered.append((position, len(text)))
    return [(a, b) for a, b in uncovered if _WORD.search(text[a:b])]


def _sentences_of(span: tuple[int, int], ends: Sequence[int]) -> tuple[int, int]:
    """The span widened to the sentences it touches (`ends`: where sentences end, 0 and len(text) included)."""
    start = max(end for end in ends if end <= span[0])
    stop = min((end for end in ends if end >= span[1]), default=span[1])
    return start, stop


def folded(text: str) -> str:
    """Lowercase without diacritics: roughly how the full-text index compares words."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def matches(fragment: str, words: Sequence[str]) -> bool:
    """Whether a query word (or its stem, as the index's porter stemmer would match it) is in fragment."""
    haystack = folded(fragment)
    for word in words:
        key = folded(word)
        stem = key if len(key) <= 4 else key[: max(4, len(key) - 2)]
        if re.search(r"(?<!\w)" + re.escape(stem), haystack):
            return True
    return False


def uncovered_text(text: str, quotes: Iterable[str], words: Sequence[str]) -> str | None:
    """The gaps of text joined in order, if a query word falls in one of them; else None."""
    stretches = gaps(text, quotes)
    if not stretches:
        return None
    pieces = [text[a:b].strip() for a, b in stretches]
    if not any(matches(piece, words) for piece in pieces):
        return None
    return GAP_JOINER.join(pieces)
