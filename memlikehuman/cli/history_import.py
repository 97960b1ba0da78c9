"""`memlikehuman import` of Claude Code, ChatGPT and Claude.ai history (the format dispatch's other half)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from ..config import Settings
from ..engine import Engine
from ..errors import MemLikeHumanError
from ..hosts import history
from ..hosts.history import FORMATS, detect
from .common import echo_json, echo_table, fail, progress_bar

__all__ = ["FORMATS", "detect", "run"]


def run(
    settings: Settings,
    source: Path,
    fmt: str,
    dry_run: bool,
    as_json: bool,
    persona: str | None,
    project: str | None,
) -> None:
    """Read the whole file (any problem: exit 1 naming file and line, nothing written), then store it."""
    if dry_run and not settings.archive_exists():
        settings = dataclasses.replace(settings, db_path=Path(":memory:"))
    settings = dataclasses.replace(settings, extractor="none", embedder="none")
    try:
        messages, report = history.read(source, fmt)
        scope_project = project or (settings.project_id if settings.project_id != "default" else None)
        with Engine(settings) as engine, progress_bar(f"importing {fmt} history", len(messages)) as bar:
            engine.import_history(
                messages,
                report,
                persona or settings.persona_id,
                scope_project,
                dry_run=dry_run,
                progress=bar.advance,
            )
    except MemLikeHumanError as exc:
        fail(exc)
    skipped = dict(sorted(report.skipped.items()))
    if as_json:
        echo_json(
            {
                "format": fmt,
                "dry_run": dry_run,
                "conversations": report.conversations,
                "added": report.added,
                "unchanged": report.unchanged,
                "skipped": skipped,
            }
        )
        return
    rows = [("conversations", report.conversations), ("messages added" if not dry_run else "would add", report.added)]
    rows += [("already present", report.unchanged), *((f"skipped: {k}", v) for k, v in skipped.items())]
    echo_table(["what", "count"], rows)
    click.echo(
        "memories are extracted by `memlikehuman retry` (with an extractor configured); vectors by"
        " `memlikehuman reindex --missing`",
        err=True,
    )
