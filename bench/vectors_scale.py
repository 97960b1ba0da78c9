"""Loading and scanning a scope's vectors at deep-recall scale: peak RSS and time, beside their floors.

A scratch SQLite file holds N random 384-dim float32 vectors in one scope (the tables and columns
vectors._load reads, nothing else), so the build takes seconds instead of the half hour a full
archive of that size needs. A fresh child process then loads the matrix through VectorCache (as the
first deep recall does) and scans it. Floors in the same run: the matrix's own bytes for memory, a
bare numpy matrix-vector product with argpartition over the same rows for the scan.

    python -m bench.vectors_scale                    # 700,000 vectors (the queried scope at 1M events)
    python -m bench.vectors_scale --vectors 200000   # a quick look, no doc update
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import apsw
import numpy as np

from bench import report

SCOPE = ("bench", "project-0")
MODEL = "bench-model"
DIM = 384
BLOCK = 10_000


def build(path: Path, n: int) -> None:
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE events (sequence INTEGER PRIMARY KEY, persona_id TEXT, project_id TEXT)")
    conn.execute("CREATE INDEX events_scope ON events (persona_id, project_id)")
    conn.execute(
        "CREATE TABLE event_vectors (event_sequence INTEGER PRIMARY KEY, model TEXT, dim INTEGER, vector BLOB)"
    )
    rng = np.random.default_rng(1)
    with conn:
        for start in range(0, n, BLOCK):
            size = min(BLOCK, n - start)
            block = rng.standard_normal((size, DIM), dtype=np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            conn.executemany("INSERT INTO events VALUES (?, ?, ?)", [(start + i + 1, *SCOPE) for i in range(size)])
            conn.executemany(
                "INSERT INTO event_vectors VALUES (?, ?, ?, ?)",
                [(start + i + 1, MODEL, DIM, block[i].tobytes()) for i in range(size)],
            )
    conn.close()


def child(path: Path, queries: int) -> dict[str, float]:
    from memlikehuman.archive.db import Database
    from memlikehuman.index.vectors import VectorCache
    from memlikehuman.records import Scope

    db = Database(path)
    cache = VectorCache()
    rng = np.random.default_rng(2)
    probes = rng.standard_normal((queries + 1, DIM)).astype(np.float32)
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)
    started = time.perf_counter()
    cache.search(db, "event", MODEL, Scope(*SCOPE), probes[0], 300)
    load = time.perf_counter() - started
    ours, bare = [], []
    ids, rows, _ = cache._snapshot(db, "event", MODEL, Scope(*SCOPE), None)
    for probe in probes[1:]:
        started = time.perf_counter()
        cache.search(db, "event", MODEL, Scope(*SCOPE), probe, 300)
        ours.append(time.perf_counter() - started)
        started = time.perf_counter()
        scores = rows @ probe
        np.argpartition(-scores, 299)[:300]
        bare.append(time.perf_counter() - started)
    return {
        "load_s": load,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "matrix_mb": rows.nbytes / 2**20,
        "ours_p50": report.percentile(ours, 50) * 1000,
        "ours_p95": report.percentile(ours, 95) * 1000,
        "bare_p50": report.percentile(bare, 50) * 1000,
        "bare_p95": report.percentile(bare, 95) * 1000,
        "n": float(len(ids)),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vectors", type=int, default=700_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.queries)))
        return
    with tempfile.TemporaryDirectory(prefix="vectors-scale-") as tmp:
        path = Path(tmp) / "v.sqlite3"
        started = time.perf_counter()
        build(path, args.vectors)
        print(f"built {args.vectors:,} vectors in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        command = [sys.executable, "-m", "bench.vectors_scale", "--child", str(path), "--queries", str(args.queries)]
        done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=Path(__file__).parent.parent)
    r = json.loads(done.stdout.strip().splitlines()[-1])
    rows = [
        ["first use: load into the cache (VectorCache, vectors._load)", f"{r['load_s']:.1f} s", f"{r['peak_mb']:,.0f}"],
        ["floor: the matrix itself (float32)", "-", f"{r['matrix_mb']:,.0f}"],
        ["deep scan, top 300 (VectorCache.search)", f"{r['ours_p50']:.1f} / {r['ours_p95']:.1f} ms", "-"],
        ["floor: bare numpy matrix @ vector + argpartition", f"{r['bare_p50']:.1f} / {r['bare_p95']:.1f} ms", "-"],
    ]
    body = report.table(["what", "time (p50 / p95)", "peak RSS MB"], rows)
    body += (
        f"\n\n- {int(r['n']):,} random unit vectors of {DIM} dims in one scope (the queried scope of the 1M-event"
        " scale run holds 70%, ~700k), in a scratch file with only the tables vectors._load reads; load and"
        f" scans in a fresh child process, {args.queries} probe vectors, peak RSS = the child's ru_maxrss"
    )
    print(body)
    if args.vectors >= 200_000:
        report.write_section(
            "vectors-scale",
            "Vector matrix at deep-recall scale",
            f"python -m bench.vectors_scale --vectors {args.vectors}",
            body,
        )


if __name__ == "__main__":
    main()
