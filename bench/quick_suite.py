"""`scripts/test --quick` in this checkout beside another one: wall time and CPU seconds, alternating.

Run: python -m bench.quick_suite --against DIR [--runs 2]
Writes the "test-suite" section of docs/benchmarks.md. DIR is a checkout of the revision to compare
(`git worktree add DIR REV`) with its own .venv (`python3.11 -m venv .venv && .venv/bin/pip install -e
.[dev]`). Each tree's caches are warmed once first (mypy's, and the bytecode of the package and the test
modules: a collect-only run); then the two run in turn, `--runs` times each, on a machine that may be shared.

CPU seconds are the user and system time of every process a run starts: this process is their
subreaper (PR_SET_CHILD_SUBREAPER), so a detached process a test leaves behind is counted once it ends.
"Others" is what the machine's cores spent meanwhile (/proc/stat) less the run's own: the load it shared.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.report import ROOT, table, write_section  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36
REAP_SECONDS = 120.0
EXTRA = ["--durations=25"]


@dataclass(frozen=True)
class Run:
    tree: str
    wall: float
    cpu: float
    others: float
    load: float
    said: str  # scripts/test's own last line
    summary: str  # pytest's last line


def busy_seconds() -> float:
    """CPU seconds every core of the machine has spent busy since boot."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def wait_reaping(pid: int) -> None:
    """Wait for `pid`, reaping every process the run leaves to this subreaper as it ends (a test that
    waits for a process it killed to go must not find it a zombie)."""
    while os.waitpid(-1, 0)[0] != pid:
        pass


def reap_orphans() -> int:
    """Wait for the processes a run left behind; how many outlived REAP_SECONDS."""
    deadline = time.monotonic() + REAP_SECONDS
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return 0
        if pid == 0:
            time.sleep(0.2)
    me = str(os.getpid())
    return sum(1 for stat in Path("/proc").glob("[0-9]*/stat") if _parent(stat) == me)


def _parent(stat: Path) -> str | None:
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[1]
    except (OSError, IndexError):
        return None


def short(tree: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()


def warm(tree: Path) -> None:
    """mypy's cache and the bytecode of the package and test modules, as a run of the tree leaves them."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([".venv/bin/mypy"], cwd=tree, env=env, capture_output=True)
    collect = [".venv/bin/python", "-m", "pytest", "-p", "no:cacheprovider", "--quick", "--collect-only", "-q"]
    subprocess.run(collect, cwd=tree, env=env, capture_output=True)


def run(tree: Path, logs: Path, number: int) -> Run:
    name = short(tree)
    cpu, busy, load, started = children_cpu(), busy_seconds(), os.getloadavg()[0], time.perf_counter()
    log = logs / f"{number}-{name}.log"
    with log.open("w") as out:
        process = subprocess.Popen(["scripts/test", "--quick", *EXTRA], cwd=tree, stdout=out, stderr=subprocess.STDOUT)
        wait_reaping(process.pid)
    wall = time.perf_counter() - started
    left = reap_orphans()
    cpu, busy = children_cpu() - cpu, busy_seconds() - busy
    lines = log.read_text().strip().splitlines()
    said = next((line for line in reversed(lines) if line.startswith("scripts/test --quick:")), "-")
    summary = next((line.strip("= ") for line in reversed(lines) if re.match(r"=+ .* in [\d.]+s", line)), "-")
    if left:
        summary += f" ({left} processes outlived the run)"
    return Run(name, wall, cpu, max(0.0, busy - cpu), load, said, summary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="a checkout of the revision to compare")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--logs", type=Path, default=Path("/tmp/quick-suite-logs"), help="each run's output")
    args = parser.parse_args()
    args.logs.mkdir(parents=True, exist_ok=True)
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    trees = [args.against.resolve(), ROOT]
    for tree in trees:
        warm(tree)
    runs = [run(tree, args.logs, 2 * i + j) for i in range(args.runs) for j, tree in enumerate(trees)]
    for found in runs:
        print(found, flush=True)
    rows = [
        (r.tree, f"{r.wall:.0f}", f"{r.cpu:.0f}", f"{r.others:.0f}", f"{r.load:.1f}", r.said, r.summary) for r in runs
    ]
    medians = [
        (name, f"{statistics.median(r.wall for r in runs if r.tree == name):.0f}",
         f"{statistics.median(r.cpu for r in runs if r.tree == name):.0f}")
        for name in dict.fromkeys(r.tree for r in runs)
    ]  # fmt: skip
    body = (
        f"`scripts/test --quick {' '.join(EXTRA)}` in a checkout of {runs[0].tree} (before) and in this one, "
        f"alternating, {args.runs} runs each, after warming each tree's caches once. CPU: user + system seconds "
        "of every process the run started (detached ones included). Others: CPU seconds the machine's 2 cores "
        "spent on other work meanwhile. Load: 1-minute load average at the start.\n\n"
        + table(["commit", "wall s", "CPU s", "others' CPU s", "load", "scripts/test said", "pytest"], rows)
        + "\n\nMedians:\n\n"
        + table(["commit", "wall s", "CPU s"], medians)
    )
    command = f"python -m bench.quick_suite --against DIR --runs {args.runs}"
    write_section("test-suite", "Test suite: scripts/test --quick", command, body)


if __name__ == "__main__":
    main()
