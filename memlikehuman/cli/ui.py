"""`memlikehuman ui`: the loopback web UI of the archive."""

from __future__ import annotations

import click

from ..engine import Engine
from ..errors import InvalidArgument, MemLikeHumanError
from .common import db_option, fail, require_archive, settings_from


@click.command()
@db_option
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="Port on 127.0.0.1 (0: any free one)."
)
@click.option("--no-browser", is_flag=True, help="Only print the URL; do not open a browser.")
@click.pass_context
def ui(ctx: click.Context, db: str | None, port: int, no_browser: bool) -> None:
    """Browse, search, correct and forget in a web page on this machine only.

    The first line of standard output is the URL to open, http://127.0.0.1:PORT/?token=...; the
    token is new on every run and every request needs it (the page keeps it in a cookie). The UI
    listens on 127.0.0.1 only. Ctrl-C stops it.
    """
    settings = settings_from(ctx, db)
    require_archive(settings)
    # Imported here: uvicorn and Starlette are needed by this command only.
    from ..ui.serve import bind, run

    try:
        sock = bind(port)
    except OSError as exc:
        fail(InvalidArgument(f"cannot listen on 127.0.0.1:{port} ({exc.strerror}): choose another --port, or 0"))
    try:
        with Engine(settings) as engine:
            run(engine, sock, open_browser=not no_browser)
    except MemLikeHumanError as exc:
        fail(exc)
    finally:
        sock.close()


COMMAND = ui
