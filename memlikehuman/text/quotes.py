"""Quotes: the verbatim span of its event a memory points at (tools.md, extraction response).

A quote must also be long enough to place the memory in its text (``too_short``): at least
``MIN_WORDS`` words or ``MIN_CHARS`` characters, or the whole text. Two characters ("om") occur in
almost any text and would let a memory claim support from words that never said it.
docs/decisions/2026-12-07-quote-length.md has the measurement.
"""

from __future__ import annotations

import re
import unicodedata

from .ngrams import CJK_RANGES

MIN_WORDS = 3
MIN_CHARS = 12
_CJK = re.compile(f"[{CJK_RANGES}]")  # scripts written without spaces, where each character counts as a word


def collapsed(text: str) -> str:
    """The text as quotes are checked against it: NFC, runs of white space as one space, trimmed."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFC", text)).strip()


def span(text: str, quote: str) -> tuple[int, int] | None:
    """Where the quote occurs in ``text`` as given, white space matching any white space; None if not."""
    words = quote.split()
    found = re.search(r"\s+".join(re.escape(word) for word in words), text) if words else None
    return found.span() if found else None


def _words(text: str) -> list[str]:
    """The words of a text: its space-separated pieces that hold a letter or a digit, each Han or kana
    character a word of its own."""
    found = []
    for piece in _CJK.sub(lambda m: f" {m.group()} ", collapsed(text)).split():
        if any(c.isalnum() for c in piece):
            found.append(piece)
    return found


def _bare(text: str) -> str:
    """Only the letters, marks and digits of the text: what is compared when a quote may be the whole text."""
    return "".join(c for c in unicodedata.normalize("NFC", text) if c.isalnum() or unicodedata.category(c)[0] == "M")


def words(text: str) -> int:
    """How many words the text holds, as the quote rule counts them."""
    return len(_words(text))


def too_short(quote: str, text: str) -> bool:
    """Whether the quote is too short to place a memory in ``text``: under MIN_WORDS words and under
    MIN_CHARS characters (white space collapsed), or without a word at all; the whole text (its
    punctuation aside) is never too short."""
    short = collapsed(quote)
    count = words(short)
    if count and (count >= MIN_WORDS or len(short) >= MIN_CHARS):
        return False
    return not (short == collapsed(text) or (count and _bare(short) == _bare(text)))
