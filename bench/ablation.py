"""Ranking ablation: every layer and constant of recall's ranking removed in turn, on held-out data.

Three data sets (bench/ablation_data.py), each recorded and embedded once under bench/out/ablation/:
LoCoMo (conversations 1-5 are where the second look's weights and most constants were chosen; 6-10
held out), the coding set (24 follow-ups among file reads) and the chat set (bench/chat_set.py,
written for this and never fitted on). Every question is asked through recall() with a `Tuning`
variant (or, for a behaviour with no constant, a patch of the step in this process), in `fast` and
`semantic`; a question scores the share of its gold turns in the top 10 (R@10) and in the first place
(R@1). Query vectors are cached (per text), so variants differ only in the ranking.

    python -m bench.ablation run --label head       # defaults and every variant: bench/out/ablation/results-head.json
    python -m bench.ablation table --label head     # the ablation table from the saved results
    python -m bench.ablation cv --label head        # leave-one-conversation-out refit of the kept constants
    python -m bench.ablation aliases                # questions calling a speaker by an alias, with and without

Alternatives come in two kinds: rule-made (bench.conversation_recall.rule_alternatives: written from
the question alone, near-copies of it) and guesses, standing in for an agent that knows a word the
question lacks: for each question one right guess (the four longest content words of its first gold
turn) and one wrong guess (the same of a turn of its conversation that answers nothing), the wrong
one drawn by a seed of the question's text. Only the guesses exercise what the fusion does with an
alternative's own best record (phrasings.lift_winners).

The decision rule (issue): a layer stays only if it is worth >= 1 point of R@10 somewhere held out
(LoCoMo 6-10, coding, chat; fast or semantic) and costs < 0.5 anywhere (removing it gains less than
half a point in every group and mode, LoCoMo 1-5 included).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import pickle
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import ablation_data
from bench.ablation_data import OUT, DataSet, Item
from memlikehuman.engine import Engine
from memlikehuman.retrieval import ranking
from memlikehuman.retrieval.ranking import DEFAULT_TUNING, Tuning
from memlikehuman.retrieval.recall import recall

GROUPS = ("locomo 1-5", "locomo 6-10", "coding", "chat")
HELD_OUT = ("locomo 6-10", "coding", "chat")
MODES = ("fast", "semantic")
Patch = Callable[[], contextlib.AbstractContextManager[None]]


# -- the query embedder, cached per text ------------------------------------------------------------


class CachedEmbedder:
    """The engine's embedder with query vectors kept per text (also on disk, per model)."""

    def __init__(self, inner: Any, cache: dict[tuple[str, str], np.ndarray]) -> None:
        self.inner, self.cache = inner, cache
        self.model_id = inner.model_id
        self.batch_size = inner.batch_size
        self.needs_network = False

    def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if (kind, t) not in self.cache]
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing, kind), strict=True):
                self.cache[(kind, text)] = np.asarray(vector, dtype=np.float32)
        return np.stack([self.cache[(kind, t)] for t in texts])


class Sources:
    """What recall reads, with the cached embedder."""

    def __init__(self, engine: Engine, cache: dict[tuple[str, str], np.ndarray]) -> None:
        self.engine = engine
        self.embedder = CachedEmbedder(engine.embedder, cache)

    @property
    def db(self) -> Any:
        return self.engine.db

    @property
    def vectors(self) -> Any:
        return self.engine.vectors

    @property
    def settings(self) -> Any:
        return self.engine.settings


def _query_cache(model: str) -> tuple[Path, dict[tuple[str, str], np.ndarray]]:
    path = OUT / f"queries-{model.replace(':', '_').replace('/', '_')}.pickle"
    cache = pickle.loads(path.read_bytes()) if path.exists() else {}
    return path, cache


# -- patches: behaviours with no constant, switched off in this process only ----------------------


@contextlib.contextmanager
def _swap(owner: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


def no_fold() -> contextlib.AbstractContextManager[None]:
    """Raw hits that say the same are not folded into one (echoes.same_words gives no key)."""
    from memlikehuman.retrieval import echoes

    return _swap(echoes, "same_words", lambda text: "")


def no_answers_first() -> contextlib.AbstractContextManager[None]:
    from memlikehuman.retrieval import echoes

    return _swap(echoes, "answers_first", lambda chosen, answer_of, same: list(chosen))


def no_dense_floor() -> contextlib.AbstractContextManager[None]:
    """Cosines scaled by the best alone, not from the pool's worst (ranking.normalized floor=False)."""
    plain = ranking.normalized
    return _swap(ranking, "normalized", lambda pairs, weight, *, floor=False: plain(pairs, weight))


def _terms_with(drop: Callable[[list[str]], list[str]]) -> Callable[[str], list[str]]:
    from memlikehuman.retrieval import search

    def terms(query: str) -> list[str]:
        words = list(dict.fromkeys(w.lower() for w in search._WORD.findall(query)))
        return (drop(words) or words)[: search.MAX_TERMS]

    return terms


@contextlib.contextmanager
def stopwords(kind: str) -> Iterator[None]:
    """Query terms with no stopwords at all ("none") or the function words of the query's language
    (text/function_words.content, "per language") instead of search.STOPWORDS (English)."""
    from memlikehuman.retrieval import phrasings, search
    from memlikehuman.text import function_words

    drop = (lambda words: words) if kind == "none" else function_words.content
    terms = _terms_with(drop)
    with _swap(search, "terms", terms), _swap(phrasings, "terms", terms):
        yield


def asked_among_all() -> contextlib.AbstractContextManager[None]:
    """Every user turn of the ranking read to find the questions, not only the best (recall.ASKED_AMONG)."""
    from memlikehuman.retrieval import recall as recall_module

    return _swap(recall_module, "ASKED_AMONG", 10**9)


def asking_chars_unbounded() -> contextlib.AbstractContextManager[None]:
    """A turn of any length read to find out whether it only asks (search.ASKING_CHARS)."""
    from memlikehuman.retrieval import search

    return _swap(search, "ASKING_CHARS", 10**9)


def no_lift() -> contextlib.AbstractContextManager[None]:
    from memlikehuman.retrieval import phrasings

    return _swap(phrasings, "lift_winners", lambda fused, rankings, own: fused)


def _has_agreement() -> bool:
    from memlikehuman.retrieval import phrasings

    return hasattr(phrasings, "MAX_AGREEMENT")


def no_agreement() -> contextlib.AbstractContextManager[None]:
    from memlikehuman.retrieval import phrasings

    return _swap(phrasings, "MAX_AGREEMENT", 0.0)


# -- variants ----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Variant:
    name: str
    layer: str  # what is removed or changed
    tuning: Tuning = DEFAULT_TUNING
    patch: Patch | None = None
    alternatives: bool = False  # asked with rule alternatives (written from the question alone)
    held_out_only: bool = False  # LoCoMo 1-5 not asked (NaN rows): for the costlier alternatives rows
    guesses: bool = False  # asked with a right and a wrong guess as alternatives (module docstring)

    @property
    def base(self) -> str:
        """The row this variant is measured against."""
        return "guesses: defaults" if self.guesses else "alternatives: defaults" if self.alternatives else "defaults"


def _t(**changes: Any) -> Tuning:
    return dataclasses.replace(DEFAULT_TUNING, **changes)


FIELDS = {f.name for f in dataclasses.fields(Tuning)}


def _no_length() -> tuple[float, ...]:
    """The shipped second look's weights with the length feature's set to 0 (rank, score, cosine, before,
    after, log length, asks)."""
    weights = list(DEFAULT_TUNING.second_look_weights)
    if len(weights) == 7:
        weights[5] = 0.0
    return tuple(weights)


def variants() -> list[Variant]:
    """The ablation's rows; those whose constant this code no longer has are left out (the same harness
    runs today's main and the new code)."""
    return [v for v in _variants() if v is not None]


def _if(field: str, variant: Callable[[], Variant]) -> Variant | None:
    return variant() if field in FIELDS else None


def _variants() -> list[Variant | None]:
    d = DEFAULT_TUNING
    text, attribution, context = d.event_weights
    return [
        Variant("defaults", "-"),
        Variant(
            "no context column", "bm25 column: the turn before (weight 0.5)", _t(event_weights=(text, attribution, 0.0))
        ),
        Variant(
            "no attribution column", "bm25 column: speaker, cue labels (1.0)", _t(event_weights=(text, 0.0, context))
        ),
        Variant("dense weight 1.0", "dense weight 1.5 (vs lexical 1.0)", _t(dense=1.0)),
        Variant("no dense floor", "cosines scaled from the pool's worst", patch=no_dense_floor),
        Variant("no session share", "session share 0.8", _t(session=0.0)),
        Variant("no neighbour loans", "neighbour share 0.5", _t(neighbour=0.0)),
        Variant("all hits lend", "neighbour pool 100", _t(neighbour_pool=10_000)),
        Variant("no speaker factor", "speaker factor +0.6", _t(speaker=0.0)),
        Variant("no date factor", "date factor +1.0", _t(date=0.0)),
        _if(
            "relative_dates",
            lambda: Variant("no relative dates", "relative dates of event_dates", _t(relative_dates=False)),
        ),
        Variant(
            "speakers kept in the query vector",
            "speaker names stripped from the embedded query",
            _t(strip_speakers=False),
        ),
        Variant("no second look", "second look (30, 7 weights)", _t(second_look=0)),
        _if(
            "second_look_length_cap",
            lambda: Variant(
                "second look, no length cap", "second look length cap 450", _t(second_look_length_cap=10**6)
            ),
        ),
        _if(
            "second_look_length_cap",
            lambda: Variant("second look without length", "second look: length", _t(second_look_weights=_no_length())),
        ),
        Variant("no speaker aliases", "speaker-alias phrasing", _t(speaker_aliases=False)),
        Variant("pools 1000", "lexical/dense pools 300", _t(lexical_pool=1000, dense_pool=1000)),
        Variant("no fold", "echoes: same words folded", patch=no_fold),
        Variant("no answers first", "echoes: answers first", patch=no_answers_first),
        Variant("no stopwords", "English stopwords (search.STOPWORDS)", patch=lambda: stopwords("none")),
        Variant("per-language function words", "English stopwords (search.STOPWORDS)", patch=lambda: stopwords("lang")),
        Variant("alternatives: defaults", "-", alternatives=True, held_out_only=True),
        Variant(
            "alternatives: query weight 1",
            "query weight 2",
            _t(query_weight=1.0),
            alternatives=True,
            held_out_only=True,
        ),
        Variant("alternatives: no lift", "lift winners", patch=no_lift, alternatives=True, held_out_only=True),
        _if(
            "fusion",
            lambda: Variant(
                "alternatives: rrf fusion",
                "fusion max (vs rrf)",
                _t(fusion="rrf"),
                alternatives=True,
                held_out_only=True,
            ),
        ),
        Variant(
            "alternatives: full budgets",
            "alternative budgets 100 / 500 / 30",
            _t(alternative_pool=d.lexical_pool, alternative_scored_rows=2_000, alternative_neighbours=d.neighbour_pool),
            alternatives=True,
            held_out_only=True,
        ),
        Variant("guesses: defaults", "-", guesses=True, held_out_only=True),
        Variant("guesses: no lift", "lift winners", patch=no_lift, guesses=True, held_out_only=True),
        _if(
            "fusion",
            lambda: Variant(
                "guesses: rrf fusion", "fusion max (vs rrf)", _t(fusion="rrf"), guesses=True, held_out_only=True
            ),
        ),
        Variant("asked among all", "user turns read for questions: the best 50", patch=asked_among_all),
        Variant(
            "asking chars unbounded", "a turn read for a question: at most 600 characters", patch=asking_chars_unbounded
        ),
        Variant("second look pool 20", "second look pool 30", _t(second_look=20)),
        Variant("second look pool 50", "second look pool 30", _t(second_look=50)),
        _if(
            "fusion",
            lambda: Variant(
                "alternatives: no agreement",
                "agreement share 0.1",
                patch=no_agreement,
                alternatives=True,
                held_out_only=True,
            ),
        )
        if _has_agreement()
        else None,
    ]


# -- running -------------------------------------------------------------------------------------


def rule_alternatives(item: Item, speakers: Sequence[str]) -> list[str]:
    from bench.conversation_recall import rule_alternatives as rule

    return rule(item.text, speakers)[:8]


def _longest_words(text: str) -> str:
    from memlikehuman.retrieval import search

    return " ".join(sorted(dict.fromkeys(search.terms(text)), key=lambda w: -len(w))[:4])


def guessed_alternatives(turns: Sequence[tuple[str, str]], item: Item) -> list[str]:
    """A right guess (the longest content words of the item's first gold turn) and a wrong one (of a turn
    of its conversation that is no gold, drawn by a seed of the question's text); `turns`: (event ID, text)
    of the item's scope, in recording order."""
    import random
    import zlib

    texts = dict(turns)
    right = next((texts[g] for g in sorted(item.gold) if g in texts), "")
    others = [text for event_id, text in turns if event_id not in item.gold and _longest_words(text)]
    wrong = random.Random(zlib.crc32(item.text.encode())).choice(others) if others else ""
    return [guess for guess in (_longest_words(right), _longest_words(wrong)) if guess]


def turns_of(engine: Engine, items: Sequence[Item]) -> dict[str, list[tuple[str, str]]]:
    """(event ID, text) of each item conversation's events, in recording order."""
    found: dict[str, list[tuple[str, str]]] = {}
    for item in items:
        if item.conversation not in found:
            rows = engine.db.query(
                "SELECT event_id, text FROM events WHERE persona_id = ? AND project_id = ? ORDER BY sequence",
                (item.scope.persona_id, item.scope.project_id),
            )
            found[item.conversation] = [(r["event_id"], r["text"]) for r in rows]
    return found


def ask(
    sources: Sources,
    items: Sequence[Item],
    mode: str,
    variant: Variant,
    speakers: dict[str, list[str]],
    turns: dict[str, list[tuple[str, str]]] | None = None,
) -> list[list[float]]:
    """[R@1, R@10] of each item, in order."""
    out = []
    with variant.patch() if variant.patch else contextlib.nullcontext():
        for item in items:
            if variant.held_out_only and item.group == "locomo 1-5":
                out.append([math.nan, math.nan])
                continue
            alternatives = rule_alternatives(item, speakers[item.conversation]) if variant.alternatives else None
            if variant.guesses:
                alternatives = guessed_alternatives((turns or {})[item.conversation], item)
            result = recall(
                sources,
                item.scope,
                item.text,
                limit=10,
                search_mode=mode,
                tuning=variant.tuning,
                alternatives=alternatives,
            )
            if result.search_mode != mode:
                raise SystemExit(f"recall degraded to {result.search_mode}: {result.warnings}")
            ranked = [hit.event.event_id for hit in result.raw_fallback]
            out.append(
                [len(item.gold & set(ranked[:1])) / len(item.gold), len(item.gold & set(ranked)) / len(item.gold)]
            )
    return out


def speakers_of(engine: Engine, items: Sequence[Item]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for item in items:
        if item.conversation not in found:
            rows = engine.db.query(
                "SELECT DISTINCT source FROM events WHERE persona_id = ? AND project_id = ?",
                (item.scope.persona_id, item.scope.project_id),
            )
            found[item.conversation] = sorted(r["source"] for r in rows)
    return found


def datasets() -> list[DataSet]:
    return [ablation_data.locomo(), ablation_data.coding(), ablation_data.chat()]


def results_path(label: str) -> Path:
    return OUT / f"results-{label}.json"


def load_results(label: str) -> dict[str, list[list[float]]]:
    path = results_path(label)
    return json.loads(path.read_text()) if path.exists() else {}


def run(
    label: str, chosen: Sequence[Variant], modes: Sequence[str], fresh: bool = False
) -> dict[str, list[list[float]]]:
    """Every chosen variant on every set and mode (variants outermost); results saved (and reused unless
    `fresh`) by key."""
    from memlikehuman.providers.local import DEFAULT_MODEL

    results = {} if fresh else load_results(label)
    cache_path, cache = _query_cache(DEFAULT_MODEL)
    with contextlib.ExitStack() as stack:
        opened = []
        for data in datasets():
            engine = stack.enter_context(Engine(ablation_data.settings(data.db, DEFAULT_MODEL)))
            opened.append((data, Sources(engine, cache), speakers_of(engine, data.items), turns_of(engine, data.items)))
        for variant in chosen:
            for data, sources, speakers, turns in opened:
                for mode in modes:
                    key = f"{variant.name}|{data.name}|{mode}"
                    if key in results:
                        continue
                    started = time.perf_counter()
                    results[key] = ask(sources, data.items, mode, variant, speakers, turns)
                    r10 = statistics.fmean(r[1] for r in results[key] if r[1] == r[1])
                    took = time.perf_counter() - started
                    print(f"{label} {key}: R@10 {r10:.3f} ({took:.0f} s)", file=sys.stderr, flush=True)
                    results_path(label).write_text(json.dumps(results))
            cache_path.write_bytes(pickle.dumps(cache))
    return results


# -- summaries ------------------------------------------------------------------------------------


def items_by_set() -> dict[str, list[Item]]:
    return {data.name: data.items for data in datasets()}


def score(
    results: dict[str, list[list[float]]], items: dict[str, list[Item]], variant: str, mode: str, group: str, k: int = 1
) -> float:
    """Mean R@10 (k=1) or R@1 (k=0) of a group's questions."""
    name = "locomo" if group.startswith("locomo") else group
    rows = results.get(f"{variant}|{name}|{mode}")
    if rows is None:
        return float("nan")
    picked = [row[k] for row, item in zip(rows, items[name], strict=True) if item.group == group and row[k] == row[k]]
    return statistics.fmean(picked) if picked else math.nan


def worth(
    results: dict[str, list[list[float]]], items: dict[str, list[Item]], variant: Variant, k: int = 1
) -> dict[tuple[str, str], float]:
    """Defaults minus the variant, R@10 (k=1) or R@1 (k=0) in points, per (group, mode): > 0 when what it
    removes helps."""
    base = variant.base
    return {
        (group, mode): 100
        * (score(results, items, base, mode, group, k) - score(results, items, variant.name, mode, group, k))
        for group in GROUPS
        for mode in MODES
    }


# A set this small moves in steps of one question (the coding set: 24, 4.2 points a question); there a
# change of one question is read as noise, both ways, and a difference counts from two questions up.
SMALL = {"coding": 24}


def _counts(group: str, value: float, floor: float) -> bool:
    step = 100 / SMALL[group] if group in SMALL else 0.0
    return abs(value) >= max(floor, 2 * step - 1e-6)


def verdict(worths: dict[tuple[str, str], float]) -> str:
    """keep: worth >= 1 point somewhere held out and no group or mode gains >= 0.5 without it."""
    known = {key: v for key, v in worths.items() if v == v}
    if not any(group in HELD_OUT for group, _ in known):
        return "-"
    worth = any(v > 0 and _counts(g, v, 1.0) for (g, _), v in known.items() if g in HELD_OUT)
    cost = any(v < 0 and _counts(g, v, 0.5) for (g, _), v in known.items())
    return "keep" if worth and not cost else "remove"


# Rows of today's main whose constant the new code no longer has: named here so the table keeps them.
REMOVED = {
    "second look, no length cap": "second look length cap 450",
    "second look without length": "second look: the length feature",
    "alternatives: no agreement": "agreement share 0.1",
    "alternatives: rrf fusion": "fusion max (vs rrf)",
    "guesses: rrf fusion": "fusion max (vs rrf)",
}


def table(label: str, k: int = 1) -> str:
    """The ablation table of the saved results: R@10 (k=1, with the verdict) or R@1 (k=0) points each
    removal costs, per group and mode; every row that was run, also those of constants removed since."""
    from bench import report

    results, items = load_results(label), items_by_set()
    described = {v.name: v.layer for v in variants()} | REMOVED
    names = [n for n in dict.fromkeys(key.split("|")[0] for key in results) if n in described]
    headers = ["variant", "removes / changes"]
    headers += [f"{g} {m[:3]}" for g in GROUPS for m in MODES] + (["verdict"] if k else [])
    rows: list[list[object]] = []
    for name in names:
        kinds = {"alternatives": name.startswith("alternatives:"), "guesses": name.startswith("guesses:")}
        variant = Variant(name, described[name], **kinds)
        if name in ("defaults", "alternatives: defaults", "guesses: defaults"):
            cells = [f"{100 * score(results, items, name, m, g, k):.1f}" for g in GROUPS for m in MODES]
            rows.append([f"**{name}** ({'R@10' if k else 'R@1'})", variant.layer, *cells] + ([""] if k else []))
            continue
        w = worth(results, items, variant, k)
        cells = [f"{w[(g, m)]:+.1f}" for g in GROUPS for m in MODES]
        rows.append([name, variant.layer, *cells] + ([verdict(w)] if k else []))
    return report.table(headers, rows)


# -- cross-validation ---------------------------------------------------------------------------


def grid_variant(field: str, value: Any) -> Variant:
    """The variant with `field` at `value`; the defaults themselves at the default value (run once)."""
    if getattr(DEFAULT_TUNING, field) == value:
        return Variant("defaults", "-")
    return Variant(f"cv {field}={value}", field, _t(**{field: value}))


def cross_validate(label: str, field: str, values: Sequence[Any]) -> tuple[str, Any]:
    """Leave-one-conversation-out over LoCoMo's 10 conversations: for each, the value of `field` with the
    best mean R@10 (fast and semantic) on the other 9, scored on the one left out; the chat and coding
    sets are scored at each fold's choice (held out from every fit). Returns (a Markdown table, the value
    chosen most often, ties to the best over all 10, then to the default)."""
    from bench import report

    grid = [grid_variant(field, v) for v in values]
    results = run(label, grid, MODES)
    items = items_by_set()
    locomo = items["locomo"]
    convs = list(dict.fromkeys(item.conversation for item in locomo))

    def mean_of(variant: str, keep: Callable[[Item], bool], name: str = "locomo") -> float:
        picked = [
            row[1]
            for mode in MODES
            for row, item in zip(results[f"{variant}|{name}|{mode}"], items[name], strict=True)
            if keep(item)
        ]
        return statistics.fmean(picked)

    default = getattr(DEFAULT_TUNING, field)
    rows: list[list[object]] = []
    chosen = []
    for conv in convs:
        best = max(grid, key=lambda g: mean_of(g.name, lambda i, c=conv: i.conversation != c))
        value = getattr(best.tuning, field)
        chosen.append(value)
        held = mean_of(best.name, lambda i, c=conv: i.conversation == c)
        base = mean_of(grid_variant(field, default).name, lambda i, c=conv: i.conversation == c)
        rows.append(
            [
                conv,
                value,
                f"{100 * base:.1f}",
                f"{100 * held:.1f}",
                f"{100 * mean_of(best.name, lambda i: True, 'chat'):.1f}",
            ]
        )
    overall = {getattr(g.tuning, field): mean_of(g.name, lambda i: True) for g in grid}
    pick = max(set(chosen), key=lambda v: (chosen.count(v), overall[v], v == default))
    headers = [
        "left out",
        f"{field} chosen on the other 9",
        f"left out at {default}",
        "left out at chosen",
        "chat at chosen",
    ]
    body = report.table(headers, rows)
    body += (
        f"\n\n{field}: chosen {pick} ({chosen.count(pick)}/10 folds); mean R@10 (fast, semantic) over all 10 by value: "
    )
    body += ", ".join(f"{v}: {100 * s:.1f}" for v, s in overall.items())
    return body, pick


NOTES = (
    "LoCoMo (CC BY-NC 4.0) read from ../shared/data/locomo10.json; 10 conversations, 5,882 turns, 1,536 questions of"
    " categories 1-4; the chat set: bench/chat_set.py (6 conversations, 973 turns, 133 questions, written for this and"
    " never fitted on); the coding set: bench/second_look_coding.py's archive (24 notes among 400 file reads, 24"
    " follow-ups: one question is 4.2 points)",
    "every archive recorded and embedded once (bench/out/ablation/, default local model); query vectors cached per"
    " text, so rows differ only in ranking; deep equals semantic on these archives (each scope is smaller than"
    " the semantic window) and is run for the headline only",
    "R@10 / R@1: the share of a question's gold turns in the first 10 / first 1 raw hits; points: 100 x a difference",
    "verdict: keep when worth >= 1 point of R@10 in some held-out group (LoCoMo 6-10, coding, chat; fast or semantic)"
    " and no group or mode (LoCoMo 1-5 included) gains >= 0.5 point without it; on the coding set (24 questions, 4.2"
    " points each) a change of one question is read as noise both ways: a difference counts from two questions up",
)


# -- the headline: today's main beside the new code, same run ------------------------------------------

MAIN_COMMIT = "1bb2c1b"
MAIN_TREE = OUT.parent / f"main-{MAIN_COMMIT}"
ALL_MODES = ("fast", "semantic", "deep")


def run_main(label: str) -> None:
    """The defaults of commit MAIN_COMMIT's package (extracted under bench/out/ by `git archive`), in a
    child process whose memlikehuman is that tree's: the same harness, archives and query vectors."""
    import os
    import subprocess

    repo = Path(__file__).resolve().parent.parent
    if not (MAIN_TREE / "memlikehuman").is_dir():
        MAIN_TREE.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", MAIN_COMMIT, "memlikehuman"], cwd=repo, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(MAIN_TREE)], input=archive.stdout, check=True)
    env = {**os.environ, "PYTHONPATH": f"{MAIN_TREE}:{repo}"}
    argv = [
        sys.executable,
        "-m",
        "bench.ablation",
        "run",
        "--label",
        label,
        "--variants",
        "defaults",
        "--modes",
        *ALL_MODES,
    ]
    subprocess.run(argv, cwd="/tmp", env=env, check=True)


def headline(main_label: str, new_label: str) -> str:
    """R@10 and R@1 of today's main and the new defaults per group, mode and category."""
    from bench import report

    old, new, items = load_results(main_label), load_results(new_label), items_by_set()
    groups = {
        "LoCoMo 6-10": ("locomo", "locomo 6-10"),
        "LoCoMo all 10": ("locomo", None),
        "coding": ("coding", None),
        "chat": ("chat", None),
    }
    rows: list[list[object]] = []
    for label, (name, group) in groups.items():
        cats = sorted({i.category for i in items[name]}) if name != "coding" else []
        for mode in ALL_MODES:
            cells: list[object] = [label, mode]
            for results in (old, new):
                rows_ = results.get(f"defaults|{name}|{mode}")
                if rows_ is None:
                    cells += ["-", "-"]
                    continue
                kept = [r for r, i in zip(rows_, items[name], strict=True) if group is None or i.group == group]
                cells += [statistics.fmean(r[1] for r in kept), statistics.fmean(r[0] for r in kept)]
            for cat in cats:
                pair = []
                for results in (old, new):
                    rows_ = results.get(f"defaults|{name}|{mode}")
                    kept = [
                        r[1]
                        for r, i in zip(rows_ or [], items[name], strict=True)
                        if (group is None or i.group == group) and i.category == cat
                    ]
                    pair.append(f"{statistics.fmean(kept):.3f}" if kept else "-")
                cells.append(f"{cat} ({len(kept)}): {pair[0]} -> {pair[1]}")
            rows.append(cells)
    width = max(len(r) for r in rows)
    headers = ["set", "mode", "R@10 main", "R@1 main", "R@10 new", "R@1 new"] + ["R@10 by category, main -> new"] * (
        width - 6
    )
    return report.table(headers, [r + [""] * (width - len(r)) for r in rows])


def alias_items() -> list[Item]:
    """LoCoMo's questions that name a speaker with a learned alias, asked with the alias instead of the
    label (bench.conversation_recall.nickname_questions: the speaker's most used alias), as items of the
    ablation's LoCoMo archive."""
    from bench.conversation_recall import CATEGORIES, DATA, load, nickname_questions

    items = []
    for number, conv in enumerate(load(DATA, 10), 1):
        group = "locomo 1-5" if number <= 5 else "locomo 6-10"
        prefix = f"locomo-{conv.sample_id}-"
        for q in nickname_questions(conv):
            gold = frozenset(prefix + g for g in q.gold)
            items.append(Item(conv.scope, q.text, gold, group, CATEGORIES[q.category], conv.sample_id))
    return items


def aliases_table() -> str:
    """R@10 and R@1 of the questions that call a speaker by an alias, with the alias phrasing (defaults)
    and without it (speaker_aliases off), per LoCoMo half and mode."""
    from bench import report
    from memlikehuman.providers.local import DEFAULT_MODEL

    items = alias_items()
    _, cache = _query_cache(DEFAULT_MODEL)
    chosen = [
        Variant("defaults", "-"),
        Variant("no speaker aliases", "speaker-alias phrasing", _t(speaker_aliases=False)),
    ]
    rows: list[list[object]] = []
    with Engine(ablation_data.settings(ablation_data.locomo().db, DEFAULT_MODEL)) as engine:
        sources, speakers = Sources(engine, cache), speakers_of(engine, items)
        for mode in MODES:
            found = {v.name: ask(sources, items, mode, v, speakers) for v in chosen}
            for group in ("locomo 1-5", "locomo 6-10"):
                picked = [n for n, item in enumerate(items) if item.group == group]
                cells: list[object] = [group, mode, len(picked)]
                for k in (1, 0):
                    cells += [f"{statistics.fmean(found[v.name][n][k] for n in picked):.3f}" for v in chosen]
                rows.append(cells)
    headers = ["questions", "mode", "n", "R@10 with aliases", "R@10 without", "R@1 with aliases", "R@1 without"]
    return report.table(headers, rows)


def multilingual_stopwords() -> str:
    """bench/multilingual.py's set asked with English stopwords (recall's list), the function words of each
    query's language (text/function_words.content) and none, fast and semantic."""
    import tempfile

    from bench import multilingual as ml
    from bench import report
    from bench.multilingual_set import CASES, LANGUAGES

    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as tmp, Engine(ml.settings(Path(tmp) / "set.sqlite3", "local")) as engine:
        ml.record_cases(engine, [case.text for case in CASES])
        engine.embed_missing()
        for mode in ("fast", "semantic"):
            for name, kind in (
                ("English stopwords (today)", None),
                ("per-language function words", "lang"),
                ("none", "none"),
            ):
                with stopwords(kind) if kind else contextlib.nullcontext():
                    found = ml.per_language(engine, CASES, mode, ml.BOTH)
                rows.append([f"{mode}, {name}", *(found[lang] for lang in LANGUAGES), found["all"], found["R@1"]])
    text = report.table(["query words", *LANGUAGES, "all", "all R@1"], rows)
    (OUT / "multilingual-stopwords.txt").write_text(text + "\n")
    return text


REPORT_PARTS = (
    ("Ablation on HEAD (today's main plus this session's echoes), R@10 points that each removal costs", "table"),
    ("Leave-one-conversation-out refits", "cv"),
    ("The second look's weights, leave-one-conversation-out", "second-look.txt"),
    ("Injection gate constants (bench/gate_sweep.py)", "gate.txt"),
    ("Latency at 100,000 events, before and after (bench/recall_latency.py, same session)", "latency.txt"),
    ("Multilingual recall, before and after (bench/multilingual.py, same session)", "multilingual.txt"),
    ("Stopwords of the query, multilingual set (python -m bench.ablation stopwords)", "multilingual-stopwords.txt"),
)


def write_report(head: str, new: str, notes: Sequence[str]) -> str:
    """The benchmarks.md section: the headline, then each saved part of the session's runs."""
    from bench import report

    body = "Headline, same run: today's main (commit " + MAIN_COMMIT + ") beside the new code, defaults.\n\n"
    body += headline("main", new)
    for title, part in REPORT_PARTS:
        if part == "table":
            text = table(head) + "\n\nR@1 points each removal costs:\n\n" + table(head, 0)
        elif part == "cv":
            text = "\n\n".join(f.read_text().strip() for f in sorted(OUT.glob(f"cv-{head}-*.md")))
        else:
            path = OUT / part
            text = path.read_text().strip() if path.exists() else "(not run)"
        body += f"\n\n**{title}**\n\n{text}"
    body += "\n\n" + "\n".join(f"- {note}" for note in notes)
    report.write_section(
        "ranking-ablation", "Ranking ablation on held-out data (2026-12-05)", "python -m bench.ablation report", body
    )
    return body


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "table", "cv", "main", "headline", "report", "stopwords", "aliases"))
    parser.add_argument("--field", help="cv: the Tuning field")
    parser.add_argument("--values", nargs="*", type=float, help="cv: its grid")
    parser.add_argument("--label", default="head")
    parser.add_argument("--variants", nargs="*", help="only these variants (names)")
    parser.add_argument("--modes", nargs="+", default=list(MODES))
    parser.add_argument("--fresh", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "run":
        chosen = [v for v in variants() if not args.variants or v.name in args.variants]
        run(args.label, chosen, args.modes, args.fresh)
    if args.command == "main":
        run_main(args.label)
        return
    if args.command == "stopwords":
        print(multilingual_stopwords())
        return
    if args.command == "aliases":
        text = aliases_table()
        (OUT / "aliases.txt").write_text(text + "\n")
        print(text)
        return
    if args.command == "report":
        print(write_report("head", args.label, NOTES))
        return
    if args.command == "headline":
        print(headline("main", args.label))
        return
    if args.command == "cv":
        body, _ = cross_validate(args.label, args.field, args.values)
        (OUT / f"cv-{args.label}-{args.field}.md").write_text(body + "\n")
        print(body)
        return
    print(table(args.label))


if __name__ == "__main__":
    main()
