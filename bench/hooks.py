"""`memlikehuman hook` latency, process start included, beside a bare `python -c pass` start.

Run: python -m bench.hooks [--events 2000] [--runs 40]
Writes the "hooks" section of docs/benchmarks.md. Every run is a new process fed the hook JSON on
stdin, as Claude Code runs it; the archive holds `--events` prompts and replies in the hooks' scope.

What users run is a `pip install memlikehuman`: this checkout is built into a wheel and installed
into a scratch venv (its dependencies come from this venv through a .pth line), so its console
script starts as a user's does. The editable install of scripts/test (whose `__editable__` path
finder costs every start of that venv's python, the floor included) is measured beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.installed import at_revision, pip_installed, this_checkout  # noqa: E402
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
FLOOR = "floor: python -c pass (pip install)"
EDITABLE_FLOOR = "floor: python -c pass, editable install"


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40))).capitalize() + "."


def build(db: Path, count: int) -> None:
    rng = random.Random(16)
    with Engine(config.load(db, env=ENV)) as engine, engine.db.write():
        for i in range(count):
            role = "user" if i % 2 == 0 else "assistant"
            record(engine, SCOPE, "claude-code", f"session-{i // 40}", role, f"{sentence(rng)} ({i})")


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, float]:
    """One run: wall milliseconds, and the child's CPU milliseconds (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, capture_output=True, check=True)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


Payload = Callable[[int], dict[str, object] | None]
Case = tuple[str, list[str], Payload, dict[str, str]]  # label, argv, stdin JSON per run, extra environment


def measure(cases: list[Case], runs: int, env: dict[str, str]) -> dict[str, tuple[list[float], list[float]]]:
    """Every case run `runs` times, round-robin (a load spike on a shared machine hits all cases alike)."""
    found: dict[str, tuple[list[float], list[float]]] = {label: ([], []) for label, _, _, _ in cases}
    for run in range(-3, runs):  # three warm-up rounds: the page cache and .pyc files
        for label, argv, payload, extra in cases:
            data = payload(run)
            wall, cpu = timed(argv, json.dumps(data).encode() if data is not None else b"", {**env, **extra})
            if run >= 0:
                found[label][0].append(wall)
                found[label][1].append(cpu)
    return found


def baseline_cases(rev: str, tmp: Path, args: list[str], start: Payload, prompt: Payload, db: Path) -> list[Case]:
    """The same two hooks of the code of `rev` (git archive), pip-installed the same way.

    They run on their own copy of the archive: one version's close (a WAL checkpoint or none) must
    not change what the other's next run finds.
    """
    src, name = at_revision(rev, tmp / "baseline-src")
    script = str(pip_installed(src, tmp / "baseline").with_name("memlikehuman"))
    copy = tmp / "baseline.sqlite3"
    shutil.copy(db, copy)
    own = {"MEMLIKEHUMAN_DB": str(copy)}
    return [
        (f"SessionStart at {name} (before)", [script, *args], start, own),
        (f"UserPromptSubmit at {name} (before)", [script, *args], prompt, own),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--baseline", default=None, help="also time the hooks of this git revision (e.g. main)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.sqlite3"
        build(db, args.events)
        python = pip_installed(this_checkout(Path(tmp)), Path(tmp) / "installed")
        env = {**ENV, "MEMLIKEHUMAN_DB": str(db), "PATH": "/usr/bin:/bin"}
        base = {"session_id": "bench", "transcript_path": "", "cwd": tmp, "permission_mode": "default"}
        args_ = ["hook", "claude-code", "--project", SCOPE.project_id]
        hook, editable = [str(python.with_name("memlikehuman")), *args_], [str(SCRIPT), *args_]

        def start(_: int) -> dict[str, object]:
            return {**base, "hook_event_name": "SessionStart", "source": "startup"}

        def prompt(n: int) -> dict[str, object]:
            return {**base, "hook_event_name": "UserPromptSubmit", "prompt": f"when is the staging deploy {n}?"}

        core = "import memlikehuman.hosts.hook, memlikehuman.engine, memlikehuman.retrieval.recall"
        cases: list[Case] = [
            (FLOOR, [str(python), "-c", "pass"], lambda _: None, {}),
            ("import only: the core modules the prompt hook loads", [str(python), "-c", core], lambda _: None, {}),
            ("SessionStart (resume context)", hook, start, {}),
            ("UserPromptSubmit (record + fast recall)", hook, prompt, {}),
            (EDITABLE_FLOOR, [sys.executable, "-c", "pass"], lambda _: None, {}),
            ("SessionStart, editable install", editable, start, {}),
            ("UserPromptSubmit, editable install", editable, prompt, {}),
            (
                "UserPromptSubmit via the click group (python -m memlikehuman), editable",
                [sys.executable, "-m", "memlikehuman", *args_],
                lambda n: {**base, "hook_event_name": "UserPromptSubmit", "prompt": f"and the release budget {n}?"},
                {},
            ),
        ]
        if args.baseline:
            cases += baseline_cases(args.baseline, Path(tmp), args_, start, prompt, db)
        found = measure(cases, args.runs, env)
    floors = {name: percentile(found[name][0], 50) for name in (FLOOR, EDITABLE_FLOOR)}
    rows = []
    for label, (walls, cpus) in found.items():
        p50, p95, cpu = percentile(walls, 50), percentile(walls, 95), percentile(cpus, 50)
        floor = floors[EDITABLE_FLOOR if "editable" in label else FLOOR]
        rows.append((label, f"{p50:.0f}", f"{p95:.0f}", f"{p50 - floor:+.0f}", f"{cpu:.0f}"))
        print(f"{label}: p50 {p50:.0f} ms, p95 {p95:.0f} ms, CPU p50 {cpu:.0f} ms", flush=True)
    headers = ["process (new for every run)", "p50 ms", "p95 ms", "p50 above its floor", "CPU p50 ms"]
    body = table(headers, rows)
    body += (
        f"\n\n{args.runs} runs of each, round-robin, after 3 warm-up rounds; archive of {args.events:,} events in"
        " the hooks' scope; target: SessionStart and UserPromptSubmit p50 <= 150 ms. The first four rows are"
        " what a user runs: this checkout built into a wheel and pip-installed into a scratch venv, its"
        " console script as the installed hook command (it skips the click group, hosts/entry.py). The"
        " editable rows are the .venv of scripts/test, whose `__editable__` path finder every start pays"
        " (its own floor); they are compared with that floor. `(before)` rows: --baseline's revision, pip-installed"
        " the same way, on its own copy of the archive. CPU is"
        " the child's user + system time, which a busy machine inflates less than wall time. The import-only"
        " row is the import cost of the core alone: most of a hook's time is process start plus imports."
        f" Load average at the end of the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores."
    )
    write_section(
        "hooks",
        "memlikehuman hook latency (process start included)",
        f"python -m bench.hooks --events {args.events} --runs {args.runs}"
        + (f" --baseline {args.baseline}" if args.baseline else ""),
        body,
    )


if __name__ == "__main__":
    main()
