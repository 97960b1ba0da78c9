"""memory_forget on PostgreSQL: what each cleanup after the commit costs, and what it leaves in the files.

Run: python -m bench.forget_postgres [--events 100000] [--samples 6]
Writes the "forget-postgres" section of docs/benchmarks.md (one section per --events).

A throwaway cluster (tests/pg_forget_support.py) holds one archive: `--events` recorded events
built as bench/forget.py builds them, then per cleanup `--samples` targets (pg_forget_support.plant:
a marker word in the event and in a memory; every other target with 6 kB of random text in TOAST,
beside a kept one). Each cleanup forgets its own targets with `forget.forget`; then a CHECKPOINT
(so the files hold what the server has) and a byte scan of the database's table, index and TOAST
files and of pg_wal for each target's needles. "none" is the baseline: the forget's transaction alone.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from pg_forget_support import Cluster, flush, plant, scan  # noqa: E402

from bench.forget import ENV, SCOPE, build  # noqa: E402
from bench.report import percentile, table, write_section  # noqa: E402
from memlikehuman import config  # noqa: E402
from memlikehuman.archive.postgres import scrub as scrubbing  # noqa: E402
from memlikehuman.archive.postgres.scrub import PgCleanup  # noqa: E402
from memlikehuman.engine import Engine  # noqa: E402
from memlikehuman.lifecycle import forget  # noqa: E402

TEXT_TABLES = ("events", "memories", "corrections", "cues", "events_fts_terms", "memories_fts_terms")
ANY_SIZE = 2**62
CLEANUPS = {
    "none (the transaction only)": PgCleanup(vacuum=(), rewrite=(), checkpoint=False),
    "VACUUM (INDEX_CLEANUP ON) of the 17 tables": PgCleanup(rewrite=(), checkpoint=False),
    "VACUUM, but VACUUM FULL of events, memories": PgCleanup(rewrite_bytes=ANY_SIZE, checkpoint=False),
    "VACUUM, but VACUUM FULL of every table holding text": PgCleanup(
        rewrite=TEXT_TABLES, rewrite_bytes=ANY_SIZE, checkpoint=False
    ),
    "VACUUM, VACUUM FULL of events, memories, CHECKPOINT": PgCleanup(rewrite_bytes=ANY_SIZE),
    "VACUUM, CHECKPOINT, no rewrite (events and memories above the size bound)": PgCleanup(rewrite_bytes=0),
}


def run_one(engine: Engine, cluster: Cluster, url: str, name: str, cleanup: PgCleanup, samples: int) -> list[object]:
    made = plant(engine, SCOPE, f"target-{list(CLEANUPS).index(name)}", samples)
    flush(url)
    scrubbing.POSTGRES_CLEANUP = cleanup
    timings = []
    for event_id, _ in made:
        start = time.perf_counter()
        forget.forget(engine.db, SCOPE, event_id)
        timings.append((time.perf_counter() - start) * 1000)
    flush(url)
    left: Counter[str] = Counter()
    where: set[str] = set()
    for _, needles in made:
        left.update(place for place, hits in scan(cluster.data, url, needles, where).items() if hits)
    places = ("table", "index", "toast", "wal")
    counts = (f"{left[p]} of {samples}" for p in places)
    return [name, percentile(timings, 50), max(timings), *counts, ", ".join(sorted(where)) or "-"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=6)
    args = parser.parse_args()
    cluster = Cluster.create()
    try:
        url = cluster.new_database()
        with Engine(config.load(url, env=ENV)) as engine:
            build(engine, args.events, set(), random.Random(11))
            size = engine.db.scalar("SELECT pg_database_size(current_database())") / 1e6
            texts = engine.db.size(("events", "memories")) / 1e6
            rows = [run_one(engine, cluster, url, *item, args.samples) for item in CLEANUPS.items()]
            version = engine.db.scalar("SHOW server_version")
    finally:
        cluster.remove()
    head = ["cleanup after the commit", "forget p50 ms", "max ms", "table files", "index files", "TOAST files"]
    body = table([*head, "pg_wal", "where"], rows)
    body += (
        f"\n\nPostgreSQL {version}, a fresh cluster with default settings (fsync on, wal_level replica);"
        f" archive of {args.events:,} events ({size:.0f} MB database, events and memories {texts:.0f} MB with"
        " TOAST and indexes) built as bench/forget.py does."
        f" {args.samples} targets per cleanup, every other one with 6 kB of random text (TOAST); each"
        " column counts the targets with any needle (the marker word, the phrase 'code word is <marker>', or a"
        " 32-byte piece of the long text) still readable in those files after a CHECKPOINT; 'where' names the"
        " relations holding any (the postings tables hold the marker as a term, the others whole texts)."
    )
    write_section(
        f"forget-postgres-{args.events}",
        f"memory_forget on PostgreSQL, {args.events:,} events",
        f"python -m bench.forget_postgres --events {args.events} --samples {args.samples}",
        body,
    )
    print(body)


if __name__ == "__main__":
    main()
