"""LoCoMo evidence recall with and without the second look at the best events, in one run.

Every turn is recorded once and embedded with the default local model through the reindex path;
then every question of categories 1-4 is asked in `fast`, `semantic` and `deep` mode with the
default tuning, and in `semantic` and `deep` again with `Tuning(second_look=0)` (recall as it was
before the step), and in `semantic` with the length feature counted up to 1,000 characters (as
before it stopped at LoCoMo's longest turn). A second table asks bench/second_look_coding.py's
coding archive, where file reads are far longer than any LoCoMo turn. The model's weights were
fitted on conversations 1-5 (scratch; docs/decisions/ranking-ablation.md), so the rows are given for conversations 1-5
(tuning), 6-10 (held out) and all 10.

    python -m bench.second_look                      # all 10 conversations, writes docs/benchmarks.md
    python -m bench.second_look --conversations 2    # a quick look, no doc update
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence

from bench import report, second_look_coding
from bench.conversation_recall import Scores, load, render
from bench.embedder_recall import arguments, by_halves, recorded, settings
from memlikehuman.engine import Engine
from memlikehuman.index import reindex
from memlikehuman.providers.local import DEFAULT_MODEL
from memlikehuman.retrieval.ranking import DEFAULT_TUNING, Tuning

WITHOUT = dataclasses.replace(DEFAULT_TUNING, second_look=0)
OLD_CAP = dataclasses.replace(DEFAULT_TUNING, second_look_length_cap=1000)
VARIANTS: list[tuple[str, str, Tuning]] = [
    ("fast", "fast", DEFAULT_TUNING),
    ("semantic, no second look (before)", "semantic", WITHOUT),
    ("semantic, length counted up to 1,000 characters (before)", "semantic", OLD_CAP),
    ("semantic", "semantic", DEFAULT_TUNING),
    ("deep, no second look (before)", "deep", WITHOUT),
    ("deep", "deep", DEFAULT_TUNING),
]


def main(argv: Sequence[str] | None = None) -> None:
    args = arguments(argv, __doc__)
    conversations = load(args.data, args.conversations)
    results: dict[str, Scores] = {}
    with tempfile.TemporaryDirectory(prefix="mlh-second-look-") as tmp:
        db = recorded(tmp, conversations)
        with Engine(settings(db, DEFAULT_MODEL)) as engine:
            reindex.rebuild_vectors(engine.indexer, missing_only=False)
            for name, mode, tuning in VARIANTS:
                for half, scores in by_halves(engine, conversations, mode, tuning).items():
                    results[f"{name}, conversations {half}"] = scores
        coding = second_look_coding.rows(tmp, DEFAULT_MODEL, second_look_coding.variants(DEFAULT_TUNING))
    turns = sum(len(c.turns) for c in conversations)
    questions = sum(len(c.questions) for c in conversations)
    notes = [
        f"{len(conversations)} conversations, {turns:,} turns, {questions:,} questions (categories 1-4)",
        f"vectors: {DEFAULT_MODEL} (the default), made by rebuild_vectors as `memlikehuman reindex` does",
        f"the second look re-orders the best {DEFAULT_TUNING.second_look} events of semantic/deep recall"
        f" (retrieval/second_look.py, weights {DEFAULT_TUNING.second_look_weights}, fitted on conversations 1-5);"
        " fast recall has no second look",
        "latency: in-process recall() per question, including query embedding for semantic/deep",
    ]
    order = sorted(results, key=lambda name: ("1-5" not in name, "6-10" not in name))
    body = render({name: results[name] for name in order}, notes)
    headers = ["coding archive (24 notes, 400 file reads)", "R@1", "R@5", "MRR", "note not in top 10"]
    body += "\n\n" + report.table(headers, coding) + "\n\n" + second_look_coding.NOTE
    print(body)
    if args.conversations == 10:
        title = "LoCoMo recall with the second look"
        report.write_section("second-look", title, "python -m bench.second_look", body)


if __name__ == "__main__":
    main()
