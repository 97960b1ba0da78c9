"""`memlikehuman forget ID`: memory_forget at a terminal, after the preview the UI shows."""

from __future__ import annotations

import functools

import click

from .. import validate
from ..engine import Engine
from ..errors import MemLikeHumanError, NotFound
from ..records import Preview, Scope
from ..shapes import forget_shape
from .columns import flat, pack, width, wrap
from .common import as_usage, can_ask, confirmed, db_option, echo_json, fail, require_archive, settings_from
from .scopes import check_scope, scope_options

INDENT = "    "


@click.command()
@db_option
@click.argument("record_id")
@scope_options(
    persona="Only a record of this persona (default: the persona of the record's ID).",
    project="Only a record of this project (`auto`: this folder's; default: the project of the record's ID).",
)
@click.option("--also", is_flag=True, help="Also delete the other records that still say it (still_said_by).")
@click.option("--yes", is_flag=True, help="Do not ask (needed without a terminal); the preview is not shown.")
@click.option("--json", "as_json", is_flag=True, help="Print the memory_forget tool's output fields as JSON.")
@click.pass_context
def forget(
    ctx: click.Context,
    db: str | None,
    record_id: str,
    persona_id: str | None,
    project_id: str | None,
    also: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Forget RECORD_ID (an event, a correction or a memory ID) for good, as memory_forget does.

    An ID names one record in the whole archive: forget finds its scope (--persona and --project only
    check that it is that one). It shows first what goes (the whole source event, its corrections, the
    memories made from them), the memories that stay because another event states them too, the
    checkpoints it invalidates and the other records that still say it, and asks; --yes does not ask.
    Only what the preview showed is deleted: when the archive changed meanwhile, nothing is (exit 1,
    run it again). --also deletes the records that still say it too. Then prints what was deleted.
    Without a terminal it needs --yes.
    """
    with as_usage():
        validate.identifier(record_id, "record_id", max_len=256)
    can_ask(yes)
    check_scope(persona_id, project_id)
    settings = settings_from(ctx, db)
    require_archive(settings)
    try:
        with Engine(settings) as engine:
            scope = _scope(engine, record_id, persona_id, project_id)
            preview = None
            if not yes:
                preview = engine.forget_preview(scope, record_id, also=also)
                _show(engine, scope, preview, also)
            if not confirmed(f"Forget {record_id} and what the preview lists?", yes):
                click.echo("nothing was forgotten", err=True)
                return
            result = forget_shape(engine.forget(scope, record_id, preview, also=also))
    except MemLikeHumanError as exc:
        fail(exc)
    if as_json:
        echo_json(result)
        return
    room = width()
    click.echo(
        f"forgot {_count(len(result['deleted_event_ids']), 'event')} and"
        f" {_count(len(result['deleted_memory_ids']), 'memory', 'memories')};"
        f" {_count(result['invalidated_checkpoints'], 'checkpoint')} invalidated"
    )
    for label, ids in (("events", result["deleted_event_ids"]), ("memories", result["deleted_memory_ids"])):
        _ids(f"deleted {label}:", ids, room)
    _ids("still said by (forget them too: --also):", result["still_said_by"], room)
    for warning in result["warnings"]:
        click.echo(f"warning: {warning}", err=True)


def _scope(engine: Engine, record_id: str, persona_id: str | None, project_id: str | None) -> Scope:
    """The scope that holds the record; NotFound when none does, or not the one --persona/--project name."""
    found = engine.scope_of(record_id)
    if found is None:
        raise NotFound(f"no record {record_id!r} in the archive: check the ID (recall and the UI show IDs)")
    if (persona_id or found.persona_id, project_id or found.project_id) != (found.persona_id, found.project_id):
        raise NotFound(
            f"{record_id!r} is in persona {found.persona_id!r}, project {found.project_id!r}, not in the scope"
            " given: pass that scope, or leave out --persona and --project"
        )
    return found


def _show(engine: Engine, scope: Scope, preview: Preview, also: bool) -> None:
    """The preview on stderr, as the UI's confirm page lists it, each record with its text cut to a line."""
    room = width()
    say = functools.partial(click.echo, err=True)
    say(f"Forgetting {preview.record_id} of persona {scope.persona_id!r}, project {scope.project_id!r} deletes,")
    say("with no readable trace left in the archive file (earlier copies and backups keep it):")
    say(f"events ({len(preview.event_ids)}): the source event and every connected correction")
    for event_id in preview.event_ids:
        _record(engine, scope, event_id, room)
    say(f"memories ({len(preview.memory_ids)}) made from them")
    for memory_id in preview.memory_ids:
        _record(engine, scope, memory_id, room)
    if preview.requoted:
        say(f"memories that stay ({len(preview.requoted)}): another event states them too; quoted from it now")
        for memory_id, event_id in preview.requoted:
            say("\n".join(pack([memory_id, f"now quoted from {event_id}"], room, "  ", INDENT)))
    say(f"checkpoints invalidated ({len(preview.checkpoint_ids)}): every valid one of this scope, its state erased")
    if preview.checkpoint_ids:
        say("\n".join(pack(preview.checkpoint_ids, room, "  ", "  ")))
    if preview.still_said_by:
        what = "they go too (--also)" if also else "they stay unless you forget them too (--also)"
        say(f"still said by ({len(preview.still_said_by)}): other records that state it too; {what}")
        for other in preview.still_said_by:
            _record(engine, scope, other, room)


def _record(engine: Engine, scope: Scope, record_id: str, room: int) -> None:
    """One record of the preview: its ID whole, what it is, and its text cut to one line."""
    try:
        found = engine.read(scope, record_id, max_chars=room * 2)
    except NotFound:  # gone since the preview was read: the forget itself will say so
        click.echo(f"  {record_id}", err=True)
        return
    if found.memory is not None:
        memory = found.memory
        head, text = [memory.memory_id, f"{memory.kind}, {memory.basis}"], memory.content
    else:
        event = found.event
        head = [event.event_id, f"{event.source} ({event.role}) {event.occurred_at[:16].replace('T', ' ')}"]
        head.append(_count(len(event.text), "character"))
        text = found.page.text
    click.echo("\n".join(pack(head, room, "  ", INDENT)), err=True)
    click.echo(INDENT + wrap(flat(text), room - len(INDENT), lines=1)[0], err=True)


def _ids(label: str, ids: list[str], room: int) -> None:
    if ids:
        click.echo("\n".join(pack([label, *ids], room, "", "  ", " ")))


def _count(number: int, noun: str, plural: str | None = None) -> str:
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"


COMMAND = forget
