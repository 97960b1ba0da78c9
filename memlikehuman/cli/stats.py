"""`memlikehuman stats`: what the archive holds, per scope."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import click

from ..engine import Engine
from ..errors import MemLikeHumanError
from .columns import fill, pack, width
from .common import db_option, echo_json, echo_table, fail, require_archive, settings_from
from .scopes import project_value, some_scopes

COLUMNS = (
    ("persona", "persona_id"),
    ("project", "project_id"),
    ("events", "events"),
    ("pending", "extraction_pending"),
    ("failed", "extraction_failed"),
    ("in-flight", "extraction_in_flight"),
    ("current", "memories_current"),
    ("superseded", "memories_superseded"),
    ("revoked", "memories_revoked"),
    ("ckpt valid", "checkpoints_valid"),
    ("ckpt invalid", "checkpoints_invalidated"),
    ("no vector", "vectors_missing"),
)


@click.command()
@db_option
@click.option("--persona", "persona_id", default=None, help="Only this persona (default: every persona).")
@click.option(
    "--project",
    "project_id",
    default=None,
    callback=project_value,
    help="Only this project (`auto`: this folder's; default: $MEMLIKEHUMAN_PROJECT, else this folder's, else every"
    " project).",
)
@click.option("--all", "all_scopes", is_flag=True, help="Every scope, also inside a project folder.")
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON on stdout.")
@click.option("--wide", is_flag=True, help="One table row per scope on long lines, instead of 100 columns.")
@click.pass_context
def stats(
    ctx: click.Context,
    db: str | None,
    persona_id: str | None,
    project_id: str | None,
    all_scopes: bool,
    as_json: bool,
    wide: bool,
) -> None:
    """Count, per persona and project: events, extractions pending/failed, memories, checkpoints, vectors.

    \b
    Columns: events; pending/failed = events whose extraction is not complete (`retry`);
    in flight = pending events being extracted right now (by a server or `extract`);
    current/superseded/revoked = memories by status (revoked = corrected away);
    ckpt valid/invalid = task checkpoints (corrections and forgetting invalidate them);
    no vector = events and memories without a vector of the configured embedder (`reindex --missing`),
    "-" when no embedder is configured. Then the speaker aliases of each scope (a name people use
    for a speaker, learned from turns that use it in address: how many, and the first such event,
    which `memory_read` shows), and the size of the database file and its WAL.

    Inside a project folder only that project's scopes (as the hooks name it; --all: every scope).
    """
    settings = settings_from(ctx, db)
    require_archive(settings)
    persona_id, project_id = some_scopes(settings, persona_id, project_id, all_scopes)
    try:
        with Engine(settings) as engine:
            result = engine.stats(persona_id, project_id)
    except MemLikeHumanError as exc:
        fail(exc)
    if as_json:
        echo_json({**asdict(result), "totals": asdict(result.totals())})
        return
    room = None if wide else width()
    scopes = [*result.scopes, result.totals()] if len(result.scopes) > 1 else list(result.scopes)
    if room is None:
        echo_table([header for header, _ in COLUMNS], [[getattr(s, field) for _, field in COLUMNS] for s in scopes])
    else:
        for scope in scopes:
            click.echo("\n".join(_card(scope, len(result.scopes), room)))
    if not scopes:
        click.echo("(no records" + (" in this scope)" if persona_id or project_id else ")"))
    _echo_aliases(result.scopes, room)
    model = result.vector_model or "none configured"
    sizes = f"{_size(result.file_bytes)} (+ {_size(result.wal_bytes)} WAL, {_size(result.free_bytes)} free inside);"
    click.echo("\n" + fill(f"archive {result.path}: {sizes} vectors: {model}", room))
    for warning in result.warnings:
        click.echo("\n" + fill(f"warning: {warning}", room, "  "))


def _card(scope: Any, count: int, room: int) -> list[str]:
    """One scope's counts in words, in lines of `room` columns (the totals when its IDs are "*")."""
    name = f"all {count} scopes:" if scope.persona_id == "*" else f"{scope.persona_id}/{scope.project_id}:"
    first = [
        name,
        f"{_counted(scope.events, 'event')},",
        f"extraction {scope.extraction_pending:,} pending ({scope.extraction_in_flight:,} in flight),"
        f" {scope.extraction_failed:,} failed",
    ]
    if scope.vectors_missing is not None:
        first[-1] += ","
        first.append(f"{scope.vectors_missing:,} without a vector")
    second = [
        f"memories {scope.memories_current:,} current, {scope.memories_superseded:,} superseded,"
        f" {scope.memories_revoked:,} revoked;",
        f"checkpoints {scope.checkpoints_valid:,} valid, {scope.checkpoints_invalidated:,} invalidated",
    ]
    return [*pack(first, room, "", "  ", " "), *pack(second, room, "  ", "  ", " ")]


def _counted(number: int, noun: str) -> str:
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


def _echo_aliases(scopes: Sequence[Any], room: int | None) -> None:
    """The learned speaker aliases of each scope, one line each (packed into `room` columns)."""
    lines = [
        (
            f"{scope.persona_id}/{scope.project_id}: {alias.speaker} = {alias.name}",
            f"({alias.evidence} {'turn' if alias.evidence == 1 else 'turns'}, first",
            f"{alias.event_id})",
        )
        for scope in scopes
        for alias in scope.aliases
    ]
    if lines:
        click.echo("\nspeaker aliases (names used in address; memory_read of the event shows the evidence):")
        for parts in lines:
            click.echo("\n".join(pack(parts, room, "  ", "    ", " ") if room else ["  " + " ".join(parts)]))


def _size(count: int) -> str:
    size = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


COMMAND = stats
