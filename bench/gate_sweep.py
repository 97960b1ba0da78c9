"""The injection gate's constants measured where they were not chosen: LoCoMo 6-10 and the coding archive.

bench/injection.py chose the gate (config.py `Gate`: coverage 0.25, similarity margin 0.02, step 0.01 at
first, 0.02 since 2026-12-06, 5 items, 2,000 characters) on LoCoMo 1-5 and the first half of its coding
prompts. This
sweep reads the candidates of every prompt once with an open gate (`Engine.inject`, 15 candidates)
from the ablation's archives (bench/ablation_data.py: LoCoMo recorded as bench/conversation_recall.py
records it; the coding archive of bench/second_look_coding.py, whose 24 notes sit among 400 file
reads), then applies `injection.passing` for each setting. Answerable prompts: LoCoMo 6-10 categories
1-4 and the 24 coding follow-ups (hit@injected: a gold record among the injected); noise prompts:
LoCoMo 6-10 category 5 (no answer in the conversation) and bench/injection_set.py's 24 unrelated
prompts (any injected).

The margin of an item is its cosine to the prompt less the prompt's best cosine to the anchors (small
talk, injection.ANCHORS); the sweep also records that floor per prompt (read from the gate in this
process), so the gate without anchors is replayed on the items' plain cosines. Beside each setting:
how many prompts got another set of items than with the defaults.

    python -m bench.gate_sweep     # prints the tables (and saves the candidates under bench/out/ablation/)
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from bench import ablation_data, report
from bench.ablation_data import OUT
from bench.conversation_recall import DATA, _evidence
from bench.injection_set import UNRELATED
from memlikehuman.engine import Engine
from memlikehuman.providers.local import DEFAULT_MODEL
from memlikehuman.records import Scope
from memlikehuman.retrieval import injection
from memlikehuman.retrieval.injection import Gate, passing

OPEN = {"items": 15, "chars": 10**6, "coverage": 0.0, "similarity": -9.0, "step": 0.0}
DEFAULT = Gate()


@dataclass(frozen=True)
class Prompt:
    scope: Scope
    text: str
    set: str  # "locomo 6-10" or "coding"
    gold: frozenset[str]  # empty: nothing should be injected


def prompts() -> list[Prompt]:
    raw = json.loads(DATA.read_text(encoding="utf-8"))
    out = []
    for item in raw[5:10]:
        scope = Scope("locomo", item["sample_id"])
        known = {
            t["dia_id"]
            for key, turns in item["conversation"].items()
            if key.startswith("session_") and isinstance(turns, list)
            for t in turns
        }
        for qa in item["qa"]:
            gold = frozenset(
                f"locomo-{item['sample_id']}-{i}" for r in qa.get("evidence", []) for i in _evidence(r) if i in known
            )
            if qa["category"] == 5:
                out.append(Prompt(scope, qa["question"], "locomo 6-10", frozenset()))
            elif qa["category"] in (1, 2, 3, 4) and gold:
                out.append(Prompt(scope, qa["question"], "locomo 6-10", gold))
    coding = ablation_data.coding()
    out += [Prompt(i.scope, i.text, "coding", i.gold) for i in coding.items]
    out += [Prompt(coding.items[0].scope, text, "coding", frozenset()) for text in UNRELATED]
    return out


Candidates = list[tuple[str, float, float | None, int]]


@dataclass(frozen=True)
class Found:
    """A prompt's candidates (record ID, coverage, margin, line length) and its anchors' floor."""

    candidates: Candidates
    floor: float | None  # None in fast mode


def candidates(mode: str) -> list[Found]:
    path = OUT / f"gate-candidates-{mode}.json"
    if path.exists():
        saved = json.loads(path.read_text())
        if isinstance(saved, dict):
            pairs = zip(saved["candidates"], saved["floors"], strict=True)
            return [Found([tuple(c) for c in found], floor) for found, floor in pairs]  # type: ignore[misc]
    found: list[Found] = []
    asked = prompts()
    floors: list[float | None] = []
    measured = injection._anchor_floor

    def floor(sources: object, dense: object) -> float | None:
        floors.append(measured(sources, dense))  # type: ignore[arg-type]
        return floors[-1]

    injection._anchor_floor = floor  # type: ignore[assignment]  # read, not changed: this process only
    try:
        for name, db in (("locomo", OUT / "locomo.sqlite3"), ("coding", OUT / "coding.sqlite3")):
            with Engine(ablation_data.settings(db, DEFAULT_MODEL)) as engine:
                for n, p in enumerate(asked):
                    if (p.set == "coding") != (name == "coding"):
                        continue
                    floors.clear()
                    items = engine.inject(p.scope, p.text, mode=mode, session_id=f"gate-{n}", gate=OPEN)
                    rows = [(i.record_id, i.coverage, i.similarity, len(i.line)) for i in items]
                    found.append(Found(rows, floors[0] if floors else None))
                    print(f"\r{mode} {len(found)}/{len(asked)}", end="", file=sys.stderr, flush=True)
    finally:
        injection._anchor_floor = measured
    print(file=sys.stderr)
    path.write_text(json.dumps({"candidates": [f.candidates for f in found], "floors": [f.floor for f in found]}))
    return found


def without_anchors(found: Found) -> Found:
    """The candidates as the gate would see them with no anchors: each margin its plain cosine."""
    if found.floor is None:
        return found
    cosines = [(rid, c, None if m is None else round(m + found.floor, 4), n) for rid, c, m, n in found.candidates]
    return Found(cosines, 0.0)


def chosen(found: Found, gate: Gate) -> list[int]:
    """The positions of the candidates the gate lets through, in order."""
    return passing([(c, m, length) for _, c, m, length in found.candidates], gate)


def measure(asked: Sequence[Prompt], found: Sequence[Found], gate: Gate, group: str) -> list[float]:
    """hit@injected, noise (share of no-answer prompts given anything), items and chars per answerable prompt."""
    hits, noise, items, chars = [], [], [], []
    for p, f in zip(asked, found, strict=True):
        if p.set != group:
            continue
        passed = [f.candidates[n] for n in chosen(f, gate)]
        if p.gold:
            hits.append(any(rid in p.gold for rid, *_ in passed))
            items.append(len(passed))
            chars.append(sum(c[3] for c in passed))
        else:
            noise.append(bool(passed))
    return [statistics.fmean(hits), statistics.fmean(noise), statistics.fmean(items), statistics.fmean(chars)]


def changed(asked: Sequence[Prompt], found: Sequence[Found], other: Sequence[Found], gate: Gate, group: str) -> int:
    """How many of the group's prompts get other items through `gate` over `other` than through the defaults."""
    return sum(
        1
        for p, f, o in zip(asked, found, other, strict=True)
        if p.set == group
        and [f.candidates[n][0] for n in chosen(f, DEFAULT)] != [o.candidates[n][0] for n in chosen(o, gate)]
    )


GRID = (
    [Gate(coverage=c) for c in (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 1.01)]
    + [Gate(similarity=s) for s in (-9.0, 0.0, 0.01, 0.03, 0.04, 0.06, 9.0)]
    + [Gate(step=s) for s in (0.0, 0.005, 0.01, 0.015, 0.03)]
    + [Gate(items=i) for i in (1, 3, 8)]
    + [Gate(chars=c) for c in (500, 1000, 4000)]
)
# Without anchors a margin is the plain cosine (0.75-0.88 with e5): any similarity floor below that is none.
NO_ANCHORS = [Gate(similarity=-9.0), *(Gate(similarity=-9.0, step=s) for s in (0.01, 0.03))]
FIELDS = ("items", "chars", "coverage", "similarity", "step")


def tables() -> str:
    asked = prompts()
    parts = []
    for mode in ("fast", "semantic"):
        found = candidates(mode)
        plain = [without_anchors(f) for f in found]
        headers = ["gate (changed from default)", "set", "hit@injected", "noise: any injected", "items", "chars"]
        headers.append("prompts changed")
        rows: list[list[object]] = []
        runs = [("", gate, found) for gate in [DEFAULT, *GRID]]
        runs += [("no anchors", gate, plain) for gate in NO_ANCHORS] if mode == "semantic" else []
        for label, gate, over in runs:
            diff = ", ".join(f"{k} {getattr(gate, k)}" for k in FIELDS if getattr(gate, k) != getattr(DEFAULT, k))
            name = ", ".join(part for part in (label, diff) if part) or "default"
            for group in ("locomo 6-10", "coding"):
                hit, noise, items, chars = measure(asked, over, gate, group)
                moved = changed(asked, found, over, gate, group)
                rows.append([name, group, hit, noise, f"{items:.2f}", f"{chars:.0f}", moved])
        parts.append(f"{mode}:\n\n" + report.table(headers, rows))
        lone = sum(1 for f in found if sum(m is not None for _, _, m, _ in f.candidates) == 1)
        parts.append(f"{mode}: prompts with exactly one candidate measured by meaning: {lone}")
    counts = {
        g: (sum(1 for p in asked if p.set == g and p.gold), sum(1 for p in asked if p.set == g and not p.gold))
        for g in ("locomo 6-10", "coding")
    }
    parts.append("prompts (answerable, no answer): " + ", ".join(f"{g} {a}/{n}" for g, (a, n) in counts.items()))
    return "\n\n".join(parts)


if __name__ == "__main__":
    text = tables()
    (OUT / "gate.txt").write_text(text + "\n")
    print(text)
