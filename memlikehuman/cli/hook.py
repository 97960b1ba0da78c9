"""`memlikehuman hook HOST`: the command a host runs at its lifecycle events (see memlikehuman/hosts)."""

from __future__ import annotations

import sys

import click

from ..hosts import hook as hooks


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("host", required=False, default="")
@click.option("--event", default=None, help="The host's event name, for hosts whose payload names none.")
@click.option(
    "--db",
    default=None,
    metavar="FILE|URL",
    help="Archive file or postgresql:// URL (default: $MEMLIKEHUMAN_DB, else the user data directory).",
)
@click.option("--persona", default=None, help="Persona of the scope (default: $MEMLIKEHUMAN_PERSONA, else default).")
@click.option("--project", default=None, help="Project of the scope, or `auto` for the payload's directory.")
@click.option(
    "--record",
    default=None,
    help="What to record besides prompts: assistant,tools,subagents or none (default: $MEMLIKEHUMAN_HOOK_RECORD,"
    " else assistant).",
)
@click.option(
    "--memory-file",
    default=None,
    help="The host's memory file whose marked block session start and end keep current (install --memory-file).",
)
@click.pass_context
def hook(
    ctx: click.Context,
    host: str,
    event: str | None,
    db: str | None,
    persona: str | None,
    project: str | None,
    record: str | None,
    memory_file: str | None,
) -> None:
    """Handle one hook call of HOST (claude-code, codex, cursor, gemini): JSON on stdin, the host's answer on stdout.

    Records prompts and final replies, injects the resume context at session start and a few
    fast-recall hits at each prompt, writes an extractive checkpoint before compaction and at
    session end. Always exits 0: a failure goes to stderr and to `<archive>.hooks.log`.
    """
    group_db = (ctx.obj or {}).get("db")
    chosen = db if db is not None else (None if group_db is None else str(group_db))
    options = hooks.Options(host, event, chosen, persona, project, record, memory_file)
    sys.exit(hooks.run(options, sys.stdin, sys.stdout, sys.stderr))


COMMAND = hook
