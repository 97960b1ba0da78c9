"""`import` and `export` of a host's memory file (`--format claude-md|agents-md|gemini-md|cursor-rules`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from ..config import Settings
from ..engine import Engine
from ..errors import InvalidArgument, MemLikeHumanError
from ..hosts import memory_files, memory_import
from ..records import Scope
from . import scopes
from .common import echo_json, echo_table, fail, progress_bar

IMPORT_FORMATS = memory_import.FORMATS
detect = memory_import.detect
EXPORT_FORMATS = memory_files.FORMATS


def scope_of(settings: Settings, persona: str | None, project: str | None) -> Scope:
    """The one scope a memory file is read into or written from: as given, else the configured one, else
    this folder's project (cli/scopes.py, as recall's)."""
    return scopes.one_scope(settings, persona, project)


def import_file(settings: Settings, source: Path, fmt: str, dry_run: bool, as_json: bool, scope: Scope) -> None:
    """Read every item first (any problem: exit 1 naming file and line, nothing written), then store them
    and withdraw the file's items that are gone from it."""
    if dry_run and not settings.archive_exists():
        settings = dataclasses.replace(settings, db_path=Path(":memory:"))
    settings = dataclasses.replace(settings, extractor="none", embedder="none")
    try:
        read = memory_import.read(source, fmt, scope)
        count = sum(len(f.messages) for f in read)
        with Engine(settings) as engine, progress_bar(f"importing {fmt}", count) as bar:
            report = memory_import.store(engine, read, scope, dry_run=dry_run, progress=bar.advance)
    except MemLikeHumanError as exc:
        fail(exc)
    skipped = dict(sorted(report.skipped.items()))
    if as_json:
        echo_json(
            {
                "format": fmt, "dry_run": dry_run, "files": [str(f.path) for f in read],
                "persona_id": scope.persona_id, "project_id": scope.project_id, "items": count,
                "added": report.added, "unchanged": report.unchanged, "withdrawn": report.withdrawn,
                "skipped": skipped,
            }
        )  # fmt: skip
        return
    added = "items added" if not dry_run else "would add"
    rows = [("files", len(read)), ("items", count), (added, report.added), ("already present", report.unchanged)]
    rows += [("withdrawn (no longer in the file)", report.withdrawn)]
    rows += [(f"skipped: {k}", v) for k, v in skipped.items()]
    echo_table(["what", "count"], rows)
    click.echo(f"scope: persona {scope.persona_id!r}, project {scope.project_id!r}", err=True)


def export_file(settings: Settings, fmt: str, output: Path | None, scope: Scope) -> None:
    """Write the scope's current memories into the marked block of OUTPUT (required)."""
    if output is None:
        fail(InvalidArgument(f"export --format {fmt} writes into a file: name it with -o FILE"))
    try:
        with Engine(dataclasses.replace(settings, extractor="none", embedder="none")) as engine:
            here = memory_files.absolute(Path.cwd())  # below it, no folder of FILE is followed through a link
            done = memory_files.export(engine, scope, fmt, memory_files.absolute(output), here)
    except MemLikeHumanError as exc:
        fail(exc)
    what = "written" if done.changed else "unchanged"
    more = f", {done.left_out:,} left out (no room within the host's limit)" if done.left_out else ""
    click.echo(f"{what}: {done.path}: {done.shown:,} memories in its block{more}", err=True)
