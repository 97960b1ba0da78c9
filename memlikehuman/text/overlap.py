"""Which words of a query a text holds: the measure behind the injection gate (retrieval/injection.py).

Words are compared by a light stem (lowercase, a few English endings cut, at most 6 characters kept),
so "painted" meets "painting" and "servers" meets "server"; runs in the scripts the word index cannot
cut (CJK, Thai, Cyrillic, ...) are compared by their n-grams, as the n-gram index compares them.
"""

from __future__ import annotations

import re

from . import ngrams

_WORD = re.compile(r"\w+", re.UNICODE)
_ENDINGS = ("ingly", "ings", "ing", "edly", "ed", "ies", "es", "ly", "s")
STEM_CHARS = 6


def stem(word: str) -> str:
    """A crude stem: the word lowercased, one common English ending cut, at most STEM_CHARS kept."""
    word = word.lower()
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[: -len(ending)]
            break
    return word[:STEM_CHARS]


def terms(text: str) -> set[str]:
    """The stems of a text's words and the n-grams of its unsegmented runs."""
    found = {stem(w) for w in _WORD.findall(text)}
    found.update(ngrams.query(text, limit=10_000).grams)
    return found


def query_terms(words: list[str], text: str) -> list[str]:
    """A query's terms to weigh: the stems of its content words, then the n-grams of its unsegmented runs."""
    found = [stem(w) for w in words]
    found += ngrams.query(text).grams
    return list(dict.fromkeys(found))
