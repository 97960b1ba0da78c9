"""memory_record speed: stdio round trips (p50/p95) and in-process events/s, beside baselines.

Run: python bench/record.py [--events 10000] [--stdio-calls 500]
Writes the "record" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.report import percentile, table, write_section  # noqa: E402
from memlikehuman import config  # noqa: E402
from memlikehuman.engine import Engine  # noqa: E402
from memlikehuman.records import Scope  # noqa: E402

ENV = {"MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
WORDS = "the a to and of I you my we it is was that for on in with at this about really think going like".split()
WORDS += "dinner Lisbon project meeting guitar painting Friday doctor garden trip camera recipe deadline".split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60))).capitalize() + "."


def in_process(path: Path, texts: list[str]) -> float:
    with Engine(config.load(path, env=ENV)) as engine:
        scope = Scope("bench", "record")
        start = time.perf_counter()
        for i, text in enumerate(texts):
            engine.record(scope, f"evt-{i}", text, "user", "bench", session_id=f"s{i // 50}")
        return len(texts) / (time.perf_counter() - start)


def stdlib_baseline(path: Path, texts: list[str]) -> float:
    """A bare insert per event: stdlib sqlite3, WAL, synchronous=FULL, one transaction each."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE events (sequence INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT UNIQUE, text TEXT)")
    start = time.perf_counter()
    for i, text in enumerate(texts):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO events (event_id, text) VALUES (?, ?)", (f"evt-{i}", text))
        conn.execute("COMMIT")
    rate = len(texts) / (time.perf_counter() - start)
    conn.close()
    return rate


async def stdio_round_trips(
    path: Path | str, texts: list[str], embedder: str = "none"
) -> tuple[list[float], list[float]]:
    """memory_record and memory_read round trips; with embedder "local" the server's indexer embeds alongside."""
    # The archive by MEMLIKEHUMAN_DB: a PostgreSQL URL too (bench.postgres).
    env = {**os.environ, **ENV, "MEMLIKEHUMAN_EMBEDDER": embedder, "MEMLIKEHUMAN_DB": str(path)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "memlikehuman", "serve"], env=env)
    record_ms: list[float] = []
    read_ms: list[float] = []
    async with Client(params) as client:
        await client.call_tool("memory_record", {"event_id": "warm", "text": "warm", "role": "user", "source": "b"})
        if embedder != "none":  # the model loaded (serve starts loading it at once) before the timed calls
            await client.call_tool("memory_recall", {"query": "warm", "search_mode": "semantic"})
        for i, text in enumerate(texts):
            args = {"event_id": f"stdio-{i}", "text": text, "role": "user", "source": "bench"}
            start = time.perf_counter()
            await client.call_tool("memory_record", args)
            record_ms.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            await client.call_tool("memory_read", {"record_id": "warm"})
            read_ms.append((time.perf_counter() - start) * 1000)
    return record_ms, read_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--stdio-calls", type=int, default=500)
    args = parser.parse_args()
    rng = random.Random(7)
    texts = [sentence(rng) for _ in range(args.events)]
    with tempfile.TemporaryDirectory() as tmp:
        ours = in_process(Path(tmp) / "ours.sqlite3", texts)
        base = stdlib_baseline(Path(tmp) / "baseline.sqlite3", texts)
        record_ms, read_ms = anyio.run(stdio_round_trips, Path(tmp) / "stdio.sqlite3", texts[: args.stdio_calls])
        calls = texts[: args.stdio_calls]
        embedding_ms, _ = anyio.run(stdio_round_trips, Path(tmp) / "stdio-local.sqlite3", calls, "local")
    rows = [
        ["memlikehuman Engine.record (in-process)", f"{ours:,.0f}", "-", "-"],
        ["baseline: bare stdlib sqlite3 insert, WAL + FULL", f"{base:,.0f}", "-", "-"],
        ["memory_record over stdio", "-", f"{percentile(record_ms, 50):.2f}", f"{percentile(record_ms, 95):.2f}"],
        [
            "memory_record over stdio, background indexer embedding (default local model)",
            "-",
            f"{percentile(embedding_ms, 50):.2f}",
            f"{percentile(embedding_ms, 95):.2f}",
        ],
        [
            "baseline: memory_read of a tiny event over stdio",
            "-",
            f"{percentile(read_ms, 50):.2f}",
            f"{percentile(read_ms, 95):.2f}",
        ],
    ]
    body = table(["what", "events/s", "p50 ms", "p95 ms"], rows)
    body += (
        f"\n\n{args.events:,} events of 8-60 words recorded in-process (each its own transaction with"
        f" synchronous=FULL, FTS row and cues); {args.stdio_calls} stdio round trips. No extractor; no embedder"
        " except in the 'background indexer' row, where the server's indexer thread embeds each recorded event"
        " with the default local model on the same 2 cores while the calls go on (loaded before the first"
        " timed call)."
    )
    print(body)
    command = f"python bench/record.py --events {args.events} --stdio-calls {args.stdio_calls}"
    write_section("record", "memory_record", command, body)


if __name__ == "__main__":
    main()
