"""Shared benchmark helpers: timing percentiles, tables, and docs/benchmarks.md sections."""

from __future__ import annotations

import os
import platform
import re
import statistics
import subprocess
from collections.abc import Sequence
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = "# Benchmarks\n\nEach section is written by the script named in it; rerun the command to refresh it.\n"


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table."""

    def cell(value: object) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def machine() -> str:
    """One line describing this machine and software."""
    import apsw

    cpu = platform.processor() or platform.machine()
    try:
        model = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        model = cpu
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    return (
        f"{os.cpu_count()} cores ({model}), Python {platform.python_version()}, SQLite {apsw.sqlite_lib_version()}"
        f" (apsw), commit {commit or 'unknown'}"
    )


def write_section(name: str, title: str, command: str, body: str) -> None:
    """Replace (or append) the section `name` of docs/benchmarks.md."""
    DOC.parent.mkdir(parents=True, exist_ok=True)
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else HEADER
    section = (
        f"<!-- {name}:start -->\n## {title}\n\nCommand: `{command}`  \nMachine: {machine()}\n\n{body.strip()}\n"
        f"<!-- {name}:end -->"
    )
    pattern = re.compile(rf"<!-- {re.escape(name)}:start -->.*?<!-- {re.escape(name)}:end -->", re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip() + "\n\n" + section + "\n"
    DOC.write_text(text, encoding="utf-8")


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")
