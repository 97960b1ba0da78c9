"""The words a forget judges by: what the archive's full-text index holds for a text, less the words
every memory may hold whatever it was made from.

A text's words are cut as the index cuts them. The word index (FTS5's ``porter unicode61
remove_diacritics 2``, the same tokenizer on both backends) folds case and diacritics and stems, so
"Moved", "moves" and "move" are one term. Scripts written without spaces (Chinese, Japanese, Korean,
Thai, Lao, Khmer, Myanmar) have no words to cut: there the n-gram index's character n-grams
(text/ngrams.py) are the words, and the word index's clause-long tokens are left out.

Left out too, because they say nothing about where a memory came from: the function words of the
text's language (text/function_words.py) and the names the extractor's instructions make every
memory use ("The user ...", "The assistant ...": lifecycle/extract.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..text import function_words, ngrams

# lifecycle/extract.py SYSTEM tells the extractor to name whom a memory is about with these.
EXTRACTOR_WORDS = frozenset({"user", "assistant"})
WORD_INDEX, NGRAM_INDEX = "word", "ngram"
# Scripts written without spaces besides the CJK bigram scripts: Thai and Lao, Myanmar, Khmer.
_UNSPACED_BLOCKS = ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF))
_local = threading.local()


@dataclass(frozen=True)
class Word:
    """One word of a text: as written (what a full-text query takes), its index term, and which index."""

    surface: str
    term: str
    index: str  # WORD_INDEX or NGRAM_INDEX


def words(text: str) -> list[Word]:
    """The text's words as the index holds them, each term once, in order; function words left out."""
    found: dict[tuple[str, str], Word] = {}
    cut = [(surface, term) for surface, term in _tokens(text) if not _unspaced(surface)]
    kept = set(function_words.content(surface.casefold() for surface, _ in cut)) - EXTRACTOR_WORDS
    for surface, term in cut:
        if surface.casefold() in kept:
            found.setdefault((WORD_INDEX, term), Word(surface, term, WORD_INDEX))
    for gram in _grams(text):
        found.setdefault((NGRAM_INDEX, gram), Word(gram, gram, NGRAM_INDEX))
    return list(found.values())


def terms(texts: Iterable[str]) -> frozenset[str]:
    """Every index term of the texts' words (``words``), from both indexes."""
    return frozenset(f"{word.index}:{word.term}" for text in texts for word in words(text))


def all_terms(texts: Iterable[str]) -> frozenset[str]:
    """Every index term of the texts, function words included: what a source holds."""
    found: set[str] = set()
    for text in texts:
        found.update(f"{WORD_INDEX}:{term}" for _, term in _tokens(text))
        found.update(f"{NGRAM_INDEX}:{gram}" for gram in _grams(text, keep_phrases=True))
    return frozenset(found)


def _tokens(text: str) -> list[tuple[str, str]]:
    """(surface, term) of every token the word index cuts from the text."""
    if not text:
        return []
    data = text.encode("utf-8", "surrogatepass")
    cut = _tokenizer()(data, _reason(), None, include_offsets=True, include_colocated=False)
    return [(data[start:end].decode("utf-8", "replace"), token) for start, end, token in cut if token]


def _grams(text: str, *, keep_phrases: bool = False) -> list[str]:
    """The whole n-grams of the text's runs in scripts written without spaces."""
    source = text if keep_phrases else function_words.without_phrases(text)
    grams: list[str] = []
    for run, n in ngrams.runs(source):
        if n == ngrams.CJK_N or _in_unspaced_block(run[0]):
            grams += [run[i : i + n] for i in range(len(run) - n + 1)]
    return grams


def _unspaced(word: str) -> bool:
    """Whether the word is in a script written without spaces (its index words are n-grams)."""
    if word.isascii():
        return False
    return any(n == ngrams.CJK_N or _in_unspaced_block(run[0]) for run, n in ngrams.runs(word))


def _in_unspaced_block(char: str) -> bool:
    return any(low <= ord(char) <= high for low, high in _UNSPACED_BLOCKS)


def _tokenizer() -> Any:
    """The word index's tokenizer, one per thread (an in-memory apsw connection holds it)."""
    found = getattr(_local, "tokenizer", None)
    if found is None:
        import apsw

        _local.conn = apsw.Connection(":memory:")
        found = _local.tokenizer = _local.conn.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
    return found


def _reason() -> int:
    import apsw

    return int(apsw.FTS5_TOKENIZE_DOCUMENT)
