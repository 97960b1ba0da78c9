"""`memlikehuman serve`: run the MCP server over stdio."""

from __future__ import annotations

import contextlib
import logging
import sys

import click

from ..config import Settings
from ..engine import open_archive
from ..errors import MemLikeHumanError
from .common import db_option, fail, settings_from


@click.command()
@db_option
@click.pass_context
def serve(ctx: click.Context, db: str | None) -> None:
    """Run the MCP server on stdin/stdout (the command an MCP host starts).

    Standard output carries JSON-RPC only; logs go to stderr: warnings and failures always, the
    start-up lines (the archive, the providers) only at a terminal or with -v.
    It opens no network port; with an embedder it answers the prompt hooks of the same archive on a
    private Unix socket (docs/hosts.md, "What the prompt hook injects").
    """
    settings = settings_from(ctx, db)
    if settings.extracting:
        # A host CLI that an extraction runs headless started its MCP servers after all: ours must not
        # record that run's prompt or start another run (providers/command.py).
        click.echo("memlikehuman: not serving inside an extraction run (MEMLIKEHUMAN_EXTRACTING is set)", err=True)
        sys.exit(1)
    # A host keeps its servers' stderr as an error log (Claude Code marks each line [ERROR]): the start-up
    # lines are for a person at a terminal, or for -v; warnings and failures are always written.
    watched = sys.stderr.isatty() or bool((ctx.obj or {}).get("verbose"))
    if not watched:
        logging.getLogger("memlikehuman").setLevel(logging.WARNING)
        logging.getLogger("mcp").setLevel(logging.ERROR)  # a call the agent got wrong is its result, not our error
    _check_archive(settings)
    # A dependency that prints on import would corrupt the JSON-RPC stream: send it to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        from ..server import build_server

        server = build_server(settings)
    if watched:
        click.echo(
            f"memlikehuman: archive {settings.archive_label}; extractor {settings.extractor}, embedder"
            f" {settings.embedder}; waiting for an MCP host on stdio (Ctrl-C to stop)",
            err=True,
        )
    server.stopping.install()  # SIGINT and SIGTERM: the socket removed, the archive closed, exit (server/app.py)
    with contextlib.suppress(KeyboardInterrupt):
        server.run("stdio")


def _check_archive(settings: Settings) -> None:
    """Open and migrate the archive once before serving, so a bad --db fails here with a clear message."""
    try:
        open_archive(settings)
    except MemLikeHumanError as exc:
        fail(exc)


COMMAND = serve
