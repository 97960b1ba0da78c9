"""The `memlikehuman` group: every command, added by name."""

from __future__ import annotations

import logging
import sys
from typing import Any

import apsw
import click

from .. import files
from ..errors import Unavailable, unreadable
from . import (
    doctor,
    export,
    extract,
    forget,
    hook,
    import_,
    install,
    persona,
    recall,
    reindex,
    retry,
    serve,
    stats,
    tombstones,
    ui,
    uninstall,
)
from .common import EXIT_INTERRUPTED, db_option, fail, say_notes


class Group(click.Group):
    """The command group; an archive SQLite cannot read ends any command with a coded error, not a traceback.
    A command that ends well says its notes last (common.say_after); one that fails prints only its error."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            result = super().invoke(ctx)
        except SystemExit as exc:
            if exc.code in (0, None):
                say_notes(ctx)
            raise
        except apsw.Error as exc:
            fail(Unavailable(unreadable(None, exc)))
        except (KeyboardInterrupt, click.Abort):
            # click would turn Ctrl-C (and Ctrl-C or Ctrl-D at a question) into "Aborted!" and exit 1; the
            # README promises the shell's 130.
            click.echo("\ninterrupted: work committed so far is kept", err=True)
            sys.exit(EXIT_INTERRUPTED)
        say_notes(ctx)
        return result


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@db_option
@click.option("-v", "--verbose", is_flag=True, help="Log debug details to stderr.")
@click.version_option(package_name="memlikehuman")
@click.pass_context
def main(ctx: click.Context, db: str | None, verbose: bool) -> None:
    """MemLikeHuman: local long-term memory for LLM agents (an MCP server over stdio).

    `memlikehuman serve` is the command an MCP host runs. The others look after the archive.
    """
    files.restrict_umask()  # `python -m memlikehuman` comes here without the console script (hosts/entry.py)
    ctx.obj = {"db": db, "verbose": verbose}
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if verbose else logging.INFO,
        format="memlikehuman: %(message)s",
    )
    if not verbose:
        # The HTTP clients log every request at INFO: noise between a command's own lines.
        for name in ("httpx", "httpx2", "openai", "httpcore"):
            logging.getLogger(name).setLevel(logging.WARNING)


# Each module defines COMMAND (a click command or group).
ADMIN = (serve, retry, extract, persona, export, import_, stats, doctor, reindex, recall, forget, ui, tombstones)
HOSTS = (hook, install, uninstall)  # the host adapters (docs/hosts.md)
for module in (*ADMIN, *HOSTS):
    main.add_command(module.COMMAND)
