"""How long a quote must be to place a memory in its text: the measurement behind the quote-length rule.

Over LoCoMo's turns (read from ../shared/data/locomo10.json, never copied) and the multilingual set:
1. plausible quotes: the sentences of each turn (what the answer schema offers a model as quotes):
   how many fall under N characters or N words, and how many of those are not the whole turn (a rule
   "at least N, or the whole text" would reject them);
2. random spans: the share of random k-character and k-word substrings of a turn (and of a whole
   session, standing for a long event) that occur once in it.

    python -m bench.quote_length [--data PATH] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.multilingual_set import CASES
from memlikehuman.lifecycle.extract_schema import sentences
from memlikehuman.text.quotes import collapsed, too_short, words

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "locomo10.json"
CHARS = (4, 6, 8, 10, 12, 15, 20)
WORDS = (1, 2, 3, 4, 5)
SAMPLES = 20_000


def turns_and_sessions(path: Path) -> tuple[list[str], list[str]]:
    """Every turn's text and every session's turns joined by newlines."""
    turns, sessions = [], []
    for item in json.loads(path.read_text(encoding="utf-8")):
        conv = item["conversation"]
        for key in sorted(k for k in conv if re.fullmatch(r"session_\d+", k)):
            texts = [t["text"] for t in conv[key] if t.get("text")]
            turns += texts
            sessions.append("\n".join(texts))
    return turns, sessions


def occurrences(text: str, span: str) -> int:
    """How often span occurs in text, overlapping occurrences counted."""
    count, start = 0, text.find(span)
    while start != -1 and count < 2:
        count, start = count + 1, text.find(span, start + 1)
    return count


def unique_share(texts: Sequence[str], pick: Callable[[random.Random, str], str | None], rng: random.Random) -> float:
    """The share of random spans (one per draw of a text) that occur once in their text."""
    found = unique = 0
    while found < SAMPLES:
        text = collapsed(rng.choice(texts))
        span = pick(rng, text)
        if span is None:
            continue
        found += 1
        unique += occurrences(text, span) == 1
    return unique / found


def chars(k: int) -> Callable[[random.Random, str], str | None]:
    def pick(rng: random.Random, text: str) -> str | None:
        if len(text) <= k:
            return None
        start = rng.randrange(len(text) - k + 1)
        return text[start : start + k]

    return pick


def word_span(k: int) -> Callable[[random.Random, str], str | None]:
    def pick(rng: random.Random, text: str) -> str | None:
        tokens = text.split(" ")
        if len(tokens) <= k:
            return None
        start = rng.randrange(len(tokens) - k + 1)
        return " ".join(tokens[start : start + k])

    return pick


def report_sentences(turns: Sequence[str], label: str) -> None:
    pairs = [(s, t) for t in turns for s in sentences(t)]
    partial = [(s, t) for s, t in pairs if collapsed(s) != collapsed(t)]
    print(f"\n{label}: {len(turns):,} turns, {len(pairs):,} sentences, {len(partial):,} of them not the whole turn")
    print("| shorter than | share of all sentences | share of the sentences that are not the whole turn |")
    print("|---|---|---|")
    for n in CHARS:
        a = sum(len(collapsed(s)) < n for s, _ in pairs) / len(pairs)
        b = sum(len(collapsed(s)) < n for s, _ in partial) / max(1, len(partial))
        print(f"| {n} characters | {a:.1%} | {b:.1%} |")
    for n in WORDS:
        a = sum(words(s) < n for s, _ in pairs) / len(pairs)
        b = sum(words(s) < n for s, _ in partial) / max(1, len(partial))
        print(f"| {n} words | {a:.1%} | {b:.1%} |")
    rejected = [s for s, t in pairs if too_short(s, t)]
    print(f"the rule (3 words or 12 characters, or the whole text) rejects {len(rejected):,} sentences")
    print(f"({len(rejected) / len(pairs):.1%}); the most frequent:")
    counts: dict[str, int] = {}
    for sentence in rejected:
        counts[sentence] = counts.get(sentence, 0) + 1
    print(", ".join(f"{s!r} {n}" for s, n in sorted(counts.items(), key=lambda kv: -kv[1])[:25]))


def report_uniqueness(turns: Sequence[str], sessions: Sequence[str], rng: random.Random) -> None:
    print("\n| random span | unique in its turn | unique in its session |")
    print("|---|---|---|")
    spans = [(f"{k} characters", chars(k)) for k in (2, 4, 6, 8, 10, 12, 15, 20)]
    spans += [(f"{k} words", word_span(k)) for k in (1, 2, 3, 4)]
    for label, pick in spans:
        print(f"| {label} | {unique_share(turns, pick, rng):.1%} | {unique_share(sessions, pick, rng):.1%} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help="path of locomo10.json")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    turns, sessions = turns_and_sessions(args.data)
    rng = random.Random(args.seed)
    report_sentences(turns, "LoCoMo")
    report_uniqueness(turns, sessions, rng)
    texts = [case.text for case in CASES]
    report_sentences(texts, "multilingual set")
    print("\n| random span | unique in its text (multilingual set) |")
    print("|---|---|")
    for k in (2, 3, 4, 6):
        print(f"| {k} characters | {unique_share(texts, chars(k), rng):.1%} |")


if __name__ == "__main__":
    main()
