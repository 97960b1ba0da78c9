"""`memlikehuman recall`: the memory_recall search, for a person at a terminal."""

from __future__ import annotations

from typing import Any

import click

from ..engine import Engine
from ..errors import MemLikeHumanError
from ..records import Scope
from ..shapes import recall_shape
from .common import db_option, echo_json, echo_table, fail, project_value, require_archive, scopes_hint, settings_from

CLIP = 90


@click.command()
@db_option
@click.argument("query", required=False, default="")
@click.option(
    "--persona", "persona_id", default=None, help="Persona of the scope (default: MEMLIKEHUMAN_PERSONA, else default)."
)
@click.option(
    "--project",
    "project_id",
    default=None,
    callback=project_value,
    help="Project of the scope, or `auto` for this directory's (as the hooks name it); default: $MEMLIKEHUMAN_PROJECT.",
)
@click.option("-n", "--limit", type=click.IntRange(1, 100), default=10, show_default=True, help="Results per list.")
@click.option("--as-of", default=None, help="Answer as known at this ISO 8601 time with offset (default: now).")
@click.option("--history", "include_history", is_flag=True, help="Also show versions superseded by --as-of.")
@click.option(
    "--detail", type=click.Choice(["auto", "gist", "detailed"]), default="auto", show_default=True, help="Detail level."
)
@click.option(
    "--mode",
    "search_mode",
    type=click.Choice(["fast", "semantic", "deep"]),
    default="fast",
    show_default=True,
    help="fast: words only; semantic: also meaning over recent items; deep: meaning over everything.",
)
@click.option("--cue", "cue_key", default=None, help="Only events recorded with this text/photo cue key.")
@click.option("--session", "session_id", default=None, help="Only this session.")
@click.option(
    "--also",
    "alternatives",
    multiple=True,
    help="A further phrasing of the same need, searched too and fused (repeat, up to 8).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the memory_recall tool's structured output as JSON.")
@click.pass_context
def recall(ctx: click.Context, db: str | None, query: str, as_json: bool, **options: Any) -> None:
    """Search the memories and original events of one persona and project, as the memory_recall tool does.

    Prints two tables, memories and raw excerpts (events no memory covers yet), best first, then
    the coverage and warnings. --json prints the tool's exact output fields instead.

    \b
    Examples:
      memlikehuman recall "where does Ana live" --persona assistant --project home
      memlikehuman recall --cue IMG_0042.jpg --json
      memlikehuman recall "what dishes did Ana cook" --also "Ana made soup" --also "Ana baked bread"
    """
    settings = settings_from(ctx, db)
    require_archive(settings)
    scope = Scope(options.pop("persona_id") or settings.persona_id, options.pop("project_id") or settings.project_id)
    hint = None
    try:
        with Engine(settings) as engine:
            options["alternatives"] = list(options["alternatives"]) or None
            result = recall_shape(engine.recall(scope, query, **options))
            if not result["coverage"]["events_in_scope"]:
                hint = scopes_hint(engine, scope.persona_id, scope.project_id)
    except MemLikeHumanError as exc:
        fail(exc)
    if hint:
        click.echo(f"note: {hint}", err=True)
    if as_json:
        echo_json(result)
    else:
        _print(result)


def _print(result: dict[str, Any]) -> None:
    click.echo(f"memories ({len(result['memories'])}):")
    _table(
        ["score", "status", "valid", "memory", "content", "from"],
        [
            (
                _score(m["score"]),
                m["status"] + (", overview" if m["detail"] == "overview" else ""),
                f"{m['valid_from'][:10]} .. {(m['valid_to'] or '')[:10]}",
                m["memory_id"],
                _clip(m["content"]) + (" (inferred)" if m["basis"] == "inferred" else ""),
                f"{m['source']['source']} ({m['source']['role']}) {m['source']['occurred_at'][:16]}",
            )
            for m in result["memories"]
        ],
    )
    click.echo(f"\nraw excerpts ({len(result['raw_fallback'])}):")
    _table(
        ["score", "event", "when", "from", "excerpt"],
        [
            (
                _score(r["score"]),
                r["event_id"],
                r["occurred_at"][:16],
                f"{r['source']} ({r['role']})",
                _clip(r["excerpt"]) + (" [truncated]" if r["truncated"] else ""),
            )
            for r in result["raw_fallback"]
        ],
    )
    cov = result["coverage"]
    click.echo(
        f"\n{result['search_mode']} search as of {result['as_of']}: {cov['events_in_scope']:,} events in scope,"
        f" {cov['events_pending']:,} pending and {cov['events_failed']:,} failed extraction,"
        f" {cov['events_without_vectors']:,} without vectors"
    )
    for warning in result["warnings"]:
        click.echo(f"warning: {warning}", err=True)


def _table(headers: list[str], rows: list[tuple[str, ...]]) -> None:
    if rows:
        echo_table(headers, rows)
    else:
        click.echo("  (none)")


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= CLIP else flat[: CLIP - 3] + "..."


COMMAND = recall
