"""`memlikehuman serve`: run the MCP server over stdio (server/run.py)."""

from __future__ import annotations

import sys

import click

from .common import db_option


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
    from ..server.run import main

    obj = ctx.obj or {}
    sys.exit(main(db if db is not None else obj.get("db"), verbose=bool(obj.get("verbose"))))


COMMAND = serve
