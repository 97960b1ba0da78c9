"""The server's vector matrix after another process commits: brought up to date against read again.

Run: python -m bench.vector_refresh [--events 100000] [--rounds 30]
Writes the "vector-refresh" section of docs/benchmarks.md (at the default size).

A server keeps each scope's vectors in memory (index/vectors.py). Every prompt a hook records, and
every reply, is a commit of another process. Until this change such a commit emptied the cache and
the server's next semantic recall read the scope's vectors again; now an event matrix takes the rows
added since, and is read again only when the scope lost an event or the counts disagree. In process,
on bench.recall_latency's synthetic archive (70% of the events in the scope searched), a second
connection plays the hook: each round it commits one thing, then the first connection's cache
answers one cosine top-300 over the scope. Side by side in the same run: the same search from a
fresh cache (the load every such search paid before) and from a warm cache with no commit between.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bench import report
from bench.recall_latency import MAIN, build, write_random_vector
from memlikehuman import config
from memlikehuman.engine import Engine
from memlikehuman.index import vectors

MODEL, DIM = "onnx:multilingual-e5-small-fp32", 384


def settings(path: Path) -> config.Settings:
    env = {"MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
    return config.load(path, env=env)


def timed(rounds: int, before: Callable[[int], None], search: Callable[[], None]) -> list[float]:
    out = []
    for n in range(rounds):
        before(n)
        started = time.perf_counter()
        search()
        out.append(time.perf_counter() - started)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="vector-refresh-"))
    path = workdir / "a.sqlite3"
    rng = np.random.default_rng(3)
    query = rng.standard_normal(DIM).astype(np.float32)
    query /= np.linalg.norm(query)
    with Engine(settings(path)) as server, Engine(settings(path)) as hook:
        build(server, args.events, random.Random(42), MODEL, DIM)
        in_scope = int(server.db.scalar("SELECT count(*) FROM events WHERE project_id = ?", (MAIN.project_id,)))
        cache = vectors.VectorCache()

        def search() -> None:
            cache.search(server.db, "event", MODEL, MAIN, query, 300)

        def prompt(n: int) -> None:
            hook.record(MAIN, f"prompt-{n}", f"a prompt recorded by the hook, number {n}", "user", "Ana")

        def embedded(n: int) -> None:
            hook.record(MAIN, f"turn-{n}", f"a turn another server embedded, number {n}", "user", "Ana")
            sequence = int(hook.db.scalar("SELECT max(sequence) FROM events"))
            with hook.db.write() as conn:
                write_random_vector(conn, sequence, MODEL, rng, DIM)

        def fresh(_: int) -> None:
            nonlocal cache
            cache = vectors.VectorCache()

        search()
        cases = [
            ("warm: no commit between searches (floor)", lambda _: None),
            ("after a prompt recorded by another process (now: the matrix brought up to date)", prompt),
            ("after a turn recorded and embedded by another process (now: its row appended)", embedded),
            ("fresh cache: the scope's vectors read again (before: after any such commit)", fresh),
        ]
        rows = []
        for name, before in cases:
            seconds = timed(args.rounds, before, search)
            rows.append([name, report.percentile(seconds, 50) * 1000, report.percentile(seconds, 95) * 1000])
            print(f"{name}: p50 {rows[-1][1]:.1f} ms, p95 {rows[-1][2]:.1f} ms", file=sys.stderr)
    body = report.table(["one cosine top-300 over the scope", "p50 ms", "p95 ms"], rows)
    body += (
        f"\n\n- {args.events:,} events, {in_scope:,} of them (with {DIM}-dimension vectors) in the scope searched;"
        f" {args.rounds} rounds a case, each a commit of a second connection then one search of the first"
        "\n- a hook waits at most MEMLIKEHUMAN_INJECT_WAIT (0.5 s) for the server's semantic answer, then falls back"
        " to fast recall in its own process"
    )
    print(body)
    if args.events == 100_000:
        title = "The server's vectors after another process commits"
        report.write_section("vector-refresh", title, "python -m bench.vector_refresh", body)


if __name__ == "__main__":
    main()
