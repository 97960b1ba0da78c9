"""What every command shares: options, settings, error output, tables, progress bars, exit codes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from .. import config
from ..errors import MemLikeHumanError, NotFound
from ..text.projects import AUTO, project_name

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_PROBLEM = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # the shell's code for Ctrl-C (128 + SIGINT)


def db_option(fn: F) -> F:
    """--db FILE|URL on any command (it overrides the group's --db and MEMLIKEHUMAN_DB)."""
    return click.option(
        "--db",
        "db",
        metavar="FILE|URL",
        default=None,
        help="Archive file or postgresql:// URL (default: $MEMLIKEHUMAN_DB, else the user data directory).",
    )(fn)


def project_value(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--project as the hooks read it: `auto` is the stable name of the current directory (its git work
    tree's top folder; docs/hosts.md, "Scope"), anything else the project ID itself."""
    if value is None or value.strip().lower() != AUTO:
        return value
    return project_name(Path.cwd())


def scopes_hint(engine: Any, persona_id: str, project_id: str) -> str:
    """For a search that found its scope empty: which scopes hold events, and this directory's `auto` name."""
    held = [s for s in engine.stats().scopes if s.events]
    here = project_name(Path.cwd())
    shown = ", ".join(f"--persona {s.persona_id} --project {s.project_id} ({s.events:,})" for s in held[:8])
    more = f" and {len(held) - 8} more (memlikehuman stats)" if len(held) > 8 else ""
    where = f"; this directory's project (--project auto) is {here}" if here != project_id else ""
    if not held:
        return f"the archive holds no events yet{where}"
    return f"no events in persona {persona_id!r}, project {project_id!r}; events are in: {shown}{more}{where}"


def settings_from(ctx: click.Context, db: str | None) -> config.Settings:
    """Resolve settings with the command's --db, else the group's."""
    chosen = db if db is not None else (ctx.obj or {}).get("db")
    try:
        return config.load(chosen)
    except MemLikeHumanError as exc:
        fail(exc)
    raise AssertionError("unreachable")


def require_archive(settings: config.Settings) -> None:
    """Exit 1 unless the archive exists: a mistyped --db must not silently create an empty one."""
    if not settings.archive_exists():
        fail(
            NotFound(
                f"no archive at {settings.archive_label}: check --db or MEMLIKEHUMAN_DB"
                " (`serve` and `import` create a new archive)"
            )
        )


def require_extractor(settings: config.Settings) -> None:
    """Exit with EXIT_PROBLEM and what to configure unless a command can extract (extract, retry)."""
    if settings.extractor == "sampling":
        problem = (
            "MEMLIKEHUMAN_EXTRACTOR=sampling asks the MCP client of a running `memlikehuman serve`; a command"
            " has no client: the server extracts pending events once a client with sampling connects"
        )
    elif settings.extractor == "none":
        problem = (
            "no extractor is configured: set MEMLIKEHUMAN_EXTRACTOR=openai (and its _MODEL, _BASE_URL, _API_KEY)"
            " or command (and MEMLIKEHUMAN_EXTRACTOR_COMMAND) in the environment or the config file"
        )
    else:
        return
    click.echo(f"error: {problem}", err=True)
    sys.exit(EXIT_PROBLEM)


def fail(exc: MemLikeHumanError) -> NoReturn:
    """Print a coded error on stderr and exit 1."""
    click.echo(f"error: {exc}", err=True)
    sys.exit(EXIT_ERROR)


def echo_json(data: Any) -> None:
    """Print data as indented JSON on stdout, for scripts (`--json`)."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def echo_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """Print rows on stdout as a table with aligned columns; numbers are right-aligned."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [max([len(header)] + [len(row[i]) for row in cells]) for i, header in enumerate(headers)]
    numeric = [all(row[i].replace(",", "").isdigit() for row in cells) and bool(cells) for i in range(len(headers))]

    def fmt(row: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(row, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    click.echo(fmt(list(headers)))
    click.echo("  ".join("-" * width for width in widths))
    for row in cells:
        click.echo(fmt(row))


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return " ".join(str(value).split())


class Progress:
    """A progress bar on stderr; click hides it (printing only the label) when stderr is not a terminal."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar
        self._reported = 0

    def advance(self, steps: int) -> None:
        """Move the bar forward by ``steps``."""
        if self._bar is not None:
            self._bar.update(steps)

    def report(self, done: int, total: int) -> None:
        """A ``progress(done, total)`` callback for the core's long-running functions."""
        if self._bar is not None:
            self._bar.length = max(total, 1)
            self._bar.update(done - self._reported)
            self._reported = done


@contextmanager
def progress_bar(label: str, length: int | None) -> Iterator[Progress]:
    """Show a progress bar of ``length`` steps on stderr (None: unknown, no bar; 0: set by ``report``)."""
    if length is None:
        click.echo(f"{label} ...", err=True)
        yield Progress(None)
        return
    # Redrawn about 500 times in all: a redraw per line would cost more than the work on a big archive.
    steps = max(1, length // 500)
    with click.progressbar(
        length=max(length, 1), label=label, file=sys.stderr, show_pos=True, update_min_steps=steps
    ) as bar:
        yield Progress(bar)
