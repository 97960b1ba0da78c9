"""Server time per page of `memlikehuman ui` at 100,000 events (target: at most 100 ms per page).

Builds a synthetic archive (bench.recall_latency's chat-like events in 4 scopes, plus memories for
one event in five, a subject timeline, checkpoints and a core persona), starts the real UI process
on it (no embedder), logs in like a browser and requests each page RUNS times over loopback HTTP.
"server" is the app's own time (its Server-Timing header: from the request reaching the guard to
the response starting; the page is rendered by then), "round trip" adds HTTP and the client. Two
baselines run in the same process: the stylesheet (guard, routing and HTTP, no archive work) and
recall() called in process for the search query (the core operation the search page wraps).

    python -m bench.ui                    # 100k events, writes the "ui" section of docs/benchmarks.md
    python -m bench.ui --events 10000     # a quicker look
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import report
from bench.recall_latency import MAIN, build
from memlikehuman import config
from memlikehuman.archive import checkpoints, events, memories, personas
from memlikehuman.engine import Engine
from memlikehuman.records import Candidate
from memlikehuman.retrieval.recall import recall

RUNS = 30
TARGET_MS = 100
ENV = {"MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
QUERY = "where did Ana say the meeting was"


def _derive(engine: Engine) -> None:
    """Memories for every fifth event of the main scope (its first words, quoted); a 5-version subject."""
    rows = engine.db.query(
        "SELECT sequence FROM events WHERE persona_id = ? AND project_id = ? AND sequence % 5 = 0 ORDER BY sequence",
        (MAIN.persona_id, MAIN.project_id),
    )
    with engine.db.write():
        for i, row in enumerate(rows):
            event = events.load(engine.db, row["sequence"])
            quote = " ".join(event.text.split()[:5])
            subject = "ana.office" if i % (len(rows) // 5 or 1) == 0 else None
            item = Candidate(f"Ana said: {quote}", quote, "fact", "stated", subject, event.occurred_at)
            memories.store(engine.db, event, [item], event.recorded_at)
    last = engine.db.one(
        "SELECT event_id, session_id FROM events WHERE persona_id = ? AND project_id = ?"
        " ORDER BY sequence DESC LIMIT 1",
        (MAIN.persona_id, MAIN.project_id),
    )
    assert last is not None
    for i in range(20):
        checkpoints.create(
            engine.db, MAIN, {"goal": f"task {i}", "pending": ["next"]}, last["event_id"], last["session_id"]
        )
    personas.set_text(engine.db, MAIN.persona_id, "You are a helpful assistant for the bench team. " * 20)
    print(f"memories: {len(rows):,}", file=sys.stderr)


def _pages(memory_id: str, event_id: str, middle: int) -> list[tuple[str, str]]:
    scope = f"persona={MAIN.persona_id}&project={MAIN.project_id}"
    return [
        ("scopes and latest events", "/"),
        ("timeline, newest page", f"/scope?{scope}"),
        ("timeline, an older page", f"/scope?{scope}&before={middle}"),
        ("timeline of one session", f"/scope?{scope}&session=s100"),
        ("search (fast)", f"/search?{scope}&q={QUERY.replace(' ', '+')}"),
        (
            "search, as_of + history",
            f"/search?{scope}&q={QUERY.replace(' ', '+')}&as_of=2025-01-01T00:00:00Z&history=1",
        ),
        ("event with quotes marked", f"/event?{scope}&id={event_id}"),
        ("memory with 5 versions", f"/memory?{scope}&id={memory_id}"),
        ("checkpoints + resume preview", f"/checkpoints?{scope}&preview=1&budget=4096"),
        ("core persona", f"/persona?persona={MAIN.persona_id}"),
        ("forget preview", f"/forget?{scope}&id={event_id}"),
        ("baseline: stylesheet (no archive work)", "/static/ui.css"),
    ]


def _timings(ui: Any, path: str) -> tuple[list[float], list[float]]:
    server, trip = [], []
    for _ in range(RUNS + 1):
        started = time.perf_counter()
        reply = ui.request("GET", path)
        elapsed = time.perf_counter() - started
        assert reply.status == 200, (path, reply.status, reply.text[:300])
        match = re.search(r"app;dur=([\d.]+)", reply.header("server-timing"))
        assert match, reply.headers
        server.append(float(match.group(1)))
        trip.append(elapsed * 1000)
    return server[1:], trip[1:]  # the first request warms caches


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--archive", help="build the archive in this directory once and reuse it on later runs")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from ui_support import running_ui  # the tests' client: a real process, plain HTTP

    workdir = Path(args.archive) if args.archive else Path(tempfile.mkdtemp(prefix="bench-ui-"))
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / f"ui-{args.events}.sqlite3"
    fresh = not db.exists()
    with Engine(config.load(db, env=ENV)) as engine:
        if fresh:
            build(engine, args.events, random.Random(42), "bench-model", 16)
            _derive(engine)
        memory_id = str(
            engine.db.scalar("SELECT memory_id FROM memories WHERE subject = 'ana.office' ORDER BY id DESC LIMIT 1")
        )
        event_id = str(
            engine.db.scalar(
                "SELECT e.event_id FROM memories m JOIN events e ON e.sequence = m.event_sequence"
                " WHERE m.memory_id = ?",
                (memory_id,),
            )
        )
        middle = args.events // 2
        recall(engine, MAIN, QUERY)
        core = []
        for _ in range(RUNS):
            started = time.perf_counter()
            recall(engine, MAIN, QUERY, limit=20)
            core.append((time.perf_counter() - started) * 1000)
    rows = []
    with running_ui(db, **ENV) as ui:
        ui.login()
        for name, path in _pages(memory_id, event_id, middle):
            server, trip = _timings(ui, path)
            rows.append(
                [name, report.percentile(server, 50), report.percentile(server, 95), report.percentile(trip, 50)]
            )
            print(f"{name}: server p50 {rows[-1][1]:.1f} ms", file=sys.stderr)
    rows.append(
        ["baseline: recall() in process (search's core)", report.percentile(core, 50), report.percentile(core, 95), "-"]
    )
    worst = max(float(r[2]) for r in rows[:-2])
    table = report.table(
        ["page", "server p50 ms", "server p95 ms", "round trip p50 ms"],
        [[r[0], *(f"{v:.1f}" if isinstance(v, float) else v for v in r[1:])] for r in rows],
    )
    body = (
        f"{table}\n\n- {args.events:,} events in 4 scopes (the pages show the one with 70%), memories for one event"
        f" in five of it, 20 checkpoints, a core persona; {RUNS} requests per page after one warm-up, one at a time"
        f" over loopback HTTP to the real `memlikehuman ui` process (no embedder)\n"
        f"- slowest page p95: {worst:.1f} ms (target: at most {TARGET_MS} ms)"
    )
    print(body)
    if not args.no_write:
        report.write_section("ui", f"UI server time per page at {args.events:,} events", "python -m bench.ui", body)


if __name__ == "__main__":
    main()
