"""The injection gate's constants measured where they were not chosen: LoCoMo 6-10 and the coding archive.

bench/injection.py chose the gate (config.py `Gate`: coverage 0.25, step 0.01 at first, 0.02 since
2026-12-06, 5 items, 2,000 characters) on LoCoMo 1-5 and the first half of its coding prompts. This
sweep reads the candidates of every prompt once with an open gate (`Engine.inject`, 15 candidates)
from the ablation's archives (bench/ablation_data.py: LoCoMo recorded as bench/conversation_recall.py
records it; the coding archive of bench/second_look_coding.py, whose 24 notes sit among 400 file
reads), then applies `injection.passing` for each setting. Answerable prompts: LoCoMo 6-10 categories
1-4 and the 24 coding follow-ups (hit@injected: a gold record among the injected); noise prompts:
LoCoMo 6-10 category 5 (no answer in the conversation) and bench/injection_set.py's 24 unrelated
prompts (any injected).

Beside each setting: how many prompts got another set of items than with the defaults. (Until
2026-12-07 a cosine counted less the prompt's best cosine to eight sentences of small talk, with a
floor of 0.02 on that margin; this sweep at commit 250108c replayed the gate without them: no prompt
of either set changed. docs/decisions/2026-12-03-injection-gate.md.)

    python -m bench.gate_sweep         # prints the tables (and saves the candidates under bench/out/ablation/)
    python -m bench.gate_sweep --vary memlikehuman.retrieval.injection.POOL 10 15 30   # the default gate as a
        module constant of its path takes each value in turn (in this process only; --modes fast: fast alone)
"""

from __future__ import annotations

import contextlib
import importlib
import json
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from bench import ablation_data, report
from bench.ablation_data import OUT
from bench.conversation_recall import DATA, _evidence
from bench.injection_set import UNRELATED
from memlikehuman.engine import Engine
from memlikehuman.providers.local import DEFAULT_MODEL
from memlikehuman.records import Scope
from memlikehuman.retrieval.injection import Gate, passing

OPEN = {"items": 15, "chars": 10**6, "coverage": 0.0, "step": 0.0}
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
    """A prompt's candidates: record ID, coverage, cosine (None in fast mode), line length; and how long
    reading them took (seconds)."""

    candidates: Candidates
    seconds: float = 0.0


def candidates(mode: str, varied: tuple[str, float] | None = None) -> list[Found]:
    """Every prompt's candidates read with an open gate (and a module constant at another value)."""
    path = OUT / f"gate-candidates-{mode}{'' if varied is None else f'-{varied[0]}={varied[1]}'}.json"
    if path.exists():
        saved = json.loads(path.read_text())
        if isinstance(saved, dict) and "seconds" in saved:
            pairs = zip(saved["candidates"], saved["seconds"], strict=True)
            return [Found([tuple(c) for c in found], s) for found, s in pairs]  # type: ignore[misc]
    found: list[Found] = []
    asked = prompts()
    with _varied(*varied) if varied else contextlib.nullcontext():
        for name, db in (("locomo", OUT / "locomo.sqlite3"), ("coding", OUT / "coding.sqlite3")):
            with Engine(ablation_data.settings(db, DEFAULT_MODEL)) as engine:
                for n, p in enumerate(asked):
                    if (p.set == "coding") != (name == "coding"):
                        continue
                    started = time.perf_counter()
                    items = engine.inject(p.scope, p.text, mode=mode, session_id=f"gate-{n}", gate=OPEN)
                    rows = [(i.record_id, i.coverage, i.similarity, len(i.line)) for i in items]
                    found.append(Found(rows, time.perf_counter() - started))
                    print(f"\r{mode} {len(found)}/{len(asked)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    path.write_text(json.dumps({"candidates": [f.candidates for f in found], "seconds": [f.seconds for f in found]}))
    return found


@contextlib.contextmanager
def _varied(path: str, value: float) -> Iterator[None]:
    """The module constant at `path` (memlikehuman.text.overlap.STEM_CHARS) set to `value` in this process."""
    module, name = path.rsplit(".", 1)
    owner = importlib.import_module(module)
    old = getattr(owner, name)
    setattr(owner, name, type(old)(value))
    try:
        yield
    finally:
        setattr(owner, name, old)


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


def changed(asked: Sequence[Prompt], found: Sequence[Found], gate: Gate, group: str) -> int:
    """How many of the group's prompts get other items through `gate` than through the defaults."""
    return sum(1 for p, f in zip(asked, found, strict=True) if p.set == group and chosen(f, DEFAULT) != chosen(f, gate))


GRID = (
    [Gate(coverage=c) for c in (0.15, 0.2, 0.3, 0.35, 0.4, 0.5, 1.01)]
    + [Gate(step=s) for s in (0.0, 0.005, 0.01, 0.015, 0.03, 9.0)]
    + [Gate(items=i) for i in (1, 3, 8)]
    + [Gate(chars=c) for c in (500, 1000, 4000)]
)
FIELDS = ("items", "chars", "coverage", "step")


def tables() -> str:
    asked = prompts()
    parts = []
    for mode in ("fast", "semantic"):
        found = candidates(mode)
        headers = ["gate (changed from default)", "set", "hit@injected", "noise: any injected", "items", "chars"]
        headers.append("prompts changed")
        rows: list[list[object]] = []
        for gate in [DEFAULT, *GRID]:
            diff = ", ".join(f"{k} {getattr(gate, k)}" for k in FIELDS if getattr(gate, k) != getattr(DEFAULT, k))
            name = diff or "default"
            for group in ("locomo 6-10", "coding"):
                hit, noise, items, chars = measure(asked, found, gate, group)
                moved = changed(asked, found, gate, group)
                rows.append([name, group, hit, noise, f"{items:.2f}", f"{chars:.0f}", moved])
        parts.append(f"{mode}:\n\n" + report.table(headers, rows))
    counts = {
        g: (sum(1 for p in asked if p.set == g and p.gold), sum(1 for p in asked if p.set == g and not p.gold))
        for g in ("locomo 6-10", "coding")
    }
    parts.append("prompts (answerable, no answer): " + ", ".join(f"{g} {a}/{n}" for g, (a, n) in counts.items()))
    return "\n\n".join(parts)


def vary_table(path: str, values: Sequence[float], modes: Sequence[str]) -> str:
    """The default gate over the candidates read with the constant at `path` at each value: hit@injected,
    noise, the prompts whose items change against today's, and the median time of reading a prompt's
    candidates."""
    asked = prompts()
    headers = ["mode", path.rsplit(".", 2)[-2] + "." + path.rsplit(".", 1)[1], "set", "hit@injected"]
    headers += ["noise: any injected", "prompts changed", "ms per prompt"]
    rows: list[list[object]] = []
    for mode in modes:
        today = candidates(mode)
        for value in values:
            found = candidates(mode, (path, value))
            for group in ("locomo 6-10", "coding"):
                hit, noise, _, _ = measure(asked, found, DEFAULT, group)
                mine = [(f, o) for p, f, o in zip(asked, found, today, strict=True) if p.set == group]
                moved = sum(1 for f, o in mine if _ids(f) != _ids(o))
                ms = 1000 * statistics.median(f.seconds for f, _ in mine)
                rows.append([mode, value, group, hit, noise, moved, f"{ms:.0f}"])
    return report.table(headers, rows)


def _ids(found: Found) -> list[str]:
    return [found.candidates[n][0] for n in chosen(found, DEFAULT)]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--vary"]:
        fast_only = sys.argv[-2:] == ["--modes", "fast"]
        path, *values = sys.argv[2 : -2 if fast_only else None]
        text = vary_table(path, [float(v) for v in values], ["fast"] if fast_only else ["fast", "semantic"])
        (OUT / f"gate-{path.rsplit('.', 1)[1]}.txt").write_text(text + "\n")
        print(text)
        raise SystemExit(0)
    text = tables()
    (OUT / "gate.txt").write_text(text + "\n")
    print(text)
