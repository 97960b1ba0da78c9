"""Shared benchmark helpers: timing percentiles, tables, and the results behind docs/benchmarks.md.

Each benchmark ends with `write_section(name, title, command, body)`: its latest run becomes
bench/results/NAME.md (committed, a few kB: the command, the machine, the commit and the tables), and
docs/benchmarks.md is assembled again from every file there. `python -m bench.report` does only the
assembly: one page, grouped by area (AREAS), with a contents list. A result is replaced by the next run
of its command; earlier runs stay in git history, not on the page.
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import subprocess
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
RESULTS = Path(__file__).resolve().parent / "results"
HEADER = """\
# Benchmarks

The latest run of each benchmark, grouped by area. Each section names the command that wrote it, the
machine and the commit it ran on; rerun the command to refresh it. The commands write
`bench/results/NAME.md`, and `python -m bench.report` assembles this page from those files (it is
never edited by hand). Earlier runs are in git history. A section whose numbers no longer hold for
the current code says so under its heading, with the command that refreshes it.
"""
# The areas of the page, in order, and the results each holds (in order). A result not named here goes
# under its prefix's area (PREFIXES), else under "Other".
AREAS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Recall quality", (
        "second-look", "conversation-recall", "embedder-recall", "conversation-recall-alternatives-llm",
        "conversation-recall-alternatives-llm-feedback", "conversation-recall-alternatives-rule",
        "conversation-recall-alternatives-aliases",
    )),
    ("Recall latency", ("recall-latency", "scale", "scale-models", "vectors-scale", "vector-refresh")),
    ("Record, forget, resume, export", ("record", "forget", "resume", "portability")),
    ("Hooks", ("hooks", "hooks-real")),
    ("Injection", ("injection", "project-real")),
    ("Extraction", ("record-extracting", "extraction", "sampling", "sampling-schema")),
    ("Embedding", ("embedding",)),
    (
        "PostgreSQL",
        ("postgres", "pgvector", "conversation-recall-postgres", "forget-postgres-10000", "forget-postgres-100000"),
    ),
    ("UI", ("ui",)),
    ("Multilingual", ("multilingual",)),
    ("Test suite", ("test-suite",)),
)  # fmt: skip
PREFIXES = {
    "ablation": "Recall quality", "forget-postgres": "PostgreSQL", "conversation-recall": "Recall quality",
    "sampling": "Extraction", "project-real": "Injection",
}  # fmt: skip
OTHER = "Other"


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
    return (
        f"{os.cpu_count()} cores ({model}), Python {platform.python_version()}, SQLite {apsw.sqlite_lib_version()}"
        " (apsw)"
    )


def commit() -> str:
    """The checkout's short commit, and whether the measured code differed from it (uncommitted changes)."""

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)

    found = git("rev-parse", "--short", "HEAD").stdout.strip()
    if not found:
        return "unknown"
    # what a run writes (bench/results) is not the code it measured
    dirty = git("diff", "--quiet", "HEAD", "--", "memlikehuman", "bench", ":(exclude)bench/results").returncode == 1
    return found + (" with uncommitted changes to memlikehuman/ or bench/" if dirty else "")


def section(title: str, command: str, body: str) -> str:
    """The text of one result: title, command, machine, commit, then the body (tables and notes)."""
    return f"## {title}\n\nCommand: `{command}`  \nMachine: {machine()}  \nCommit: {commit()}\n\n{body.strip()}\n"


def write_section(name: str, title: str, command: str, body: str) -> None:
    """Store the latest run of the benchmark `name` (bench/results/NAME.md) and assemble docs/benchmarks.md."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.md").write_text(section(title, command, body), encoding="utf-8")
    assemble()


def area_of(name: str) -> str:
    """The area of the page a result goes under."""
    for area, names in AREAS:
        if name in names:
            return area
    for prefix, area in PREFIXES.items():
        if name.startswith(prefix):
            return area
    return OTHER


def _order(name: str) -> tuple[int, int, str]:
    areas = [area for area, _ in AREAS]
    area = area_of(name)
    place = areas.index(area) if area in areas else len(areas)
    names = dict(AREAS).get(area, ())
    return place, names.index(name) if name in names else len(names), name


def _slug(title: str, taken: dict[str, int]) -> str:
    """The anchor GitHub gives a heading (repeats get -1, -2, ...)."""
    slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
    count = taken.get(slug, 0)
    taken[slug] = count + 1
    return slug if count == 0 else f"{slug}-{count}"


def assemble(results: Path = RESULTS, doc: Path = DOC) -> str:
    """docs/benchmarks.md from every bench/results/*.md, grouped by area; returns the text written."""
    found = {path.stem: path.read_text(encoding="utf-8") for path in results.glob("*.md")}
    grouped: dict[str, list[tuple[str, str]]] = {}
    for name in sorted(found, key=_order):
        text = found[name].strip()
        head, _, rest = text.partition("\n")
        title = head.removeprefix("## ").strip() if head.startswith("## ") else name
        grouped.setdefault(area_of(name), []).append((title, rest if head.startswith("## ") else "\n" + text))
    taken = {"benchmarks": 1, "contents": 1}  # the page's own headings
    contents, parts = [], []
    for area, entries in grouped.items():
        contents.append(f"- [{area}](#{_slug(area, taken)})")
        parts.append(f"## {area}")
        for title, rest in entries:
            contents.append(f"  - [{title}](#{_slug(title, taken)})")
            parts.append(f"### {title}\n{rest.rstrip()}")
    text = HEADER + "\n## Contents\n\n" + "\n".join(contents) + "\n\n" + "\n\n".join(parts) + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text, encoding="utf-8")
    return text


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


if __name__ == "__main__":
    written = assemble()
    print(f"{DOC.relative_to(ROOT)}: {len(list(RESULTS.glob('*.md')))} results, {len(written.splitlines())} lines")
