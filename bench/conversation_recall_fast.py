"""LoCoMo fast-mode evidence recall@10 in seconds: no embedder, the first N conversations.

A cheap check beside bench.conversation_recall (which embeds every turn: ~15 min). `--plain-only`
runs only the plain query, so the same file also measures an older checkout of the code:

    python -m bench.conversation_recall_fast --conversations 3
    git archive BASE | tar -x -C /tmp/base && cd /tmp/base && \
        PYTHONPATH=/tmp/base python /path/to/bench/conversation_recall_fast.py --conversations 3 --plain-only
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from bench import report
from bench.conversation_recall import CATEGORIES, DATA, KS, Conversation, Scores, alias_rows, ask, ingest, load
from memlikehuman import config
from memlikehuman.engine import Engine
from memlikehuman.retrieval.recall import DEFAULT_TUNING


def archives(backends: Sequence[str], work: Path) -> Iterator[tuple[str, str]]:
    """(backend, archive target) for each backend; a PostgreSQL one lives in a throwaway cluster."""
    for backend in backends:
        if backend == "sqlite":
            yield "SQLite", str(work / "a.sqlite3")
            continue
        from bench.pg_cluster import cluster

        with cluster() as server:
            yield "PostgreSQL", server.database("locomo")


def scores(engine: Engine, conversations: list[Conversation], plain_only: bool) -> dict[str, Scores]:
    """Evidence recall of every question in fast mode: plain, and (unless plain_only) the variants."""
    rows: dict[str, Scores] = {"plain": Scores()}
    for conv in conversations:
        ask(engine, conv, "fast", rows["plain"])
    if plain_only:
        return rows
    from bench.conversation_recall import rule_alternatives

    rows["relative dates not used"] = Scores()
    for conv in conversations:
        tuning = dataclasses.replace(DEFAULT_TUNING, relative_dates=False)
        ask(engine, conv, "fast", rows["relative dates not used"], tuning)
    rows.update(
        {
            name.removeprefix("memory_recall fast, "): row
            for name, row in alias_rows(engine, conversations, "fast").items()
        }
    )
    name = "rule alternatives, max fusion"
    rows[name] = Scores()
    for conv in conversations:
        speakers = sorted({t.speaker for t in conv.turns})
        ask(engine, conv, "fast", rows[name], DEFAULT_TUNING, lambda q, s=speakers: rule_alternatives(q, s))  # type: ignore[misc]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--plain-only", action="store_true")
    parser.add_argument(
        "--backends",
        nargs="+",
        choices=("sqlite", "postgres"),
        default=["sqlite"],
        help="archives to ask (postgres: a throwaway cluster, bench.pg_cluster); with both and all 10"
        " conversations the plain rows go into the conversation-recall-postgres section of docs/benchmarks.md",
    )
    args = parser.parse_args()
    conversations = load(args.data, args.conversations)
    env = {"MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
    found: dict[str, dict[str, Scores]] = {}
    ingest_seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="locomo-fast-") as work:
        for backend, target in archives(args.backends, Path(work)):
            with Engine(config.load(target, env=env)) as engine:
                ingest_seconds[backend] = ingest(engine, conversations)
                found[backend] = scores(engine, conversations, args.plain_only)
    several = len(found) > 1
    for backend, rows in found.items():
        for name, row in rows.items():
            cats = " ".join(f"{c}:{np.mean(v):.3f}" for c, v in sorted(row.by_category.items()))
            label = f"fast, {name}" + (f" ({backend})" if several else "")
            cells = [label, len(row.recall[10]), f"{np.mean(row.recall[10]):.3f}", cats]
            print("| " + " | ".join(map(str, cells)) + f" | {np.median(row.seconds) * 1000:.1f} |")
    if set(found) == {"SQLite", "PostgreSQL"} and len(conversations) == 10:
        write_backends(found, ingest_seconds, len(conversations))


def write_backends(found: dict[str, dict[str, Scores]], ingest_seconds: dict[str, float], n: int) -> None:
    """The conversation-recall-postgres section: the plain fast row on each backend, and their difference."""
    rows = [[f"memory_recall fast on {backend}", *_row_cells(rows["plain"])] for backend, rows in found.items()]
    gap = np.mean(found["PostgreSQL"]["plain"].recall[10]) - np.mean(found["SQLite"]["plain"].recall[10])
    headers = ["archive", "R@1", "R@5", "R@10"] + [f"R@10 {name} ({c})" for c, name in CATEGORIES.items()]
    body = report.table([*headers, "p50 ms", "p95 ms"], rows)
    questions = len(found["SQLite"]["plain"].recall[10])
    body += (
        f"\n\n- {n} conversations, {questions:,} questions (categories 1-4 with evidence), every turn recorded"
        " through Engine.record on each backend (no embedder, no extractor: results come from raw_fallback);"
        f" recording took {ingest_seconds['SQLite']:.0f} s on SQLite, {ingest_seconds['PostgreSQL']:.0f} s on"
        " PostgreSQL (a throwaway cluster on a Unix socket, bench.pg_cluster)"
        f"\n- R@10 PostgreSQL minus SQLite: {gap:+.3f} (the PostgreSQL backend's acceptance bound: within 0.03)"
        "\n- latency: in-process recall() per question, the backends one after the other; load average at the"
        f" end {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a shared machine)"
    )
    command = "python -m bench.conversation_recall_fast --conversations 10 --plain-only --backends sqlite postgres"
    title = "LoCoMo fast evidence recall: PostgreSQL beside SQLite"
    report.write_section("conversation-recall-postgres", title, command, body)


def _row_cells(scores: Scores) -> list[object]:
    cells: list[object] = [float(np.mean(scores.recall[k])) for k in KS]
    cells += [float(np.mean(scores.by_category.get(c, [float("nan")]))) for c in CATEGORIES]
    return [*cells, *(f"{report.percentile(scores.seconds, q) * 1000:.1f}" for q in (50, 95))]


if __name__ == "__main__":
    main()
