"""What `install --memory-file` adds to the session start and end hooks: the export of the scope's memories.

Run: python -m bench.memory_files [--memories 1000] [--runs 15]
Builds an archive of `--memories` memories in one scope (in a temporary folder), then times, as the
median of `--runs`: `memory_files.export` in this process (the file unchanged: what most hooks do), and
the hook process for SessionStart and SessionEnd with and without `--memory-file` (start-up included).
Prints the numbers; docs/hosts.md ("The hosts' own memory files") quotes them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from memlikehuman import config  # noqa: E402
from memlikehuman.engine import Engine  # noqa: E402
from memlikehuman.hosts import memory_files  # noqa: E402
from memlikehuman.records import Scope  # noqa: E402

ENV = {"MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
SCOPE = Scope("default", "bench-memory-files")


def build(db: Path, count: int) -> None:
    with Engine(config.load(db, env=ENV)) as engine:
        for n in range(count):
            text = f"Service {n} runs on port {8000 + n} and belongs to team {n % 17}."
            given = [{"content": f"Service {n} listens on port {8000 + n} (team {n % 17}).", "quote": text}]
            engine.record(SCOPE, f"bench-{n}", text, "user", "chat", session_id=f"s{n // 50}", memories=given)


def in_process(db: Path, path: Path, runs: int) -> float:
    with Engine(config.load(db, env=ENV)) as engine:
        memory_files.export(engine, SCOPE, "claude-md", path)  # the first writes the block
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            memory_files.export(engine, SCOPE, "claude-md", path)
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def hook(db: Path, project: Path, event: str, extra: list[str], runs: int) -> float:
    script = Path(sys.executable).with_name("memlikehuman")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(db.parent), "MEMLIKEHUMAN_DB": str(db), **ENV}
    times = []
    for n in range(runs):
        payload = {"session_id": f"t{n}", "transcript_path": "", "cwd": str(project), "hook_event_name": event}
        args = [str(script), "hook", "claude-code", "--project", SCOPE.project_id, *extra]
        start = time.perf_counter()
        done = subprocess.run(args, input=json.dumps(payload).encode(), capture_output=True, env=env, cwd=project)
        times.append(time.perf_counter() - start)
        if done.returncode or done.stderr:
            raise SystemExit(done.stderr.decode())
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db, project = Path(tmp) / "m.sqlite3", Path(tmp) / "app"
        project.mkdir()
        build(db, args.memories)
        path = project / "CLAUDE.md"
        exported = in_process(db, path, args.runs)
        print(f"{args.memories:,} memories; export, file unchanged, in process: {exported:.1f} ms")
        for event in ("SessionStart", "SessionEnd"):
            without = hook(db, project, event, [], args.runs)
            with_file = hook(db, project, event, ["--memory-file", str(path)], args.runs)
            print(f"{event}: {without:.1f} ms without --memory-file, {with_file:.1f} ms with it")


if __name__ == "__main__":
    main()
