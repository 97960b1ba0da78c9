"""`memlikehuman export`: the archive as JSON Lines."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import BinaryIO

import click

from .. import files
from ..engine import Engine
from ..errors import InvalidArgument, MemLikeHumanError
from . import memory_file_io
from .common import EXIT_ERROR, db_option, fail, progress_bar, require_archive, settings_from
from .scopes import project_value, some_scopes


@click.command()
@db_option
@click.option("--persona", "persona_id", default=None, help="Export only this persona (default: every persona).")
@click.option(
    "--project",
    "project_id",
    default=None,
    callback=project_value,
    help="Export only this project (`auto`: this folder's; default: $MEMLIKEHUMAN_PROJECT, else this folder's,"
    " else every project).",
)
@click.option("--all", "all_scopes", is_flag=True, help="The whole archive, also inside a project folder.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to FILE instead of standard output (written to FILE.partial, renamed when complete).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(memory_file_io.EXPORT_FORMATS),
    default=None,
    help="Write the scope's current memories into a marked block of a host's memory file (-o FILE) instead.",
)
@click.pass_context
def export(
    ctx: click.Context,
    db: str | None,
    persona_id: str | None,
    project_id: str | None,
    all_scopes: bool,
    output: Path | None,
    fmt: str | None,
) -> None:
    """Write the archive as JSON Lines: events with cues, memories, corrections, checkpoints, personas.

    The first line is a header with the format version, the last line counts the records, so a
    truncated file is refused by `import`. Every record has a `type` field. Vectors are not
    exported (`reindex` computes them again). Memory use stays flat however large the archive is.
    Inside a project folder it exports that project (as the hooks name it) unless --all or --project
    says otherwise; elsewhere, the whole archive.

    With --format claude-md|agents-md|gemini-md, the current memories of one scope (--persona and
    --project, default: the configured one, else this folder's project), one line each, newest first,
    go into a marked block of FILE instead; the lines outside it stay byte for byte, the file stays
    within the host's limit, and an export that changes nothing writes nothing (docs/hosts.md).

    \b
    Examples:
      memlikehuman export --all -o backup.jsonl
      memlikehuman export --persona alice --project garden > garden.jsonl
      memlikehuman export --format claude-md --project auto -o CLAUDE.md
    """
    settings = settings_from(ctx, db)
    require_archive(settings)
    if fmt is not None:
        memory_file_io.export_file(settings, fmt, output, memory_file_io.scope_of(settings, persona_id, project_id))
        return
    persona_id, project_id = some_scopes(settings, persona_id, project_id, all_scopes)
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
    scope = "".join(
        f" of {name} {value!r}" for name, value in (("persona", persona_id), ("project", project_id)) if value
    )
    click.echo(f"exported {written:,} records{scope}{where}", err=True)


def _write_file(engine: Engine, persona_id: str | None, project_id: str | None, output: Path, total: int) -> int:
    """Write to FILE.partial first, then rename it to FILE: an interrupted export never leaves a file that
    looks complete. FILE.partial is created new (0600) and never through a link; the rename replaces FILE
    itself, so a link at FILE is replaced and its target left alone."""
    partial = output.with_name(output.name + ".partial")
    fd = _create_partial(partial)
    try:
        with os.fdopen(fd, "wb") as stream:
            written = _write(engine, persona_id, project_id, stream, total)
            stream.flush()
            os.fsync(stream.fileno())
            if not os.path.samestat(os.fstat(stream.fileno()), os.lstat(partial)):
                raise InvalidArgument(f"{partial} was replaced while the export was written: export again")
        partial.replace(output)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return written


def _create_partial(partial: Path) -> int:
    """A descriptor of FILE.partial, a new 0600 file. One of ours left by an interrupted export is replaced;
    a link, or a file of another user, is refused (InvalidArgument)."""
    for _ in range(2):
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, files.FILE_MODE)
        except FileExistsError:
            found = os.lstat(partial)
            if not stat.S_ISREG(found.st_mode) or found.st_uid != os.getuid():
                what = "a symbolic link" if stat.S_ISLNK(found.st_mode) else "not a file of yours"
                raise InvalidArgument(
                    f"{partial} is {what}; export writes FILE.partial only as a new file of its own:"
                    " remove it and run export again"
                ) from None
            partial.unlink()  # left by an interrupted export of ours
            continue
        os.fchmod(fd, files.FILE_MODE)  # os.open's mode passes through the umask
        return fd
    raise InvalidArgument(f"{partial} keeps being created by another process: export to another name")


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
