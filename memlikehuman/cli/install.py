"""`memlikehuman install HOST`: wire the MCP server (and the host's hooks) into its config files."""

from __future__ import annotations

import difflib
from pathlib import Path

import click

from ..errors import MemLikeHumanError
from ..hosts import install as installer
from ..hosts import memory_files
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
    memory_file: Path | None = None,
) -> None:
    """Plan, then print the diff (dry run) or write with backups; shared by install and uninstall."""
    settings = settings_from(ctx, db)
    with as_usage():  # what the command line asks for: a persona, --record, --extract-with for this host
        extraction = installer.extraction(host, extract_with)
        if not remove:
            installer.check_persona(persona or settings.persona_id)
        if memory_file is not None:
            memory_file = memory_files.for_install(host, memory_file, project, not no_hooks)
        wiring = installer.wiring(
            settings.archive, persona or settings.persona_id, project, record, extraction, memory_file
        )
    try:
        changes = installer.plan(host, wiring, project, remove=remove, hooks=not no_hooks)
        blocks = _blocks(changes, project) if remove else []
        if dry_run:
            _show_dry_run(changes, blocks)
            return
        for path, before, after in blocks:
            memory_files.write(path, before, after, project.absolute() if project else None)
        backups = installer.apply(changes, remove=remove)
    except (MemLikeHumanError, OSError) as exc:
        fail(exc if isinstance(exc, MemLikeHumanError) else MemLikeHumanError(f"cannot write the config: {exc}"))
    for change in changes:
        state = "changed" if change.changed else "unchanged"
        click.echo(f"{state}: {change.path}", err=True)
    for path, _, _ in blocks:
        click.echo(f"block removed: {path}", err=True)
    for backup in backups:
        click.echo(f"backup: {backup}", err=True)
    if not remove:
        click.echo(f"scope: persona {wiring.persona!r}, project {wiring.project!r}; archive {wiring.db}", err=True)
    if not remove and wiring.memory_file is not None:
        click.echo(f"memory file: {wiring.memory_file} (its block is written at each session start and end)", err=True)


def _blocks(changes: list[installer.Change], project: Path | None) -> list[tuple[Path, bytes, bytes]]:
    """The memory files our hooks name (install --memory-file) whose block uninstall takes out."""
    base = project.absolute() if project else None
    found = []
    for path in sorted({p for c in changes if c.before is not None for p in memory_files.named_in(c.before)}):
        before, after = memory_files.without_block(path, base)
        if before is not None and after is not None and after != before:
            found.append((path, before, after))
    return found


def _show_dry_run(changes: list[installer.Change], blocks: list[tuple[Path, bytes, bytes]]) -> None:
    for change in changes:
        click.echo(change.diff(), nl=False)
    for path, before, after in blocks:
        old = before.decode("utf-8", "replace").splitlines(keepends=True)
        new = after.decode("utf-8", "replace").splitlines(keepends=True)
        click.echo("".join(difflib.unified_diff(old, new, str(path), str(path))), nl=False)
    count = sum(c.changed for c in changes) + len(blocks)
    click.echo(f"dry run: {count} file(s) would change; nothing was written", err=True)


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
@click.option(
    "--memory-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Keep this memory file of the host (CLAUDE.md, AGENTS.md, GEMINI.md; relative: below the project) holding"
    " the scope's current memories in a marked block, written at each session start and end.",
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
    memory_file: Path | None,
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
    --memory-file PATH (claude-code, codex, gemini): the hooks of session start and end write the scope's
    current memories into a marked block of PATH; `uninstall` takes the block out again.
    """
    run(
        ctx, host, project, dry_run, remove=False, db=db, persona=persona, no_hooks=no_hooks, record=record,
        extract_with=extract_with, memory_file=memory_file,
    )  # fmt: skip


COMMAND = install
