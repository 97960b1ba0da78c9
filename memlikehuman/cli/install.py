"""`memlikehuman install HOST`: wire the MCP server (and the host's hooks) into its config files."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import MemLikeHumanError
from ..hosts import install as installer
from .common import as_usage, db_option, fail, settings_from

HOST = click.Choice(installer.HOSTS)
PROJECT = click.Path(file_okay=False, exists=True, path_type=Path)


def run(
    ctx: click.Context,
    host: str,
    project: Path | None,
    dry_run: bool,
    *,
    remove: bool,
    db: str | None,
    persona: str | None = None,
    no_hooks: bool = False,
    record: str | None = None,
    extract_with: str | None = None,
) -> None:
    """Plan, then print the diff (dry run) or write with backups; shared by install and uninstall."""
    settings = settings_from(ctx, db)
    with as_usage():  # what the command line asks for: a persona, --record, --extract-with for this host
        extraction = installer.extraction(host, extract_with)
        if not remove:
            installer.check_persona(persona or settings.persona_id)
        wiring = installer.wiring(settings.archive, persona or settings.persona_id, project, record, extraction)
    try:
        changes = installer.plan(host, wiring, project, remove=remove, hooks=not no_hooks)
        if dry_run:
            for change in changes:
                click.echo(change.diff(), nl=False)
            count = sum(c.changed for c in changes)
            click.echo(f"dry run: {count} file(s) would change; nothing was written", err=True)
            return
        backups = installer.apply(changes, remove=remove)
    except (MemLikeHumanError, OSError) as exc:
        fail(exc if isinstance(exc, MemLikeHumanError) else MemLikeHumanError(f"cannot write the config: {exc}"))
    for change in changes:
        state = "changed" if change.changed else "unchanged"
        click.echo(f"{state}: {change.path}", err=True)
    for backup in backups:
        click.echo(f"backup: {backup}", err=True)
    if not remove:
        click.echo(f"scope: persona {wiring.persona!r}, project {wiring.project!r}; archive {wiring.db}", err=True)


@click.command()
@click.argument("host", type=HOST)
@click.option("--project", type=PROJECT, default=None, help="Wire this project's config files, not the user's.")
@click.option("--persona", default=None, help="Persona of the scope (default: $MEMLIKEHUMAN_PERSONA, else default).")
@click.option("--no-hooks", is_flag=True, help="Only the MCP server entry; no hooks.")
@click.option(
    "--record",
    default=None,
    help="What the hooks record besides prompts: a comma-separated list of assistant (final replies),"
    " tools, subagents, or none (default: assistant, or $MEMLIKEHUMAN_HOOK_RECORD when the hooks run).",
)
@click.option(
    "--extract-with",
    type=click.Choice(["host", "none"]),
    default=None,
    help="host: the host's own model makes the memories (its CLI run headless, or MCP sampling in VS Code;"
    " each extraction is a model call on your subscription or key: docs/hosts.md). Default: none.",
)
@click.option("--dry-run", is_flag=True, help="Print the change as a diff; write nothing.")
@db_option
@click.pass_context
def install(
    ctx: click.Context,
    host: str,
    project: Path | None,
    persona: str | None,
    no_hooks: bool,
    record: str | None,
    extract_with: str | None,
    dry_run: bool,
    db: str | None,
) -> None:
    """Add memlikehuman to HOST's config: the MCP server entry and, where the host has them, its hooks.

    \b
    HOST: claude-code, claude-desktop, codex, cursor, vscode, gemini. Every other setting in those
    files stays as it was, byte for byte; each file is backed up beside itself first. Running it
    twice changes nothing the second time. The scope is persona `default` (or --persona) and, with
    --project DIR, the stable name of DIR; without it `auto` (the project directory the host runs in).
    --extract-with host also sets the server entry's extractor to the host's own model.
    """
    run(
        ctx, host, project, dry_run, remove=False, db=db, persona=persona, no_hooks=no_hooks, record=record,
        extract_with=extract_with,
    )  # fmt: skip


COMMAND = install
