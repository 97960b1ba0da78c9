"""`memlikehuman recall`: the memory_recall search, for a person at a terminal."""

from __future__ import annotations

from typing import Any

import click

from ..engine import Engine
from ..errors import MemLikeHumanError
from ..shapes import recall_shape
from . import notices
from .columns import fill, flat, pack, width, wrap
from .common import as_usage, db_option, echo_json, echo_table, fail, require_archive, settings_from
from .scopes import one_scope, scope_options, scopes_hint

CLIP = 90  # --wide: characters of a memory or an excerpt in its table cell
INDENT = " " * 9  # a card's text, under its ID


@click.command()
@db_option
@click.argument("query", required=False, default="")
@scope_options()
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
@click.option("--wide", is_flag=True, help="Tables with whole cells on long lines, instead of 100 columns.")
@click.pass_context
def recall(ctx: click.Context, db: str | None, query: str, as_json: bool, wide: bool, **options: Any) -> None:
    """Search the memories and original events of one persona and project, as the memory_recall tool does.

    Prints memories and raw excerpts (events no memory covers yet), best first, each with its score,
    its whole ID and its text cut to two lines, in 100 columns (--wide: tables on long lines); then
    the coverage and the warnings. A warning about the scope rather than the query (events pending or
    failed extraction, dated in the future, without vectors) is said once per terminal session and day
    at a terminal; the counts stand on the coverage line every time. --json prints the tool's exact
    output fields instead. Inside a project folder the scope is that folder's project, as the hooks
    name it (stderr says so); --project default searches the default scope.

    \b
    Examples:
      memlikehuman recall "where does Ana live" --persona assistant --project home
      memlikehuman recall --cue IMG_0042.jpg --json
      memlikehuman recall "what dishes did Ana cook" --also "Ana made soup" --also "Ana baked bread"
    """
    settings = settings_from(ctx, db)
    require_archive(settings)
    scope = one_scope(settings, options.pop("persona_id"), options.pop("project_id"))
    hint = None
    try:
        with Engine(settings) as engine:
            options["alternatives"] = list(options["alternatives"]) or None
            with as_usage():  # recall refuses only its arguments: the query, --as-of, --also, --cue, ...
                found = engine.recall(scope, query, **options)
            result = recall_shape(found)
            if not result["coverage"]["events_in_scope"]:
                hint = scopes_hint(engine, scope.persona_id, scope.project_id)
    except MemLikeHumanError as exc:
        fail(exc)
    if hint:
        click.echo(f"note: {hint}", err=True)
    if as_json:
        echo_json(result)
    else:
        room = None if wide else width()
        _print(result, room)
        said = notices.to_say(settings.db_path, scope, list(found.standing))
        standing = {text for _, text in found.standing}
        for warning in result["warnings"]:
            if warning not in standing or warning in said:
                click.echo(fill(f"warning: {warning}", room, "  "), err=True)


def _print(result: dict[str, Any], room: int | None) -> None:
    """The hits as cards that fit `room` columns (None: `--wide`, today's tables on long lines)."""
    if room is None:
        _tables(result)
    else:
        _cards(result, room)
    cov = result["coverage"]
    summary = (
        f"{result['search_mode']} search as of {result['as_of']}: {cov['events_in_scope']:,} events in scope,"
        f" {cov['events_pending']:,} pending and {cov['events_failed']:,} failed extraction,"
        f" {cov['events_without_vectors']:,} without vectors"
    )
    click.echo("\n" + fill(summary, room))


def _cards(result: dict[str, Any], room: int) -> None:
    """Each hit in two or three lines: its score, ID (whole: `forget` and memory_read take it) and where it
    comes from, then its text cut to two lines."""
    click.echo(f"memories ({len(result['memories'])}):")
    for m in result["memories"]:
        head = [
            _score(m["score"]),
            m["memory_id"],
            m["status"] + (", overview" if m["detail"] == "overview" else ""),
            f"valid {m['valid_from'][:10]} .. {(m['valid_to'] or '')[:10]}".rstrip(),
            f"{m['source']['source']} ({m['source']['role']}) {_when(m['source']['occurred_at'])}",
        ]
        _card(head, m["content"] + (" (inferred)" if m["basis"] == "inferred" else ""), room)
    if not result["memories"]:
        click.echo("  (none)")
    click.echo(f"\nraw excerpts ({len(result['raw_fallback'])}):")
    for r in result["raw_fallback"]:
        head = [_score(r["score"]), r["event_id"], _when(r["occurred_at"]), f"{r['source']} ({r['role']})"]
        _card([*head, "truncated"] if r["truncated"] else head, r["excerpt"], room)
    if not result["raw_fallback"]:
        click.echo("  (none)")


def _card(head: list[str], text: str, room: int) -> None:
    for line in pack((flat(part) for part in head), room, "  ", INDENT):
        click.echo(line)
    for line in wrap(flat(text), room - len(INDENT)):
        click.echo(INDENT + line)


def _when(stamp: str) -> str:
    return stamp[:16].replace("T", " ")


def _tables(result: dict[str, Any]) -> None:
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
