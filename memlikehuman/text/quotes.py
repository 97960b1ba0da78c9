"""Quotes: the verbatim span of its event a memory points at (tools.md, extraction response)."""

from __future__ import annotations

import re
import unicodedata


def collapsed(text: str) -> str:
    """The text as quotes are checked against it: NFC, runs of white space as one space, trimmed."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFC", text)).strip()


def span(text: str, quote: str) -> tuple[int, int] | None:
    """Where the quote occurs in ``text`` as given, white space matching any white space; None if not."""
    words = quote.split()
    found = re.search(r"\s+".join(re.escape(word) for word in words), text) if words else None
    return found.span() if found else None
