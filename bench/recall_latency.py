"""memory_recall latency at scale, in process: fast, semantic and deep over a synthetic archive.

Events are stored through events.insert (the code memory_record uses), in large transactions so
the archive builds in a minute. Their vectors are random unit vectors written as if by the local
embedder: embedding 100k texts with the local model would take most of an hour on 2 cores, and the cost of a
vector scan does not depend on what the vectors mean. Queries are embedded by the real model.

    python -m bench.recall_latency                 # 100k events, writes docs/benchmarks.md
    python -m bench.recall_latency --events 10000  # a quick look, no doc update
    python -m bench.recall_latency --budgets       # each budget of recall lifted in turn: time and results
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from bench import report
from memlikehuman import clock, config
from memlikehuman.archive import events
from memlikehuman.archive.sqlite import backend as sqlite_backend
from memlikehuman.engine import Engine
from memlikehuman.index import vectors
from memlikehuman.records import Scope
from memlikehuman.retrieval import search
from memlikehuman.retrieval.recall import DEFAULT_TUNING, Tuning, recall
from memlikehuman.retrieval.search import STOPWORDS, Filters

SCOPES = [Scope("bench", f"project-{i}") for i in range(4)]
MAIN = SCOPES[0]  # 70% of the events: the scope queried
FUNCTION_WORDS = sorted(STOPWORDS)


class Words:
    """Pseudo-words with chat-like frequencies, mixed with English function words.

    Calibrated on LoCoMo's turns (stopwords removed): the most common content word is in ~19% of
    turns, the 100th in ~2%: a Zipf-Mandelbrot law 1/(rank + 5) over 30k words gives ~20% and ~1.2%.
    """

    def __init__(self, rng: random.Random, size: int = 30_000) -> None:
        letters = "abcdefghijklmnopqrstuvwxyz"
        self.vocabulary = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(size)]
        weights = 1.0 / (np.arange(1, size + 1) + 5.0)
        self.cumulative = np.cumsum(weights / weights.sum())
        self.rng = rng

    def content(self, n: int) -> list[str]:
        picks = np.searchsorted(self.cumulative, [self.rng.random() for _ in range(n)])
        return [self.vocabulary[min(int(i), len(self.vocabulary) - 1)] for i in picks]

    def sentence(self, n: int) -> str:
        words = self.content(n)
        for i in range(0, len(words), 2):
            words.insert(i, self.rng.choice(FUNCTION_WORDS))
        return " ".join(words).capitalize() + "."


def build(engine: Engine, n: int, rng: random.Random, model: str, dim: int) -> None:
    words = Words(rng)
    vec_rng = np.random.default_rng(7)
    batch = 2_000
    started = time.perf_counter()
    for start in range(0, n, batch):
        with engine.db.write() as conn:
            for i in range(start, min(n, start + batch)):
                scope = MAIN if rng.random() < 0.7 else rng.choice(SCOPES[1:])
                payload = events.new_event(
                    scope,
                    f"ev-{i}",
                    words.sentence(rng.randint(5, 16)),
                    "user",
                    rng.choice(["Ana", "Bob", "Eve"]),
                    session_id=f"s{i // 40}",
                    occurred_at="2024-01-01T00:00:00Z",
                )
                sequence, _ = events.insert(engine.db, payload)
                write_random_vector(conn, sequence, model, vec_rng, dim)
        print(f"\rbuilding: {min(n, start + batch):,}/{n:,}", end="", file=sys.stderr, flush=True)
    print(f" ({time.perf_counter() - started:.0f} s)", file=sys.stderr)


def write_random_vector(conn: Any, sequence: int, model: str, vec_rng: np.random.Generator, dim: int) -> None:
    """Store a random unit vector for an event, as if `model` had embedded it."""
    vector = vec_rng.standard_normal(dim).astype(np.float32)
    conn.execute(
        "INSERT INTO event_vectors (event_sequence, model, dim, vector) VALUES (?, ?, ?, ?)",
        (sequence, model, dim, vectors.encode(vector / np.linalg.norm(vector))),
    )


def measure(
    engine: Engine,
    queries: Sequence[str],
    mode: str,
    alternatives: Sequence[Sequence[str]] | None = None,
    tuning: Tuning = DEFAULT_TUNING,
) -> list[float]:
    recall(engine, MAIN, queries[0], search_mode=mode)  # warm-up: loads the vector matrix once
    seconds = []
    for n, query in enumerate(queries):
        others = list(alternatives[n]) if alternatives else None
        started = time.perf_counter()
        result = recall(engine, MAIN, query, search_mode=mode, alternatives=others, tuning=tuning)
        seconds.append(time.perf_counter() - started)
        assert result.search_mode == mode, result.warnings
    return seconds


def embed_times(embedder: Any, batches: Sequence[Sequence[str]]) -> list[float]:
    """Seconds of one embedder call per batch of query texts."""
    seconds = []
    for texts in batches:
        started = time.perf_counter()
        embedder.embed(list(texts), "query")
        seconds.append(time.perf_counter() - started)
    return seconds


def raw_bm25(engine: Engine, queries: Sequence[str]) -> list[float]:
    """Baseline: the raw FTS5 bm25 top 10 of the query's words (OR), no scope, fusion or context."""
    seconds = []
    for query in queries:
        match = sqlite_backend.match_expression(search.terms(query))
        started = time.perf_counter()
        engine.db.query("SELECT rowid FROM events_fts WHERE events_fts MATCH ? ORDER BY rank LIMIT 10", (match,))
        seconds.append(time.perf_counter() - started)
    return seconds


def lexical_overlap(engine: Engine, queries: Sequence[str], cap: int) -> float:
    """Mean share of the exact (uncapped) lexical top 10 that the ranking capped at `cap` scored rows keeps."""
    filters = Filters(MAIN, clock.now_stamp())
    weights = DEFAULT_TUNING.event_weights
    shares = []
    for query in queries:
        words = search.terms(query)
        exact = search.lexical(engine.db, "event", words, filters, 10, weights, scored_rows=10**9)
        capped = search.lexical(engine.db, "event", words, filters, 10, weights, scored_rows=cap)
        if exact:
            shares.append(len({h.id for h in exact} & {h.id for h in capped}) / len(exact))
    return report.mean(shares)


def _swapped(owner: Any, name: str, value: Any) -> Any:
    """A module constant set to `value` in this process for the length of a measurement."""
    return mock.patch.object(owner, name, value)


def _budgets() -> list[tuple[str, Tuning, Any]]:
    """(what is lifted, tuning, a patch of a module constant or None): each budget of recall in turn."""
    from memlikehuman.retrieval import recall as recall_module

    d, t = DEFAULT_TUNING, dataclasses.replace
    return [
        ("defaults", d, None),
        ("lexical and dense pools 300 -> 1,000", t(d, lexical_pool=1_000, dense_pool=1_000), None),
        ("neighbour pool 100 -> all hits", t(d, neighbour_pool=10**6), None),
        ("scored rows 2,000 -> all (search.SCORED_ROWS)", d, lambda: _swapped(search, "SCORED_ROWS", 10**9)),
        (
            "user turns read for questions 50 -> all (ASKED_AMONG)",
            d,
            lambda: _swapped(recall_module, "ASKED_AMONG", 10**9),
        ),
        (
            "turn read for a question 600 characters -> any (ASKING_CHARS)",
            d,
            lambda: _swapped(search, "ASKING_CHARS", 10**9),
        ),
        ("raw page 50 -> 500 (RAW_PAGE)", d, lambda: _swapped(recall_module, "RAW_PAGE", 500)),
        ("second look pool 30 -> 50", t(d, second_look=50), None),
    ]


def budget_rows(engine: Engine, queries: Sequence[str], alternatives: Sequence[Sequence[str]]) -> list[list[object]]:
    """p50 per mode and how many queries' top 10 differ from the defaults', each budget lifted in turn; then
    the alternatives' budgets against the query's."""
    rows: list[list[object]] = []
    base: dict[str, list[list[str]]] = {}
    for name, tuning, patch in _budgets():
        cells: list[object] = [name]
        with patch() if patch else contextlib.nullcontext():
            for mode in ("fast", "semantic"):
                seconds, tops = measure_tops(engine, queries, mode, tuning)
                base.setdefault(mode, tops)
                moved = sum(1 for a, b in zip(base[mode], tops, strict=True) if a != b)
                cells += [f"{report.percentile(seconds, 50) * 1000:.1f}", moved]
        rows.append(cells)
        print(" | ".join(map(str, cells)), file=sys.stderr)
    full = dataclasses.replace(
        DEFAULT_TUNING,
        alternative_pool=DEFAULT_TUNING.lexical_pool,
        alternative_scored_rows=search.SCORED_ROWS,
        alternative_neighbours=DEFAULT_TUNING.neighbour_pool,
    )
    for name, tuning in (
        ("4 alternatives: budgets 100 / 500 / 30", DEFAULT_TUNING),
        ("4 alternatives: the query's budgets", full),
    ):
        cells = [name]
        for mode in ("fast", "semantic"):
            seconds, tops = measure_tops(engine, queries, mode, tuning, alternatives)
            base.setdefault(f"{mode} alternatives", tops)
            moved = sum(1 for a, b in zip(base[f"{mode} alternatives"], tops, strict=True) if a != b)
            cells += [f"{report.percentile(seconds, 50) * 1000:.1f}", moved]
        rows.append(cells)
        print(" | ".join(map(str, cells)), file=sys.stderr)
    return rows


def measure_tops(
    engine: Engine,
    queries: Sequence[str],
    mode: str,
    tuning: Tuning,
    alternatives: Sequence[Sequence[str]] | None = None,
) -> tuple[list[float], list[list[str]]]:
    """Seconds of each recall and its top 10 (event IDs)."""
    recall(engine, MAIN, queries[0], search_mode=mode, tuning=tuning)  # warm-up
    seconds, tops = [], []
    for n, query in enumerate(queries):
        others = list(alternatives[n]) if alternatives else None
        started = time.perf_counter()
        result = recall(engine, MAIN, query, search_mode=mode, alternatives=others, tuning=tuning)
        seconds.append(time.perf_counter() - started)
        tops.append([hit.event.event_id for hit in result.raw_fallback])
    return seconds, tops


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--archive", help="build the archive in this directory and reuse it on later runs")
    parser.add_argument("--budgets", action="store_true", help="only the budgets, each lifted in turn")
    args = parser.parse_args(argv)
    rng = random.Random(42)
    workdir = Path(args.archive) if args.archive else Path(tempfile.mkdtemp(prefix="recall-latency-"))
    workdir.mkdir(parents=True, exist_ok=True)
    settings = config.load(
        workdir / "a.sqlite3",
        env={"MEMLIKEHUMAN_EMBEDDER": "local", "MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"},
    )
    rows = []
    with Engine(settings) as engine:
        embedder = engine.embedder
        assert embedder is not None
        if not engine.db.scalar("SELECT count(*) FROM events"):
            build(engine, args.events, rng, embedder.model_id, 384)
        in_scope = int(engine.db.scalar("SELECT count(*) FROM events WHERE project_id = ?", (MAIN.project_id,)))
        words = Words(random.Random(42))
        queries = [
            f"what did {rng.choice(['Ana', 'Bob'])} say about " + " ".join(words.content(rng.randint(2, 6)))
            for _ in range(args.queries)
        ]
        if args.budgets:
            alternatives = [[" ".join(words.content(rng.randint(2, 4))) for _ in range(4)] for _ in queries]
            headers = ["budget lifted", "fast p50 ms", "fast: queries whose top 10 changed"]
            headers += ["semantic p50 ms", "semantic: queries whose top 10 changed"]
            text = report.table(headers, budget_rows(engine, queries, alternatives))
            text += f"\n\n- {args.events:,} events, the queried scope {in_scope:,}; {args.queries} queries (as above)"
            print(text)
            return
        raw_bm25(engine, queries[:5])  # warm-up
        timings = [("baseline: raw FTS5 bm25 top 10 (no scope, no fusion)", raw_bm25(engine, queries))]
        timings += [(mode, measure(engine, queries, mode)) for mode in ("fast", "semantic", "deep")]
        # The same modes without the second look at the best events, measured right after.
        without = dataclasses.replace(DEFAULT_TUNING, second_look=0)
        timings += [
            (f"{mode}, no second look", measure(engine, queries, mode, tuning=without)) for mode in ("semantic", "deep")
        ]
        for name, seconds in timings:
            rows.append(
                [name, f"{report.percentile(seconds, 50) * 1000:.1f}", f"{report.percentile(seconds, 95) * 1000:.1f}"]
            )
            print(f"{name}: p50 {rows[-1][1]} ms, p95 {rows[-1][2]} ms", file=sys.stderr)
        # Four further phrasings per query, as an agent would pass them: 2-4 other words each.
        alternatives = [[" ".join(words.content(rng.randint(2, 4))) for _ in range(4)] for _ in queries]
        # Floors of semantic recall: the embedder call alone, for the query and for all 5 phrasings.
        for label, texts in (
            (f"floor: embedding the query alone ({embedder.model_id}, one call)", [[q] for q in queries]),
            (
                f"floor: embedding the query and 4 alternatives ({embedder.model_id}, one call)",
                [[q, *a] for q, a in zip(queries, alternatives, strict=True)],
            ),
        ):
            seconds = embed_times(embedder, texts)
            rows.append(
                [label, f"{report.percentile(seconds, 50) * 1000:.1f}", f"{report.percentile(seconds, 95) * 1000:.1f}"]
            )
        single = {row[0]: float(row[1]) for row in rows}
        for mode in ("fast", "semantic"):
            seconds = measure(engine, queries, mode, alternatives)
            p50 = report.percentile(seconds, 50) * 1000
            rows.append(
                [
                    f"{mode} + 4 alternatives ({p50 / single[mode]:.2f}x the single query)",
                    f"{p50:.1f}",
                    f"{report.percentile(seconds, 95) * 1000:.1f}",
                ]
            )
            print(f"{rows[-1][0]}: p50 {rows[-1][1]} ms, p95 {rows[-1][2]} ms", file=sys.stderr)
        overlap = lexical_overlap(engine, queries, search.SCORED_ROWS)
        window = engine.settings.semantic_window
    body = (
        report.table(["search_mode", "p50 ms", "p95 ms"], rows)
        + "\n\n"
        + "\n".join(
            f"- {note}"
            for note in (
                f"{args.events:,} events in 4 scopes; the queried scope holds {in_scope:,}; {args.queries} queries of"
                " 2-6 content words plus function words, limit 10, in process (recall(), no MCP envelope)",
                "event texts: 5-16 Zipf-distributed pseudo-words between English function words (like LoCoMo turns);"
                " vectors: random unit vectors (384 dims) stored as the local model's, because embedding 100k"
                " texts with the local model takes about an hour on 2 cores; queries are embedded by the real"
                " model (part of the time)",
                f"fast ranks with bm25 over at most ~2 x {search.SCORED_ROWS:,} matching rows (search.SCORED_ROWS):"
                f" its lexical top 10 holds {overlap:.1%} of the exact (uncapped) bm25 top 10, same queries",
                f"semantic scans the {window:,} most recent vectors of the scope (MEMLIKEHUMAN_SEMANTIC_WINDOW),"
                " deep all of them; the first query of each mode (loading the vector matrix) is not counted",
            )
        )
    )
    print(body)
    if args.events >= 100_000:
        report.write_section(
            "recall-latency", f"memory_recall latency at {args.events:,} events", "python -m bench.recall_latency", body
        )


if __name__ == "__main__":
    main()
