"""`memlikehuman retry`: run extraction again for pending and failed events."""

from __future__ import annotations

import sys
from collections import Counter

import click

from ..engine import Engine, Outcome
from ..errors import MemLikeHumanError
from ..records import Scope
from .common import (
    EXIT_PROBLEM,
    db_option,
    fail,
    progress_bar,
    require_archive,
    require_extractor,
    settings_from,
    usage_error,
)
from .scopes import EVERY, one_scope, scope_options

# A provider that is down fails every event the same way: stop instead of waiting out N timeouts.
GIVE_UP_AFTER = 3


@click.command()
@db_option
@scope_options()
@click.option("--all", "all_scopes", is_flag=True, help="Retry the events of every scope.")
@click.pass_context
def retry(ctx: click.Context, db: str | None, persona_id: str | None, project_id: str | None, all_scopes: bool) -> None:
    """Extract memories again from every pending or failed event of one scope, or of all.

    Shows progress on stderr and prints a summary. Stops early after 3 events in a row could not reach
    the extractor. Exit status 0 when every event is complete, 3 when some are still pending or failed.
    """
    if all_scopes and (persona_id or project_id):
        usage_error("use either --all or --persona/--project, not both")
    settings = settings_from(ctx, db)
    require_archive(settings)
    require_extractor(settings)
    scope = None if all_scopes else one_scope(settings, persona_id, project_id, EVERY)
    try:
        with Engine(settings) as engine:
            counts, memories, stopped = _retry_all(engine, scope)
    except MemLikeHumanError as exc:
        fail(exc)
    where = "all scopes" if scope is None else f"persona {scope.persona_id!r}, project {scope.project_id!r}"
    _summary(counts, memories, stopped, where)
    if counts["pending"] or counts["failed"] or stopped:
        sys.exit(EXIT_PROBLEM)


def _retry_all(engine: Engine, scope: Scope | None) -> tuple[Counter[str], int, int]:
    """Queue every pending/failed event again and run the worker over them once.

    Returns outcome counts, memories derived, and events left untried.
    """
    queue = engine.retry_queue(*((scope.persona_id, scope.project_id) if scope else (None, None)))
    engine.requeue(queue)
    counts: Counter[str] = Counter()
    tally = {"memories": 0, "unreachable": 0}
    with progress_bar("extracting", len(queue)) as bar:

        def report(outcome: Outcome) -> bool:
            bar.advance(1)
            if outcome.state == "forgotten":
                return True
            counts[outcome.state] += 1
            tally["memories"] += len(outcome.memory_ids)
            tally["unreachable"] = tally["unreachable"] + 1 if outcome.state == "pending" else 0
            if tally["unreachable"] >= GIVE_UP_AFTER:
                click.echo(f"\nstopping: {GIVE_UP_AFTER} events in a row stayed pending ({outcome.error})", err=True)
                return False
            return True

        engine.drain(scope, report, patient=False)
    stopped = len(queue) - sum(counts.values()) if tally["unreachable"] >= GIVE_UP_AFTER else 0
    return counts, tally["memories"], stopped


def _summary(counts: Counter[str], memories: int, stopped: int, where: str) -> None:
    tried = sum(counts.values())
    line = (
        f"retried {tried} event(s) in {where}: {counts['complete']} complete ({memories} memories),"
        f" {counts['pending']} pending, {counts['failed']} failed"
    )
    if stopped:
        line += f"; {stopped} not tried (run `memlikehuman retry` again once the extractor is reachable)"
    click.echo(line)


COMMAND = retry
