"""`memlikehuman stats`: what the archive holds, per scope."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import click

from ..engine import Engine
from ..errors import MemLikeHumanError
from .common import db_option, echo_json, echo_table, fail, project_value, require_archive, settings_from

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
    help="Only this project (`auto`: this directory's; default: every project).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON on stdout.")
@click.pass_context
def stats(ctx: click.Context, db: str | None, persona_id: str | None, project_id: str | None, as_json: bool) -> None:
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
    """
    settings = settings_from(ctx, db)
    require_archive(settings)
    try:
        with Engine(settings) as engine:
            result = engine.stats(persona_id, project_id)
    except MemLikeHumanError as exc:
        fail(exc)
    if as_json:
        echo_json({**asdict(result), "totals": asdict(result.totals())})
        return
    rows = [[getattr(scope, field) for _, field in COLUMNS] for scope in result.scopes]
    if len(result.scopes) > 1:
        rows.append([getattr(result.totals(), field) for _, field in COLUMNS])
    echo_table([header for header, _ in COLUMNS], rows)
    if not rows:
        click.echo("(no records" + (" in this scope)" if persona_id or project_id else ")"))
    _echo_aliases(result.scopes)
    model = result.vector_model or "none configured"
    click.echo(
        f"\narchive {result.path}: {_size(result.file_bytes)} (+ {_size(result.wal_bytes)} WAL,"
        f" {_size(result.free_bytes)} free inside); vectors: {model}"
    )
    for warning in result.warnings:
        click.echo(f"\nwarning: {warning}")


def _echo_aliases(scopes: Sequence[Any]) -> None:
    """The learned speaker aliases of each scope, one line each."""
    lines = [
        f"  {scope.persona_id}/{scope.project_id}: {alias.speaker} = {alias.name}"
        f" ({alias.evidence} {'turn' if alias.evidence == 1 else 'turns'}, first {alias.event_id})"
        for scope in scopes
        for alias in scope.aliases
    ]
    if lines:
        click.echo("\nspeaker aliases (names used in address; memory_read of the event shows the evidence):")
        click.echo("\n".join(lines))


def _size(count: int) -> str:
    size = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


COMMAND = stats
