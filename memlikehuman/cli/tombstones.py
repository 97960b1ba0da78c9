"""`memlikehuman tombstones`: the keyed digests that keep forgotten records out, counted or dropped."""

from __future__ import annotations

import click

from ..engine import Engine
from ..errors import MemLikeHumanError
from .common import confirmed, db_option, echo_json, fail, require_archive, settings_from

GIVES_UP = (
    "a forgotten record that a history, an older export or a host still holds can then be stored again:"
    " `import`, a re-sent hook or an agent's retry brings it back"
)


@click.command()
@db_option
@click.option("--drop", is_flag=True, help="Delete every tombstone and their key (asks first unless --yes).")
@click.option("--yes", is_flag=True, help="With --drop: do not ask (needed without a terminal).")
@click.option("--json", "as_json", is_flag=True, help="Print the count as JSON on stdout.")
@click.pass_context
def tombstones(ctx: click.Context, db: str | None, drop: bool, yes: bool, as_json: bool) -> None:
    """Count the tombstones of forgotten records, or drop them all (--drop).

    \b
    Each forget keeps, per deleted event and memory, an HMAC-SHA256 of its ID under a random key of
    this archive: no text, no digest of a text. Every path that stores events asks them first, so a
    forgotten record never comes back through `import`, a host re-sending a hook or a retry. Whoever
    can read the whole archive holds the key too and can test a guessed ID (a hook's event ID holds a
    digest of its text): drop them when that matters more to you. Dropping gives up the guarantee:
    a forgotten record that a history, an older export or a host still holds can be stored again.
    """
    settings = settings_from(ctx, db)
    require_archive(settings)
    try:
        with Engine(settings) as engine:
            kept = engine.tombstone_count()
            if drop and confirmed(f"Drop {kept:,} tombstones? Then {GIVES_UP}", yes):
                dropped = engine.drop_tombstones()
                click.echo(f"dropped {dropped:,} tombstones; {GIVES_UP}", err=True)
                kept = 0
    except MemLikeHumanError as exc:
        fail(exc)
    if as_json:
        echo_json({"tombstones": kept})
    else:
        click.echo(f"{kept:,} forgotten records are kept out by their tombstones")


COMMAND = tombstones
