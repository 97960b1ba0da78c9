"""The `memlikehuman` group, shared options and error handling."""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from .. import config
from ..errors import MemLikeHumanError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_PROBLEM = 0, 1, 2, 3


def db_option(fn: F) -> F:
    """--db PATH on any command (it overrides the group's --db and MEMLIKEHUMAN_DB)."""
    return click.option(
        "--db",
        "db",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Archive file (default: $MEMLIKEHUMAN_DB, else the user data directory).",
    )(fn)


def settings_from(ctx: click.Context, db: Path | None) -> config.Settings:
    """Resolve settings with the command's --db, else the group's."""
    chosen = db or (ctx.obj or {}).get("db")
    try:
        return config.load(chosen)
    except MemLikeHumanError as exc:
        fail(exc)
    raise AssertionError("unreachable")


def fail(exc: MemLikeHumanError) -> NoReturn:
    """Print a coded error on stderr and exit 1."""
    click.echo(f"error: {exc}", err=True)
    sys.exit(EXIT_ERROR)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@db_option
@click.option("-v", "--verbose", is_flag=True, help="Log debug details to stderr.")
@click.version_option(package_name="memlikehuman")
@click.pass_context
def main(ctx: click.Context, db: Path | None, verbose: bool) -> None:
    """MemLikeHuman: local long-term memory for LLM agents (an MCP server over stdio).

    `memlikehuman serve` is the command an MCP host runs. The others look after the archive.
    """
    ctx.obj = {"db": db}
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if verbose else logging.INFO,
        format="memlikehuman: %(message)s",
    )


# Each module defines COMMAND (a click command or group) and is added to `main`.
COMMAND_MODULES = ("serve", "retry", "persona")


def _register() -> None:
    for name in COMMAND_MODULES:
        main.add_command(importlib.import_module(f"{__package__}.{name}").COMMAND)


_register()
