"""`memlikehuman uninstall HOST`: remove exactly what `install` added."""

from __future__ import annotations

from pathlib import Path

import click

from .common import db_option
from .install import HOST, PROJECT, run


@click.command()
@click.argument("host", type=HOST)
@click.option("--project", type=PROJECT, default=None, help="The project's config files, not the user's.")
@click.option("--dry-run", is_flag=True, help="Print the change as a diff; write nothing.")
@db_option
@click.pass_context
def uninstall(ctx: click.Context, host: str, project: Path | None, dry_run: bool, db: str | None) -> None:
    """Remove memlikehuman's MCP server entry and hooks from HOST's config files.

    Only what `install` added goes: other settings stay byte for byte, and files or sections that
    install created are removed again. Each changed file is backed up beside itself first. The block of
    a memory file the hooks kept (install --memory-file) is taken out; the file's other lines stay.
    """
    run(ctx, host, project, dry_run, remove=True, db=db)


COMMAND = uninstall
