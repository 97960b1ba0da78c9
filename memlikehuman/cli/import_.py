"""`memlikehuman import`: read a file written by `export`, all of it or nothing."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import click

from ..engine import Engine
from ..errors import ImportConflicts, InvalidArgument, MemLikeHumanError
from ..records import ImportReport
from . import history_import as history_cli
from . import memory_file_io
from .common import EXIT_ERROR, db_option, echo_json, echo_table, fail, progress_bar, settings_from


@click.command("import")
@db_option
@click.argument("source", type=click.Path(allow_dash=True, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Check the file and report what would change; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@click.option(
    "--embed",
    is_flag=True,
    help="Then embed what has no vector yet, with a progress bar (count, time left) on a terminal.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["export", *history_cli.FORMATS, *memory_file_io.IMPORT_FORMATS]),
    default=None,
    help="The kind of file, when it does not say (default: detected; a host's memory file by its name).",
)
@click.option("--persona", default=None, help="History imports: the persona (default: $MEMLIKEHUMAN_PERSONA).")
@click.option("--project", default=None, help="History imports: the project (default: the transcript's, else default).")
@click.pass_context
def import_(
    ctx: click.Context,
    db: str | None,
    source: Path,
    dry_run: bool,
    as_json: bool,
    embed: bool,
    fmt: str | None,
    persona: str | None,
    project: str | None,
) -> None:
    """Import SOURCE, a file written by `export` (`-` reads standard input): every record, or none.

    \b
    Also reads the history users already have (--format when the file does not say):
      claude-code  a Claude Code session transcript (JSONL) or a folder of them (~/.claude/projects)
      chatgpt      a ChatGPT data export's conversations.json (the current branch of each conversation)
      claude-ai    a Claude.ai data export's conversations.json
    Each message becomes an event with its original time and role, its conversation as the session;
    importing again adds nothing. Skipped parts (attachments, other branches, tool messages) are counted.

    \b
    And a host's memory file (--format when its name is not the host's own):
      claude-md     CLAUDE.md, or Claude Code's auto memory MEMORY.md
      agents-md     AGENTS.md (Codex)
      gemini-md     GEMINI.md (Gemini CLI)
      cursor-rules  a Cursor rule (.mdc) or a folder of them (.cursor/rules)
    Each list item or paragraph becomes a reference event (role user) under its headings, its file and
    lines as source, in the scope of --persona and --project (default: the configured one, else this
    folder's project); importing again adds nothing, a changed item is a new event, and the items no
    longer in the file are withdrawn (forgotten; docs/hosts.md, "The hosts' own memory files").

    Records already in the archive with identical content are skipped, so importing a file twice
    changes nothing. Records forgotten with memory_forget (and what belongs to them) are skipped and
    counted: an older export does not bring them back. If any record conflicts with the archive (the
    same event ID with another payload or scope, the same memory ID with other content, ...), nothing
    is imported and the conflicts are listed. Imported events get new local sequence numbers, in the order of the file
    (their original recording order). Vectors are not part of the file: with --embed they are computed
    right after the import (stderr shows how many are left and the time that takes), else a running
    server computes them in the background, or `memlikehuman reindex --missing` does. The import
    holds the archive's write lock until it ends.

    Exit status: 0 imported (or a clean dry run), 1 conflicts or an invalid file (nothing written).
    """
    settings = settings_from(ctx, db)
    try:
        chosen = fmt or (
            "export" if str(source) == "-" else memory_file_io.detect(source) or history_cli.detect(source)
        )
    except (MemLikeHumanError, OSError) as exc:
        fail(exc if isinstance(exc, MemLikeHumanError) else InvalidArgument(f"cannot read {source}: {exc}"))
    if chosen != "export":
        if chosen in memory_file_io.IMPORT_FORMATS:
            scope = memory_file_io.scope_of(settings, persona, project)
            memory_file_io.import_file(settings, source, chosen, dry_run, as_json, scope)
        else:
            history_cli.run(settings, source, chosen, dry_run, as_json, persona, project)
        if embed and not dry_run:  # the history is stored without an embedder: vectors now, as asked
            try:
                with Engine(settings) as engine:
                    _vectors_after(engine, embed)
            except MemLikeHumanError as exc:
                fail(exc)
        return
    if dry_run and not settings.archive_exists():
        # Compared with an empty archive held in memory: a dry run creates no file.
        settings = dataclasses.replace(settings, db_path=Path(":memory:"))
    try:
        # The source is opened first: a mistyped file name must not leave a new empty archive behind.
        with _opened(source) as (stream, size), Engine(settings) as engine:
            engine.prepare_import()
            with progress_bar("importing", size) as bar:
                report = engine.import_lines(stream, dry_run=dry_run, progress=bar.advance)
            _show(report, as_json)
            if report.written:
                _vectors_after(engine, embed)
    except ImportConflicts as exc:
        _show(exc.report, as_json)
        _list_conflicts(exc.report)
        sys.exit(EXIT_ERROR)
    except MemLikeHumanError as exc:
        fail(exc)


def _vectors_after(engine: Engine, embed: bool) -> None:
    """The vector step after a committed import: its failure is reported, and the exit stays 0."""
    try:
        _vectors(engine, embed)
    except MemLikeHumanError as exc:
        click.echo(
            f"imported; vectors not computed ({exc}): `memlikehuman reindex --missing` computes them later", err=True
        )


def _vectors(engine: Engine, embed: bool) -> None:
    """Say how many imported records wait for a vector; with ``embed``, embed them now."""
    if engine.embedder is None:
        return
    missing = engine.stats().totals().vectors_missing or 0
    if not missing:
        return
    if not embed:
        click.echo(
            f"vectors: {missing:,} events and memories have none yet ({engine.embedder.model_id}): a running server"
            " embeds them in the background; `memlikehuman reindex --missing` or `import --embed` does it now",
            err=True,
        )
        return
    with progress_bar("embedding", missing) as bar:
        engine.embed_missing(bar.report)  # the indexer thread the import woke may take some meanwhile
    done = missing - (engine.stats().totals().vectors_missing or 0)
    click.echo(f"vectors: {done:,} events and memories embedded with {engine.embedder.model_id}", err=True)


@contextmanager
def _opened(source: Path) -> Iterator[tuple[BinaryIO, int | None]]:
    if str(source) == "-":
        yield sys.stdin.buffer, None
        return
    try:
        stream = source.open("rb")
    except OSError as exc:
        raise InvalidArgument(f"cannot read {source} ({exc.strerror}): check the path") from None
    with stream:
        yield stream, source.stat().st_size


def _show(report: ImportReport, as_json: bool) -> None:
    if as_json:
        echo_json(
            {
                "dry_run": report.dry_run,
                "written": report.written,
                "added": dict(report.added),
                "unchanged": dict(report.unchanged),
                "forgotten": dict(report.forgotten),
                "conflict_count": report.conflict_count,
                "conflicts": list(report.conflicts),
            }
        )
        return
    added = "would add" if report.dry_run or report.conflict_count else "added"
    rows = [(kind, report.added[kind], report.unchanged[kind]) for kind in report.added]
    echo_table(["record", added, "already present"], rows)
    if report.forgotten:
        skipped = ", ".join(f"{n:,} {kind}" for kind, n in report.forgotten.items())
        click.echo(f"skipped as forgotten (memory_forget; `memlikehuman tombstones`): {skipped}", err=True)
    if report.written:
        click.echo(f"imported {sum(report.added.values()):,} new records", err=True)
    elif report.dry_run and not report.conflict_count:
        click.echo("dry run: nothing was written; the import would succeed", err=True)


def _list_conflicts(report: ImportReport) -> None:
    click.echo(f"error: {report.conflict_count:,} record(s) conflict with the archive; nothing was imported:", err=True)
    for conflict in report.conflicts:
        click.echo(f"  {conflict}", err=True)
    if report.conflict_count > len(report.conflicts):
        click.echo(f"  ... and {report.conflict_count - len(report.conflicts):,} more", err=True)


COMMAND = import_
