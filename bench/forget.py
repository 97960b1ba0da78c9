"""memory_forget latency on a large archive, beside a plain delete and memory_record, plus a residue scan.

Run: python bench/forget.py [--events 100000] [--samples 40]
Writes the "forget" section of docs/benchmarks.md.

One archive, one run: `--events` recorded events (sessions of 50, 8-60 words each, one memory for
every fifth event), then `--samples` targets forgotten with `forget.forget` (each target has two
memories, every fourth also a correction) and as many other targets deleted by a baseline that
does what a plain delete does: the rows (cascades) and their full-text rows, but no context
re-indexing, no checkpoint invalidation, no WAL truncation. Each target carries a unique marker word; the files are
scanned for the markers afterwards.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.report import percentile, table, write_section  # noqa: E402
from memlikehuman import config  # noqa: E402
from memlikehuman.archive import events, fulltext, memories  # noqa: E402
from memlikehuman.archive.sqlite import scrub as sqlite_scrub  # noqa: E402
from memlikehuman.engine import Engine  # noqa: E402
from memlikehuman.lifecycle import correct, forget  # noqa: E402
from memlikehuman.records import Candidate, Scope  # noqa: E402

ENV = {"MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
SCOPE = Scope("bench", "forget")
WORDS = "the a to and of I you my we it is was that for on in with at this about really think going like".split()
WORDS += "dinner Lisbon project meeting guitar painting Friday doctor garden trip camera recipe deadline".split()
BATCH = 1_000


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60))).capitalize() + "."


def marker(i: int) -> str:
    """A unique word per target: random hex, so no two markers share more than a few leading characters."""
    return "zq" + hashlib.sha256(str(i).encode()).hexdigest()[:18]


def tell(i: int) -> bytes:
    """The part of a marker searched for in the files: FTS5 leaves store a term after the prefix it shares
    with the previous term, so the leading characters may not be stored next to the rest."""
    return marker(i)[8:].encode()


def build(engine: Engine, count: int, targets: set[int], rng: random.Random) -> None:
    """Record the archive in batches of BATCH events per transaction (recording speed is not measured here)."""
    db = engine.db
    for start in range(0, count, BATCH):
        with db.write() as conn:
            for i in range(start, min(count, start + BATCH)):
                text = sentence(rng) + (f" The code word is {marker(i)}." if i in targets else "")
                payload = events.new_event(SCOPE, f"evt-{i}", text, "user", "bench", session_id=f"s{i // 50}")
                sequence, _ = events.insert(db, payload)
                if i % 5 == 0 and i not in targets:
                    _bulk_memory(conn, sequence, f"Fact {i}: " + sentence(rng))
        print(f"\rbuilt {min(count, start + BATCH):,}/{count:,} events", end="", file=sys.stderr)
    print(file=sys.stderr)


def _bulk_memory(conn: Any, sequence: int, content: str) -> None:
    """A background memory without supersession checks (memories.store re-reads all current ones per call)."""
    conn.execute(
        "INSERT INTO memories (memory_id, event_sequence, persona_id, project_id, session_id, content, quote, kind,"
        " basis, category, valid_from, recorded_at) SELECT ?, sequence, persona_id, project_id, session_id, ?, ?,"
        " 'fact', 'stated', category, occurred_at, recorded_at FROM events WHERE sequence = ?",
        (memories.new_memory_id(), content, content, sequence),
    )
    fulltext.index_memory(conn, conn.last_insert_rowid())


def decorate(engine: Engine, targets: list[int]) -> None:
    """Two memories per target (with the marker), and a correction of every fourth."""
    for n, i in enumerate(targets):
        event = events.find(engine.db, SCOPE, f"evt-{i}")
        items = [
            Candidate(
                f"User's code word is {marker(i)}",
                f"code word is {marker(i)}",
                "fact",
                "stated",
                None,
                event.occurred_at,
            ),
            Candidate(f"User mentioned a code word {i}", "The code word", "event", "stated", None, event.occurred_at),
        ]
        rowids, _ = memories.store(engine.db, event, items, event.recorded_at)
        if n % 4 == 0 and rowids:
            memory_id = engine.db.scalar("SELECT memory_id FROM memories WHERE id = ?", (rowids[0],))
            correct.correct(engine.db, SCOPE, memory_id, f"User's code word is {marker(i)} (corrected)", "typo")


def worker_states(engine: Engine, count: int, rng: random.Random) -> None:
    """Rewrite the state of a third of the events the way the extraction worker does (a failure with
    its error, then half of them complete), in many small transactions: rows grow and shrink, so
    SQLite moves cells between pages, as in a real archive."""
    error = "timeout: the extraction model did not answer within 30 s; retried"
    picked = rng.sample(range(1, count + 1), count // 3)
    for start in range(0, len(picked), 50):
        with engine.db.write() as conn:
            for sequence in picked[start : start + 50]:
                done = rng.random() < 0.5
                conn.execute(
                    "UPDATE events SET extraction_state = ?, extraction_error = ? WHERE sequence = ?",
                    ("complete" if done else "failed", None if done else error, sequence),
                )


class _Rebuilds(logging.Handler):
    """Counts the forgets that found stale copies and rebuilt the archive (forget's log line)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += "rebuilding" in record.getMessage()


def plain_delete(engine: Engine, event_id: str) -> None:
    """Baseline: delete the event, its memories and their full-text rows; nothing more."""
    with engine.db.write() as conn:
        sequence = conn.execute("SELECT sequence FROM events WHERE event_id = ?", (event_id,)).fetchone()["sequence"]
        rowids = [r["id"] for r in conn.execute("SELECT id FROM memories WHERE event_sequence = ?", (sequence,))]
        for rowid in rowids:
            fulltext.unindex_memory(conn, rowid)
        fulltext.unindex_event(conn, sequence)
        conn.execute("DELETE FROM events WHERE sequence = ?", (sequence,))


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def residue(path: Path, ids: list[int]) -> int:
    """How many of these targets' markers can still be found, as bytes, in the database files."""
    data = b"".join(Path(str(path) + s).read_bytes() for s in ("", "-wal", "-shm") if Path(str(path) + s).exists())
    return sum(tell(i) in data for i in ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=40)
    args = parser.parse_args()
    rng = random.Random(11)
    picked = rng.sample(range(args.events), 2 * args.samples)
    ours, base = sorted(picked[: args.samples]), sorted(picked[args.samples :])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "forget.sqlite3"
        with Engine(config.load(path, env=ENV)) as engine:
            build(engine, args.events, set(picked), rng)
            decorate(engine, picked)
            worker_states(engine, args.events, rng)
            sqlite_scrub.scrub(engine.db)
            size_mb = path.stat().st_size / 1e6
            record_ms = [
                timed(lambda i=i: engine.record(SCOPE, f"new-{i}", sentence(rng), "user", "bench", session_id="new"))
                for i in range(args.samples)
            ]
            base_ms = [timed(lambda i=i: plain_delete(engine, f"evt-{i}")) for i in base]
            base_left = residue(path, base)
            rebuilds = _Rebuilds()
            logging.getLogger("memlikehuman").addHandler(rebuilds)
            logging.getLogger("memlikehuman").setLevel(logging.INFO)
            forget_ms = [timed(lambda i=i: forget.forget(engine.db, SCOPE, f"evt-{i}")) for i in ours]
            ours_left = residue(path, ours)
            scrub_ms = [timed(lambda: sqlite_scrub.scrub(engine.db)) for _ in range(5)]
    rows = [
        ["memory_forget core (`forget.forget`)", *_p(forget_ms), f"{ours_left} of {len(ours)}"],
        ["baseline: plain delete (rows + FTS rows, one transaction)", *_p(base_ms), f"{base_left} of {len(base)}"],
        ["baseline: memory_record on the same archive (`Engine.record`)", *_p(record_ms), "-"],
        ["part of forget: WAL checkpoint(TRUNCATE), WAL nearly empty", *_p(scrub_ms), "-"],
    ]
    body = table(["operation", "p50 ms", "p95 ms", "markers still in the files"], rows)
    body += (
        f"\n\nArchive: {args.events:,} events of 8-60 words in sessions of 50, a memory for every fifth event,"
        f" {size_mb:.0f} MB before the runs, no vectors (no embedder); the state of a third of the events"
        " rewritten as the extraction worker does (rows grow and shrink, so SQLite moves cells between pages)."
        f" {rebuilds.count} of {args.samples} forgets found a stale copy of their text in a live page's"
        " unused space and rebuilt the archive (VACUUM)."
        f" {args.samples} targets per method, each"
        " with two memories, every fourth also with a correction; each target's text holds a unique marker"
        " word. 'Markers still in the files' is a byte scan of the database file, -wal and -shm after that"
        " method's deletions (the baseline's markers survive in the WAL, which only forget truncates;"
        " the baseline is scanned before any forget ran)."
    )
    print(body)
    write_section("forget", "memory_forget", f"python bench/forget.py --events {args.events}", body)


def _p(values: list[float]) -> list[str]:
    return [f"{percentile(values, 50):.1f}", f"{percentile(values, 95):.1f}"]


if __name__ == "__main__":
    main()
