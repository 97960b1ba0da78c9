"""`memlikehuman persona show|set|edit`: the core persona, edited only here (never through MCP)."""

from __future__ import annotations

import sys
from typing import BinaryIO

import click

from .. import validate
from ..engine import Engine
from ..errors import InvalidArgument, MemLikeHumanError
from ..records import PersonaVersion
from .common import EXIT_OK, db_option, fail, require_archive, settings_from
from .scopes import check_scope

persona_option = click.option(
    "--persona",
    "persona_id",
    default="default",
    show_default=True,
    help="The persona_id whose core persona this is (the same ID hosts pass to the tools).",
)


def _engine(ctx: click.Context, persona_id: str, db: str | None, *, existing: bool = False) -> Engine:
    """The engine on the archive; exit 2 for a malformed --persona, and with ``existing`` exit 1 instead of
    creating a missing archive."""
    check_scope(persona_id, None)
    settings = settings_from(ctx, db)
    if existing:
        require_archive(settings)
    try:
        return Engine(settings)
    except MemLikeHumanError as exc:
        fail(exc)


def _describe(version: PersonaVersion) -> str:
    return f"persona {version.persona_id}, version {version.version}, set {version.created_at}"


@click.group()
def persona() -> None:
    """Show or edit a persona's core persona; every change is kept as a new version."""


@persona.command()
@persona_option
@click.option("--history", is_flag=True, help="Show every version, newest first.")
@db_option
@click.pass_context
def show(ctx: click.Context, persona_id: str, history: bool, db: str | None) -> None:
    """Print the current core persona (or all versions with --history)."""
    with _engine(ctx, persona_id, db, existing=True) as engine:
        try:
            versions = engine.persona_history(persona_id)
        except MemLikeHumanError as exc:
            fail(exc)
    if not versions:
        click.echo(f"no core persona is set for persona {persona_id}: use `memlikehuman persona set`", err=True)
        sys.exit(EXIT_OK)
    for version in versions if history else versions[:1]:
        click.echo(f"# {_describe(version)}")
        click.echo(version.text)
        if history:
            click.echo()


def _store(ctx: click.Context, db: str | None, persona_id: str, text: str) -> None:
    check_scope(persona_id, None)
    try:
        validate.persona_text(persona_id, text)  # before the archive is opened: a refused text creates none
    except MemLikeHumanError as exc:
        fail(exc)
    with _engine(ctx, persona_id, db) as engine:
        try:
            version, changed = engine.set_persona(persona_id, text)
        except MemLikeHumanError as exc:
            fail(exc)
    if changed:
        click.echo(f"saved {_describe(version)}", err=True)
    else:
        click.echo(f"unchanged: {_describe(version)} already has this text", err=True)


@persona.command(name="set")
@persona_option
@click.argument("source", type=click.File("rb"), default="-")
@db_option
@click.pass_context
def set_(ctx: click.Context, persona_id: str, source: BinaryIO, db: str | None) -> None:
    """Set the core persona from a UTF-8 file (SOURCE) or standard input (SOURCE omitted or '-')."""
    _store(ctx, db, persona_id, _decoded(source.read()))


def _decoded(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        fail(InvalidArgument(f"the persona text is not UTF-8 (byte {exc.start}): save it as UTF-8 and set it again"))


@persona.command()
@persona_option
@db_option
@click.pass_context
def edit(ctx: click.Context, persona_id: str, db: str | None) -> None:
    """Edit the core persona in $EDITOR (VISUAL/EDITOR); saving a change stores a new version."""
    with _engine(ctx, persona_id, db) as engine:
        try:
            current = engine.persona(persona_id)
        except MemLikeHumanError as exc:
            fail(exc)
    try:
        edited = click.edit((current.text if current else "") + "\n", extension=".md", require_save=True)
    except UnicodeDecodeError as exc:  # the editor saved another encoding
        fail(InvalidArgument(f"the edited text is not UTF-8 (byte {exc.start}): nothing was saved"))
    if edited is None:
        click.echo("unchanged: the editor was closed without saving", err=True)
        return
    _store(ctx, db, persona_id, edited)


COMMAND = persona
