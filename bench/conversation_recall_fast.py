"""LoCoMo fast-mode evidence recall@10 in seconds: no embedder, the first N conversations.

A cheap check beside bench.conversation_recall (which embeds every turn: ~15 min). `--plain-only`
runs only the plain query, so the same file also measures an older checkout of the code:

    python -m bench.conversation_recall_fast --conversations 3
    git archive BASE | tar -x -C /tmp/base && cd /tmp/base && \
        PYTHONPATH=/tmp/base python /path/to/bench/conversation_recall_fast.py --conversations 3 --plain-only
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.conversation_recall import DATA, Conversation, Scores, ask, ingest, load
from memlikehuman import config
from memlikehuman.engine import Engine
from memlikehuman.retrieval import aliases
from memlikehuman.retrieval.recall import DEFAULT_TUNING


def alias_phrasings(conv: Conversation) -> Callable[[str], list[str]]:
    """Phrasings with the names the speakers use for each other, learned from the conversation's turns."""
    seen: Counter[tuple[str, str]] = Counter()
    for session in sorted({t.session for t in conv.turns}):
        seen.update(aliases.observations((t.speaker, t.text) for t in conv.turns if t.session == session))
    speakers = sorted({t.speaker for t in conv.turns})
    learned = aliases.learn(seen, speakers)
    return lambda question: aliases.phrasings(question, learned, speakers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--plain-only", action="store_true")
    args = parser.parse_args()
    conversations = load(args.data, args.conversations)
    work = Path(tempfile.mkdtemp(prefix="locomo-fast-"))
    env = {"MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
    with Engine(config.load(work / "a.sqlite3", env=env)) as engine:
        ingest(engine, conversations)
        rows: dict[str, Scores] = {"plain": Scores()}
        for conv in conversations:
            ask(engine, conv, "fast", rows["plain"])
        if not args.plain_only:
            from bench.conversation_recall import rule_alternatives

            rows["relative dates not used"] = Scores()
            for conv in conversations:
                tuning = dataclasses.replace(DEFAULT_TUNING, relative_dates=False)
                ask(engine, conv, "fast", rows["relative dates not used"], tuning)
            aliased = rows["speaker-alias phrasings (memlikehuman.retrieval.aliases)"] = Scores()
            for conv in conversations:
                ask(engine, conv, "fast", aliased, DEFAULT_TUNING, alias_phrasings(conv))
            for fusion in ("rrf", "max"):
                name = f"rule alternatives, {fusion} fusion"
                rows[name] = Scores()
                for conv in conversations:
                    speakers = sorted({t.speaker for t in conv.turns})
                    tuning = dataclasses.replace(DEFAULT_TUNING, fusion=fusion)
                    ask(engine, conv, "fast", rows[name], tuning, lambda q, s=speakers: rule_alternatives(q, s))  # type: ignore[misc]
    for name, scores in rows.items():
        cats = " ".join(f"{c}:{np.mean(v):.3f}" for c, v in sorted(scores.by_category.items()))
        print(
            f"| fast, {name} | {len(scores.recall[10])} | {np.mean(scores.recall[10]):.3f} | {cats} |"
            f" {np.median(scores.seconds) * 1000:.1f} |"
        )


if __name__ == "__main__":
    main()
