"""What memory_forget's ``still_said_by`` names: on a labelled set, and per forget on LoCoMo.

Run: python -m bench.still_said [--locomo PATH] [--samples 10] [--show FILE]

1. The labelled set (bench/still_said_set.py): each group's forgotten text and other records are
   recorded in one scope (an "other" memory is given by the agent on a turn of its own that says
   "ok"), over a background of other turns of that scope: none ("tiny"), each chat of bench/chats
   ("chat"), the first three LoCoMo conversations ("locomo"). The forgotten event's preview names
   what still says it; precision and recall against the labels, for the TUNE and HELD_OUT groups.
2. LoCoMo (CC BY-NC 4.0, read from ../shared/data/locomo10.json and never copied): every turn of the
   ten conversations recorded, one scope each; for ``--samples`` turns of each (seeded), the number
   of records the preview of forgetting the turn names. ``--show`` writes each sampled turn and what
   it names to FILE (outside the repository: it holds LoCoMo's text), to be judged by hand.

It measures whatever memlikehuman is imported: run it with an older checkout first on sys.path to
measure the rule that checkout has.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from bench import chat_set
from bench.conversation_recall import DATA, load
from bench.still_said_set import HELD_OUT, TUNE, Group
from memlikehuman import config
from memlikehuman.engine import Engine
from memlikehuman.records import Scope

ENV = {"MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
SCOPE = Scope("bench", "still-said")
Counts = dict[str, int]  # tp, fp, fn, tn


@contextmanager
def engine_at(path: Path) -> Iterator[Engine]:
    with Engine(config.load(path, env=ENV)) as engine:
        yield engine


def build_background(path: Path, turns: Sequence[str]) -> None:
    with engine_at(path) as engine:
        for n, text in enumerate(turns):
            engine.record(SCOPE, f"bg-{n}", text, "user", "chat", session_id="background")


def judge_group(path: Path, group: Group, counts: Counts) -> None:
    """Record the group over the background at ``path``, preview forgetting its text, count."""
    with engine_at(path) as engine:
        engine.record(SCOPE, "forgotten", group.forgotten, group.role, "chat", session_id="group")
        ids = []
        for n, other in enumerate(group.others):
            if other.role == "memory":
                given = [{"content": other.text, "quote": "ok"}]
                result = engine.record(SCOPE, f"o{n}", "ok", "assistant", "chat", session_id="group", memories=given)
                ids.append(result.memory_ids[0])
            else:
                engine.record(SCOPE, f"o{n}", other.text, other.role, "chat", session_id="group")
                ids.append(f"o{n}")
        named = set(engine.forget_preview(SCOPE, "forgotten").still_said_by)
    for other, record_id in zip(group.others, ids, strict=True):
        key = ("tp" if record_id in named else "fn") if other.named else ("fp" if record_id in named else "tn")
        counts[key] += 1


def labelled(backgrounds: dict[str, list[list[str]]], work: Path) -> None:
    for split, groups in (("tune", TUNE), ("held-out", HELD_OUT)):
        for name, turns_of in backgrounds.items():
            counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
            for b, turns in enumerate(turns_of):
                base = work / f"{name}-{b}.sqlite3"
                if not base.exists():
                    build_background(base, turns)
                for group in groups:
                    copy = work / "group.sqlite3"
                    for suffix in ("", "-wal", "-shm"):
                        Path(f"{copy}{suffix}").unlink(missing_ok=True)
                    shutil.copy(base, copy)
                    judge_group(copy, group, counts)
            tp, fp, fn = counts["tp"], counts["fp"], counts["fn"]
            print(
                f"{split:8s} {name:6s} records {sum(counts.values()):4d}  named right {tp:3d}  named wrongly {fp:3d}"
                f"  missed {fn:3d}  precision {tp / max(1, tp + fp):.2f}  recall {tp / max(1, tp + fn):.2f}"
            )


def locomo(path: Path, samples: int, work: Path, show: Path | None) -> None:
    conversations = load(path, None)
    archive = work / "locomo.sqlite3"
    rng = random.Random(11)
    counts: list[int] = []
    lines: list[str] = []
    with engine_at(archive) as engine:
        for conv in conversations:
            for turn in conv.turns:
                engine.record(conv.scope, conv.event_id(turn.dia_id), turn.text, "user", turn.speaker,
                              session_id=f"session_{turn.session}", occurred_at=turn.occurred_at)  # fmt: skip
        for conv in conversations:
            texts = {conv.event_id(t.dia_id): t.text for t in conv.turns}
            for turn in rng.sample(conv.turns, samples):
                event_id = conv.event_id(turn.dia_id)
                named = engine.forget_preview(conv.scope, event_id).still_said_by
                counts.append(len(named))
                lines += [f"=== {event_id}: {turn.text}", *(f"    {n}: {texts.get(n, n)}" for n in named)]
    total = sum(counts)
    print(
        f"LoCoMo: {len(counts)} forgets, {total} records named, {total / len(counts):.2f} per forget,"
        f" at most {max(counts)}, {sum(1 for c in counts if c)} forgets name any"
    )
    if show is not None:
        show.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=DATA, help="path of locomo10.json")
    parser.add_argument("--samples", type=int, default=10, help="turns forgotten per LoCoMo conversation")
    parser.add_argument("--show", type=Path, help="write the sampled LoCoMo turns and what they name here")
    args = parser.parse_args(argv)
    backgrounds = {"tiny": [[]], "chat": [[t.text for t in c.turns] for c in chat_set.conversations()]}
    if args.locomo.exists():
        backgrounds["locomo"] = [[t.text for t in c.turns] for c in load(args.locomo, 3)]
    else:
        print(f"LoCoMo not found at {args.locomo}: its rows are left out", file=sys.stderr)
    with tempfile.TemporaryDirectory() as directory:
        labelled(backgrounds, Path(directory))
        if args.locomo.exists():
            locomo(args.locomo, args.samples, Path(directory), args.show)


if __name__ == "__main__":
    main()
