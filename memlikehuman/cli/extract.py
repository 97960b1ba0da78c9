"""`memlikehuman extract [--follow]`: the background extraction worker without a server."""

from __future__ import annotations

import signal
import sys
from collections import Counter
from types import FrameType

import click

from ..engine import Engine, Outcome
from ..errors import MemLikeHumanError
from ..records import Scope
from .common import (
    EXIT_INTERRUPTED,
    EXIT_PROBLEM,
    db_option,
    fail,
    require_archive,
    require_extractor,
    settings_from,
    usage_error,
)
from .scopes import scope_options, some_scopes


@click.command()
@db_option
@scope_options("every scope")
@click.option("--all", "all_scopes", is_flag=True, help="Extract the events of every scope.")
@click.option("--follow", is_flag=True, help="Keep running and extract events as they are recorded (Ctrl-C stops).")
@click.pass_context
def extract(
    ctx: click.Context, db: str | None, persona_id: str | None, project_id: str | None, all_scopes: bool, follow: bool
) -> None:
    """Extract memories from pending events, as a server does in the background.

    For imports and host hooks, which record events without a server. Events are taken in recording
    order, one scope at a time; several `extract`/`serve` processes on one archive share the work
    (claims in the archive). Without --follow it stops when no pending event is left to try (events
    waiting out a retry backoff are waited for) and prints a summary; exit status 0 when nothing is
    pending or failed any more, 3 otherwise. With --follow it runs until Ctrl-C or SIGTERM, which
    leave the event in hand pending for the next run. Failed events are not tried: `retry` does that.
    """
    settings = settings_from(ctx, db)
    require_archive(settings)
    require_extractor(settings)
    persona_id, project_id = some_scopes(settings, persona_id, project_id, all_scopes)
    if project_id is not None:
        persona_id = persona_id or settings.persona_id
    elif persona_id is not None:
        usage_error("--persona needs a project: give --persona and --project together (or --all)")
    scope = Scope(persona_id, project_id) if persona_id and project_id else None
    counts: Counter[str] = Counter()
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        with Engine(settings) as engine:
            try:
                engine.drain(scope, lambda outcome: _report(counts, outcome), follow=follow)
            except KeyboardInterrupt:
                click.echo("\nstopped: the event in hand stays pending", err=True)
                _summary(counts)
                sys.exit(EXIT_INTERRUPTED)
            left = engine.retry_queue(persona_id, project_id)
    except MemLikeHumanError as exc:
        fail(exc)
    _summary(counts)
    if left:
        click.echo(f"{len(left)} event(s) still pending or failed (`memlikehuman retry` tries them again)")
        sys.exit(EXIT_PROBLEM)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _report(counts: Counter[str], outcome: Outcome) -> bool:
    counts[outcome.state] += 1
    if outcome.state != "complete" and outcome.error:
        click.echo(f"extraction {outcome.state}: {outcome.error}", err=True)
    return True


def _summary(counts: Counter[str]) -> None:
    # Attempts, not events: an event the provider failed for now is tried again after its backoff.
    click.echo(
        f"{sum(counts.values())} extraction attempt(s): {counts['complete']} complete,"
        f" {counts['pending']} pending, {counts['failed']} failed"
    )


COMMAND = extract
