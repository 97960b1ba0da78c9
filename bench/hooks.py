"""`memlikehuman hook` latency, process start included, beside a bare `python -c pass` start.

Run: python -m bench.hooks [--events 2000] [--runs 40]
Writes the "hooks" section of docs/benchmarks.md. Every run is a new process fed the hook JSON on
stdin, as Claude Code runs it; the archive holds `--events` prompts and replies in the hooks' scope.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.report import percentile, table, write_section  # noqa: E402
from memlikehuman import config  # noqa: E402
from memlikehuman.engine import Engine  # noqa: E402
from memlikehuman.hosts.hook import record  # noqa: E402
from memlikehuman.records import Scope  # noqa: E402

ENV = {"MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
WORDS = "deploy staging database migration tests release invoice garden Lisbon guitar Friday budget".split()
WORDS += "the a to and of we it is was that for on in with at this about really think".split()
SCOPE = Scope("default", "bench-hooks")
SCRIPT = Path(sys.executable).with_name("memlikehuman")


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40))).capitalize() + "."


def build(db: Path, count: int) -> None:
    rng = random.Random(16)
    with Engine(config.load(db, env=ENV)) as engine, engine.db.write():
        for i in range(count):
            role = "user" if i % 2 == 0 else "assistant"
            record(engine, SCOPE, "claude-code", f"session-{i // 40}", role, f"{sentence(rng)} ({i})")


def timed(
    argv: list[str], payload: Callable[[int], dict[str, object] | None], runs: int, env: dict[str, str]
) -> list[float]:
    times = []
    for run in range(runs):
        data = payload(run)
        stdin = json.dumps(data).encode() if data is not None else b""
        started = time.perf_counter()
        subprocess.run(argv, input=stdin, env=env, capture_output=True, check=True)
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.sqlite3"
        build(db, args.events)
        env = {**ENV, "MEMLIKEHUMAN_DB": str(db), "PATH": "/usr/bin:/bin"}
        base = {"session_id": "bench", "transcript_path": "", "cwd": tmp, "permission_mode": "default"}
        hook = [str(SCRIPT), "hook", "claude-code", "--project", SCOPE.project_id]
        cases: list[tuple[str, list[str], Callable[[int], dict[str, object] | None]]] = [
            ("floor: python -c pass", [sys.executable, "-c", "pass"], lambda _: None),
            (
                "import only: the core modules the prompt hook loads",
                [
                    sys.executable,
                    "-c",
                    "import memlikehuman.hosts.hook, memlikehuman.engine, memlikehuman.retrieval.recall",
                ],
                lambda _: None,
            ),
            (
                "SessionStart (resume context)",
                hook,
                lambda _: {**base, "hook_event_name": "SessionStart", "source": "startup"},
            ),
            (
                "UserPromptSubmit (record + fast recall)",
                hook,
                lambda n: {**base, "hook_event_name": "UserPromptSubmit", "prompt": f"when is the staging deploy {n}?"},
            ),
            (
                "UserPromptSubmit via the click group (python -m memlikehuman)",
                [sys.executable, "-m", "memlikehuman", *hook[1:]],
                lambda n: {**base, "hook_event_name": "UserPromptSubmit", "prompt": f"and the release budget {n}?"},
            ),
        ]
        rows = []
        for label, argv, payload in cases:
            timed(argv, payload, 3, env)  # warm the page cache and .pyc files
            times = timed(argv, payload, args.runs, env)
            rows.append((label, f"{percentile(times, 50):.0f}", f"{percentile(times, 95):.0f}"))
            print(f"{label}: p50 {percentile(times, 50):.0f} ms, p95 {percentile(times, 95):.0f} ms", flush=True)
    body = table(["process (new for every run)", "p50 ms", "p95 ms"], rows)
    body += (
        f"\n\n{args.runs} runs each after 3 warm-up runs; archive of {args.events:,} events in the hooks' scope;"
        " target: SessionStart and UserPromptSubmit p50 <= 150 ms. The installed hook command is the console"
        " script, which skips the click group (hosts/entry.py); the last row is the same hook through it. The"
        " second row is the import cost of the core alone: most of a hook's time is process start plus imports."
    )
    write_section(
        "hooks",
        "memlikehuman hook latency (process start included)",
        f"python -m bench.hooks --events {args.events} --runs {args.runs}",
        body,
    )


if __name__ == "__main__":
    main()
