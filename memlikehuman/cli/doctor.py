"""`memlikehuman doctor`: check the configuration, the archive and the providers."""

from __future__ import annotations

import sys
from dataclasses import asdict

import click

from ..engine import diagnose
from ..hosts.status import checks as host_checks
from .columns import width
from .common import EXIT_PROBLEM, db_option, echo_json, echo_table

MARKS = {"ok": "ok", "warn": "WARN", "fail": "FAIL"}


@click.command()
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON on stdout.")
@click.option("--wide", is_flag=True, help="Each check on one line, however long, instead of 100 columns.")
@click.pass_context
def doctor(ctx: click.Context, db: str | None, as_json: bool, wide: bool) -> None:
    """Check the configuration, the archive and the providers; say what to fix.

    \b
    Checks: the configuration loads; the archive's schema version against this release;
    SQLite's integrity_check; the full-text indexes (FTS5 integrity-check, and one row per event
    and memory); vectors missing for the configured embedder; the extractor and embedder answer
    within MEMLIKEHUMAN_TIMEOUT (one GET /models for OpenAI-compatible APIs; the local embedder
    loads and embeds one text). Nothing is written and the archive is not created.

    Exit status: 0 when nothing failed (warnings allowed), 3 when a check failed.
    """
    chosen = db if db is not None else (ctx.obj or {}).get("db")
    results = diagnose(chosen, more=host_checks)
    failed = [check for check in results if check.status == "fail"]
    if as_json:
        echo_json({"ok": not failed, "checks": [asdict(check) for check in results]})
    else:
        rows = [(c.name, MARKS[c.status], c.detail) for c in results]
        echo_table(["check", "status", "detail"], rows, None if wide else width())
        if failed:
            click.echo(f"\n{len(failed)} check(s) failed: {', '.join(c.name for c in failed)}", err=True)
    if failed:
        sys.exit(EXIT_PROBLEM)


COMMAND = doctor
