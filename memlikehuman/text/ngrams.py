"""Character n-grams of the scripts the word index cannot cut: the second full-text index's terms.

The word index (``unicode61``) splits text at spaces and punctuation, so a Chinese, Japanese or
Thai sentence is one long token, and a Korean, Russian or Arabic word with a particle or an
inflection glued to it is a token the bare word never equals. For every run of letters outside
the Latin script, the n-gram index holds one term per character: the ``n`` characters that start
there (shorter at the run's end). Han, kana and Hangul use bigrams (most Chinese and Japanese
words and Korean stems are two characters: 绿茶, 仕事, 회의); the other scripts (Thai, Cyrillic,
Arabic, Hebrew, Indic, ...) use trigrams, which match a stem inside an inflected or prefixed word.
bench/multilingual.py measured the choice (docs/decisions/2026-12-01-ngram-index.md).

Because every character starts a term, a query shorter than ``n`` (a single Han character) is
matched as a prefix of the terms: loose, and the recall says so in a warning.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

# Han (with CJK marks and compatibility ideographs), kana, Hangul: bigrams.
CJK_RANGES = (
    "\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c\u3040-\u309f\u30a0-\u30ff"
    "\u3100-\u312f\u3130-\u318f\u31a0-\u31bf\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    "\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f\u1100-\u11ff"
)
# Where the other n-gram scripts live: Cyrillic to Mongolian (but Hangul jamo), Glagolitic, Coptic,
# Ethiopic and Cyrillic extensions, Yi to Meetei Mayek (without the Latin extensions), Hebrew and
# Arabic presentation forms. Latin and Greek are left to the word index, which handles them well.
_OTHER_BLOCKS = (
    (0x0400, 0x10FF),
    (0x1200, 0x1CFF),
    (0x2C00, 0x2C5F),
    (0x2C80, 0x2DFF),
    (0xA000, 0xA6FF),
    (0xA800, 0xAB2F),
    (0xAB70, 0xABFF),
    (0xFB1D, 0xFDFF),
    (0xFE70, 0xFEFF),
)
# Arabic short vowels, the tatweel and the superscript alef are often omitted in writing.
_ARABIC_OPTIONAL = re.compile("[\u0640\u064b-\u065f\u0670]")
CJK_N, OTHER_N = 2, 3


def _ranges() -> str:
    """A regex class body of the letters, marks and digits of _OTHER_BLOCKS."""
    spans: list[tuple[int, int]] = []
    for low, high in _OTHER_BLOCKS:
        for code in range(low, high + 1):
            if unicodedata.category(chr(code))[0] not in "LMN":
                continue
            if spans and spans[-1][1] == code - 1:
                spans[-1] = (spans[-1][0], code)
            else:
                spans.append((code, code))
    return "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in spans)


@functools.cache
def _run_pattern() -> re.Pattern[str]:
    """Built on first use (about 10 ms): Latin-only text, most of what a hook records, never needs it."""
    return re.compile(f"(?P<cjk>[{CJK_RANGES}]+)|(?P<other>[{_ranges()}]+)")


def normalize(text: str) -> str:
    """NFKC, case-folded, without the optional Arabic vowel signs: the form both sides compare."""
    return _ARABIC_OPTIONAL.sub("", unicodedata.normalize("NFKC", text).casefold())


def runs(text: str) -> Iterator[tuple[str, int]]:
    """Each run of n-gram script characters in the (normalized) text, with its n."""
    if text.isascii():
        return
    for match in _run_pattern().finditer(normalize(text)):
        yield match.group(0), CJK_N if match.lastgroup == "cjk" else OTHER_N


def index_text(text: str) -> str:
    """The text's n-gram terms, space-separated (empty for Latin-only text): a column's value."""
    if text.isascii():  # most of what is recorded: no generator to set up (runs() yields nothing)
        return ""
    return " ".join(run[i : i + n] for run, n in runs(text) for i in range(len(run)))


@dataclass(frozen=True)
class Query:
    """What a query asks of the n-gram index: whole n-grams, and runs too short for one (prefixes)."""

    grams: tuple[str, ...]
    prefixes: tuple[str, ...]

    @property
    def terms(self) -> list[str]:
        """Terms for search.lexical: prefixes carry a trailing '*' (a word token never does)."""
        return list(dict.fromkeys([*self.grams, *(p + "*" for p in self.prefixes)]))


def query(text: str, limit: int = 48) -> Query:
    """The n-grams of a query's runs in n-gram scripts (nothing for a Latin-only query)."""
    grams: list[str] = []
    prefixes: list[str] = []
    for run, n in runs(text):
        if len(run) < n:
            prefixes.append(run)
        else:
            grams.extend(run[i : i + n] for i in range(len(run) - n + 1))
    kept = tuple(dict.fromkeys(grams))[:limit]
    return Query(kept, tuple(dict.fromkeys(prefixes))[: max(0, limit - len(kept))])


def short_warning(text: str) -> str | None:
    """A warning when part of the query is shorter than its script's n-grams, else None."""
    short = [run for run, n in runs(text) if len(run) < n]
    if not short:
        return None
    shown = ", ".join(short[:5])
    return (
        f"the query part(s) {shown} are shorter than the 2 (Chinese, Japanese, Korean) or 3 (other scripts)"
        " characters full-text matching compares: they were matched as the start of longer words, so results"
        " may be loose; give a longer word or phrase for precise matches"
    )
