"""Speed and size at scale: 10k and 100k events (1M with --million), several scopes, side by side with baselines.

For each size a child process builds a synthetic archive (bench.recall_latency's chat-like texts in
4 scopes, random unit vectors stored as the local model's), then measures, in process:
record throughput (Engine.record with the background indexer embedding alongside and with it
stopped, beside a bare stdlib sqlite3 insert), memory_recall p50/p95 per
search mode (beside a raw FTS5 bm25 query), session_resume p50 (with and without a query), the
database size per event and the child's peak RSS.

    python -m bench.scale              # 10k and 100k, writes the "scale" section of docs/benchmarks.md
    python -m bench.scale --million    # adds the 1M run (opt-in: ~7 min in all on 2 cores, 3.5 GB RSS)
    python -m bench.scale --sizes 100000 --models multilingual-e5-small-q4 multilingual-e5-small-fp32
                                       # local models side by side ("scale-models" section)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import report
from bench.recall_latency import MAIN, Words, build, measure, write_random_vector
from bench.record import stdlib_baseline
from memlikehuman import config
from memlikehuman.archive import checkpoints
from memlikehuman.engine import Engine
from memlikehuman.sessions import context

RECORDED = 2_000  # events recorded through Engine.record twice (with and without embedding alongside)
QUERIES = 100
RESUMES = 30


def _ms(samples: list[float]) -> tuple[float, float]:
    return report.percentile(samples, 50) * 1000, report.percentile(samples, 95) * 1000


def _timed(fn: Any, runs: int) -> list[float]:
    fn()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return samples


def one(size: int, model: str | None) -> dict[str, Any]:
    """Build one archive of `size` events and measure it with `model` (None: the default local model;
    runs in a child process)."""
    rng = random.Random(size)
    tmp = Path(tempfile.mkdtemp(prefix=f"scale-{size}-"))
    env = {"MEMLIKEHUMAN_EMBEDDER": "local", "MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
    if model:
        env["MEMLIKEHUMAN_EMBEDDER_MODEL"] = model
    out: dict[str, Any] = {"size": size}
    with Engine(config.load(tmp / "a.sqlite3", env=env)) as engine:
        embedder = engine.embedder
        assert embedder is not None
        build(engine, size - 2 * RECORDED, rng, embedder.model_id, 384)
        # Time recording on an archive at rest, not while the OS still writes out what the build left
        # dirty in its cache (gigabytes at 1M events).
        engine.db.query("PRAGMA wal_checkpoint(TRUNCATE)")
        os.sync()
        words = Words(random.Random(size))  # the vocabulary build() drew from rng = Random(size)
        texts = [words.sentence(rng.randint(5, 16)) for _ in range(RECORDED)]
        # Load the model first, as `serve` does when it starts (its warm-up thread): its one-time load
        # (seconds of graph building for the onnxruntime engines) is not the steady cost measured here.
        started = time.perf_counter()
        embedder.embed(["warm-up"], "passage")
        out["load_s"] = time.perf_counter() - started
        out["record_per_s"] = _record(engine, texts, "live")
        # The background indexer embedded alongside that recording (part of its cost). Its remaining
        # work would take minutes on pseudo-words, and a vector scan costs the same whatever the
        # vectors mean: stop it, record as many again without it, give the rest random vectors.
        engine.indexer.close()
        out["record_quiet_per_s"] = _record(engine, texts, "quiet")
        _fill_vectors(engine, embedder.model_id)
        out["baseline_record_per_s"] = stdlib_baseline(tmp / "baseline.sqlite3", texts)
        queries = [" ".join(words.content(rng.randint(2, 6))) for _ in range(QUERIES)]
        for mode in ("fast", "semantic", "deep"):
            out[mode] = _ms(measure(engine, queries, mode))
        out["baseline_bm25"] = _ms(_bm25(engine, queries))
        covered = RECORDED - 50
        checkpoints.create(engine.db, MAIN, {"goal": "benchmark"}, f"quiet-{covered}", f"quiet-{covered // 40}")
        out["resume"] = _ms(_timed(lambda: context.resume(engine, MAIN, target_model="gpt-4o"), RESUMES))
        out["resume_query"] = _ms(
            _timed(lambda: context.resume(engine, MAIN, query=queries[0], target_model="gpt-4o"), RESUMES)
        )
        engine.db.query("PRAGMA wal_checkpoint(TRUNCATE)")
        out["bytes_per_event"] = (tmp / "a.sqlite3").stat().st_size / size
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    shutil.rmtree(tmp)
    return out


def _record(engine: Engine, texts: list[str], prefix: str) -> float:
    """Record texts through Engine.record in sessions of 40; events per second."""
    started = time.perf_counter()
    for i, text in enumerate(texts):
        engine.record(MAIN, f"{prefix}-{i}", text, "user", "Ana", session_id=f"{prefix}-{i // 40}")
    return len(texts) / (time.perf_counter() - started)


def _fill_vectors(engine: Engine, model: str) -> None:
    vec_rng = np.random.default_rng(11)
    missing = engine.db.query(
        "SELECT e.sequence FROM events e LEFT JOIN event_vectors v ON v.event_sequence = e.sequence"
        " WHERE v.event_sequence IS NULL"
    )
    with engine.db.write() as conn:
        for row in missing:
            write_random_vector(conn, row["sequence"], model, vec_rng, 384)


def _bm25(engine: Engine, queries: list[str]) -> list[float]:
    """Baseline: the raw FTS5 bm25 top 10 over the same table, OR of the query's words, no scope or fusion."""
    samples = []
    for query in queries:
        match = " OR ".join(f'"{word}"' for word in query.split())
        started = time.perf_counter()
        engine.db.query("SELECT rowid FROM events_fts WHERE events_fts MATCH ? ORDER BY rank LIMIT 10", (match,))
        samples.append(time.perf_counter() - started)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--million", action="store_true", help="also run 1,000,000 events")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)  # the child's model
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--models", nargs="*", help="local embedder models side by side (own doc section)")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.model)))
        return
    sizes = args.sizes + ([1_000_000] if args.million else [])
    rows = []
    for size in sizes:
        for model in args.models or [None]:
            command = [sys.executable, "-m", "bench.scale", "--one", str(size), *(["--model", model] if model else [])]
            child = subprocess.run(command, capture_output=True, text=True, check=True)
            result = json.loads(child.stdout.strip().splitlines()[-1])
            print(f"{size:,} {model or ''}: {result}", file=sys.stderr)
            rows += table_rows(result, f"{size:,}" + (f", {model}" if model else ""))
    body = report.table(["events", "what", "value", "p50 ms", "p95 ms"], rows) + (
        "\n\nEach size is a fresh archive built in a child process: events of 5-16 Zipf-distributed pseudo-words"
        " between English function words, 4 scopes (70% in the queried one), sessions of 40, random unit vectors"
        f" (384 dims) as the local model's. The local model is loaded (as `serve` does at start), then"
        f" {RECORDED:,} events are recorded through Engine.record while"
        f" the background indexer embeds them ({'the named' if args.models else 'the default'} local model, on the"
        f" same 2 cores) and {RECORDED:,} more with the indexer stopped; events it had not embedded get random"
        f" vectors. Queries: 2-6 words of the archive's vocabulary. {QUERIES} recall queries per mode (queries"
        f" embedded by the real model), {RESUMES} resumes; in process."
    )
    print(body)
    command = "python -m bench.scale" + (" --million" if args.million else "")
    if args.models:
        command += f" --sizes {' '.join(map(str, args.sizes))} --models {' '.join(args.models)}"
        report.write_section("scale-models", "Scale by local embedder model", command, body)
    else:
        report.write_section("scale", "Scale: record, recall, resume, size and memory", command, body)


def table_rows(r: dict[str, Any], label: str) -> list[list[str]]:
    rows = [
        [label, "memory_record, background embedding alongside, events/s", f"{r['record_per_s']:,.0f}", "", ""],
        ["", "memory_record, background indexer stopped, events/s", f"{r['record_quiet_per_s']:,.0f}", "", ""],
        ["", "baseline: bare stdlib sqlite3 insert, events/s", f"{r['baseline_record_per_s']:,.0f}", "", ""],
        ["", "local model load and a first embedding (serve does both at start), s", f"{r['load_s']:.1f}", "", ""],
    ]
    for mode in ("fast", "semantic", "deep"):
        rows.append(["", f"memory_recall {mode}", "", f"{r[mode][0]:.1f}", f"{r[mode][1]:.1f}"])
    return rows + [
        ["", "baseline: raw FTS5 bm25 top 10 (no scope, no fusion)", "", *(f"{v:.1f}" for v in r["baseline_bm25"])],
        ["", "session_resume, 4,096 tokens, gpt-4o", "", *(f"{v:.1f}" for v in r["resume"])],
        ["", "session_resume with a query", "", *(f"{v:.1f}" for v in r["resume_query"])],
        ["", "database bytes per event", f"{r['bytes_per_event']:,.0f}", "", ""],
        ["", "peak RSS of the run, MB", f"{r['peak_rss_mb']:,.0f}", "", ""],
    ]


if __name__ == "__main__":
    main()
