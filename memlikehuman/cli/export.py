"""`memlikehuman export`: the archive as JSON Lines."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import BinaryIO

import click

from .. import files
from ..engine import Engine
from ..errors import InvalidArgument, MemLikeHumanError
from .common import EXIT_ERROR, db_option, fail, progress_bar, project_value, require_archive, settings_from


@click.command()
@db_option
@click.option("--persona", "persona_id", default=None, help="Export only this persona (default: every persona).")
@click.option(
    "--project",
    "project_id",
    default=None,
    callback=project_value,
    help="Export only this project (`auto`: this directory's; default: every project).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to FILE instead of standard output (written to FILE.partial, renamed when complete).",
)
@click.pass_context
def export(
    ctx: click.Context, db: str | None, persona_id: str | None, project_id: str | None, output: Path | None
) -> None:
    """Write the archive as JSON Lines: events with cues, memories, corrections, checkpoints, personas.

    The first line is a header with the format version, the last line counts the records, so a
    truncated file is refused by `import`. Every record has a `type` field. Vectors are not
    exported (`reindex` computes them again). Memory use stays flat however large the archive is.

    \b
    Examples:
      memlikehuman export -o backup.jsonl
      memlikehuman export --persona alice --project garden > garden.jsonl
    """
    settings = settings_from(ctx, db)
    require_archive(settings)
    try:
        with Engine(settings) as engine:
            total = sum(engine.count_records(persona_id, project_id).values())
            if output is None:
                written = _write(engine, persona_id, project_id, sys.stdout.buffer, total)
            else:
                written = _write_file(engine, persona_id, project_id, output, total)
    except MemLikeHumanError as exc:
        fail(exc)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as other Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_ERROR)
    except OSError as exc:
        fail(InvalidArgument(f"cannot write the export ({exc}): check the output path and free disk space"))
    where = f" to {output}" if output else ""
    click.echo(f"exported {written:,} records{where}", err=True)


def _write_file(engine: Engine, persona_id: str | None, project_id: str | None, output: Path, total: int) -> int:
    """Write to a temporary name first: an interrupted export never leaves a file that looks complete."""
    partial = output.with_name(output.name + ".partial")
    try:
        if not files.create_private(partial):  # the export holds the archive's text: owner-only
            partial.chmod(files.FILE_MODE)
        with partial.open("wb") as stream:
            written = _write(engine, persona_id, project_id, stream, total)
            stream.flush()
            os.fsync(stream.fileno())
        partial.replace(output)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return written


def _write(engine: Engine, persona_id: str | None, project_id: str | None, stream: BinaryIO, total: int) -> int:
    """Stream the lines; return how many records (not counting the header and end lines) were written."""
    lines = 0
    with progress_bar("exporting", total + 2) as bar:
        for line in engine.export_lines(persona_id, project_id):
            stream.write(line.encode("utf-8"))
            lines += 1
            bar.advance(1)
    return lines - 2


COMMAND = export
