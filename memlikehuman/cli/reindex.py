"""`memlikehuman reindex`: rebuild the full-text and vector indexes."""

from __future__ import annotations

import sys

import click

from ..engine import Engine
from ..errors import MemLikeHumanError
from .common import EXIT_INTERRUPTED, db_option, fail, progress_bar, require_archive, settings_from


@click.command()
@db_option
@click.option("--missing", is_flag=True, help="Only add what is missing (fast); default: rebuild everything.")
@click.option(
    "--only",
    type=click.Choice(["fulltext", "vectors"]),
    default=None,
    help="Rebuild only the full-text index or only the vectors (default: both).",
)
@click.pass_context
def reindex(ctx: click.Context, db: str | None, missing: bool, only: str | None) -> None:
    """Rebuild the full-text index and the vectors from the stored events and memories.

    Without --missing, each index is emptied and written again (use this after `doctor` reports
    a damaged index, or to re-embed everything with another embedder); with --missing, only rows
    and vectors that do not exist yet are added (after an `import`, or an interrupted reindex).
    Vectors use the configured embedder (MEMLIKEHUMAN_EMBEDDER) and are skipped when it is `none`.

    Work is committed in batches with progress on stderr: it is safe to interrupt (Ctrl-C) and
    run again; `reindex --missing` then finishes the job.

    Exit status: 0 done, 1 error (e.g. the embedder cannot be reached), 130 interrupted.
    """
    settings = settings_from(ctx, db)
    require_archive(settings)
    try:
        with Engine(settings) as engine:
            if only != "vectors":
                with progress_bar("full-text", 0) as bar:
                    counts = engine.reindex_fulltext(missing_only=missing, progress=bar.report)
                click.echo(f"full-text: {counts.events:,} events and {counts.memories:,} memories indexed", err=True)
            if only != "fulltext":
                _vectors(engine, missing)
    except KeyboardInterrupt:
        click.echo(
            "\ninterrupted: the batches written so far are kept; run `memlikehuman reindex --missing` to finish",
            err=True,
        )
        sys.exit(EXIT_INTERRUPTED)
    except MemLikeHumanError as exc:
        fail(exc)


def _vectors(engine: Engine, missing: bool) -> None:
    if engine.embedder is None:
        click.echo("vectors: skipped, no embedder is configured (MEMLIKEHUMAN_EMBEDDER=none)", err=True)
        return
    with progress_bar("vectors", 0) as bar:
        done = engine.reindex_vectors(missing_only=missing, progress=bar.report)
    click.echo(f"vectors: {done:,} events and memories embedded with {engine.embedder.model_id}", err=True)


COMMAND = reindex
