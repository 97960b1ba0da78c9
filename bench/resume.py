"""session_resume latency on a 100k-event archive (in-process), beside a plain "latest N events" query.

Run: python bench/resume.py [--events 100000] [--runs 60]
Writes the "resume" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.report import percentile, table, write_section  # noqa: E402
from memlikehuman import config  # noqa: E402
from memlikehuman.archive import checkpoints, events, personas  # noqa: E402
from memlikehuman.engine import Engine  # noqa: E402
from memlikehuman.records import Scope  # noqa: E402
from memlikehuman.sessions import context, tokens  # noqa: E402

ENV = {"MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
WORDS = "the a to and of I you my we it is was that for on in with at this about really think going like".split()
WORDS += "dinner Lisbon project meeting guitar painting Friday doctor garden trip camera recipe deadline".split()
SCOPE = Scope("bench", "resume")


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60))).capitalize() + "."


def build(engine: Engine, count: int) -> None:
    """count events in 1,000-event transactions (the same rows memory_record writes, minus extraction)."""
    rng = random.Random(5)
    personas.set_text(engine.db, SCOPE.persona_id, "You are a helpful assistant who remembers the user's projects.")
    for start in range(0, count, 1000):
        with engine.db.write():
            for i in range(start, min(count, start + 1000)):
                role = "user" if i % 2 else "assistant"
                payload = events.new_event(SCOPE, f"evt-{i}", sentence(rng), role, "bench", session_id=f"s{i // 200}")
                events.insert(engine.db, payload)
    last = count - 200
    state = {"goal": "Plan the Lisbon trip", "pending": ["book the flights"]}
    checkpoints.create(engine.db, SCOPE, state, f"evt-{last}", f"s{last // 200}")


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    fn()  # warm caches and tokenizers
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def latest_events(engine: Engine, n: int) -> list[dict[str, object]]:
    return engine.db.query(
        "SELECT event_id, role, source, occurred_at, text FROM events WHERE persona_id = ? AND project_id = ?"
        " ORDER BY sequence DESC LIMIT ?",
        (SCOPE.persona_id, SCOPE.project_id, n),
    )


def recall_alone(engine: Engine, query: str) -> object:
    from memlikehuman.retrieval.recall import recall

    return recall(engine, SCOPE, query, limit=context.RECALL_LIMIT)


def _events(result: context.ResumeResult) -> int:
    return {c.name: c.items - c.omitted_items for c in result.components}["recent_events"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Engine(config.load(Path(tmp) / "bench.sqlite3", env=ENV)) as engine:
        started = time.perf_counter()
        build(engine, args.events)
        print(f"built {args.events:,} events in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        cases: list[tuple[str, Callable[[], object]]] = [
            ("baseline: SELECT latest 50 events (plain query)", lambda: latest_events(engine, 50)),
            ("session_resume, checkpoint 200 events back, 4,096 tokens, estimate (no target_model)",
             lambda: context.resume(engine, SCOPE)),
            ("session_resume, same, 4,096 tokens, gpt-4o (o200k)",
             lambda: context.resume(engine, SCOPE, target_model="gpt-4o")),
            ("session_resume, same, 32,768 tokens, gpt-4o",
             lambda: context.resume(engine, SCOPE, token_budget=32_768, target_model="gpt-4o")),
            ("session_resume, no checkpoint (100k uncovered), 4,096 tokens, gpt-4",
             lambda: context.resume(engine, SCOPE, session_id="none", target_model="gpt-4")),
            ("session_resume, query 'Lisbon trip camera', 4,096 tokens, gpt-4o",
             lambda: context.resume(engine, SCOPE, query="Lisbon trip camera", target_model="gpt-4o")),
            ("of which: recall('Lisbon trip camera') alone", lambda: recall_alone(engine, "Lisbon trip camera")),
        ]  # fmt: skip
        rows = []
        for label, fn in cases:
            samples = timed(fn, args.runs)
            rows.append((label, percentile(samples, 50), percentile(samples, 95)))
            print(f"{label}: p50 {rows[-1][1]:.2f} ms, p95 {rows[-1][2]:.2f} ms", file=sys.stderr)
        sample = context.resume(engine, SCOPE, target_model="gpt-4o")
        estimated = context.resume(engine, SCOPE)
    real = tokens.counter_for("gpt-4o").count(estimated.context)
    body = table(["what", "p50 ms", "p95 ms"], rows) + (
        f"\n\n{args.events:,} events of 8-60 words in one project, a core persona, {args.runs} runs per row after one"
        " warm-up, in-process (no MCP envelope). The 4,096-token gpt-4o context held"
        f" {_events(sample)} events ({sample.status}); the 4,096-token estimate context ({estimated.token_method})"
        f" held {_events(estimated)} events, {real:,} real o200k tokens ({real / 4096:.0%} of the budget)."
        " The query row includes recall (fast mode, full-text only: no embedder)."
    )
    write_section("resume", "session_resume", f"python bench/resume.py --events {args.events}", body)


if __name__ == "__main__":
    main()
