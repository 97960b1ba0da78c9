"""What every command shares: options, settings, error output, tables, progress bars, exit codes.

Exit codes (README, "Command line"): 0 success; 1 error: the command line was right but the work could
not be done (no archive, no such record, a conflict, a provider out of reach, a file that cannot be
read or written, a refused text read from a file or standard input); 2 wrong usage: the command line
itself is refused (click's own checks, and a value of an option or argument that the core refuses:
`invalid_argument` or `limit_exceeded` about a query, a time, a scope, a record ID); 3 a problem was
found; 130 interrupted.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

import click

from .. import config
from ..errors import InvalidArgument, LimitExceeded, MemLikeHumanError, NotFound
from .columns import columns, flat

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


def settings_from(ctx: click.Context, db: str | None) -> config.Settings:
    """Resolve settings with the command's --db, else the group's (an empty --db is wrong usage)."""
    chosen = db if db is not None else (ctx.obj or {}).get("db")
    try:
        return config.load(chosen)
    except MemLikeHumanError as exc:
        fail(exc, EXIT_USAGE if chosen is not None and not str(chosen).strip() else EXIT_ERROR)
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


NOTES = "memlikehuman.notes"  # click's Context.meta key: lines said on stderr once a command succeeded


def say_after(line: str) -> None:
    """Say ``line`` on stderr when the command ends well (cli/main.py); an error stays one line."""
    click.get_current_context().meta.setdefault(NOTES, []).append(line)


def say_notes(ctx: click.Context) -> None:
    """The lines say_after kept, each once."""
    for line in dict.fromkeys(ctx.meta.pop(NOTES, [])):
        click.echo(line, err=True)


def fail(exc: MemLikeHumanError, status: int = EXIT_ERROR) -> NoReturn:
    """Print a coded error on stderr and exit with ``status`` (1, or EXIT_USAGE for a refused command line)."""
    click.echo(f"error: {exc}", err=True)
    sys.exit(status)


def usage_error(message: str) -> NoReturn:
    """Print what is wrong with the command line and exit 2, as click does for its own checks."""
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_USAGE)


@contextmanager
def as_usage() -> Iterator[None]:
    """Inside, a value the core refuses (invalid_argument, limit_exceeded) is wrong usage: exit 2.

    Wrap only what checks the command line's own values (not opening the archive, not reading a file)."""
    try:
        yield
    except (InvalidArgument, LimitExceeded) as exc:
        fail(exc, EXIT_USAGE)


def can_ask(yes: bool) -> None:
    """Exit 2 unless --yes was given or a terminal on standard input can answer the question to come."""
    if not yes and not sys.stdin.isatty():
        usage_error("this asks first, and standard input is no terminal to answer on: pass --yes to go ahead")


def confirmed(question: str, yes: bool) -> bool:
    """Whether to go on: True with --yes, else the answer of the person at the terminal (default no).

    Without a terminal nobody can answer: exit 2 (can_ask). Ctrl-C or Ctrl-D at the question is an
    interruption (exit 130, main.Group)."""
    can_ask(yes)
    return yes or click.confirm(question, default=False, err=True)


def echo_json(data: Any) -> None:
    """Print data as indented JSON on stdout, for scripts (`--json`)."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def echo_table(headers: Sequence[str], rows: Iterable[Sequence[object]], room: int | None = None) -> None:
    """Print rows on stdout as a table with aligned columns; numbers are right-aligned. With `room`, the
    last column is wrapped between words so that a line fits `room` columns where it can."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [max([columns(header)] + [columns(row[i]) for row in cells]) for i, header in enumerate(headers)]
    numeric = [all(row[i].replace(",", "").isdigit() for row in cells) and bool(cells) for i in range(len(headers))]
    start = sum(widths[:-1]) + 2 * (len(widths) - 1)
    if room is not None and cells and room - start >= MIN_LAST_COLUMN:
        widths[-1] = max(columns(headers[-1]), min(widths[-1], room - start))

    def fmt(row: Sequence[str]) -> str:
        parts = [_pad(v, w, num) for v, w, num in zip(row, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    click.echo(fmt(list(headers)))
    click.echo("  ".join("-" * width for width in widths))
    for row in cells:
        first, *more = _lines(row[-1], widths[-1] if room is not None else None)
        click.echo(fmt([*row[:-1], first]))
        for line in more:
            click.echo(" " * start + line)


MIN_LAST_COLUMN = 20  # narrower than this, a wrapped last column would read worse than a long line


def _lines(text: str, room: int | None) -> list[str]:
    if room is None or columns(text) <= room:
        return [text]
    return textwrap.wrap(text, room, break_long_words=True, break_on_hyphens=False) or [text]


def _pad(value: str, width: int, right: bool) -> str:
    space = " " * max(0, width - columns(value))
    return space + value if right else value + space


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return flat(value)


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
