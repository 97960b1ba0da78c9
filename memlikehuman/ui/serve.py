"""Run the UI: bind 127.0.0.1 (only), print the URL with this run's token, serve until interrupted."""

from __future__ import annotations

import html
import os
import signal
import socket
import sys
import threading
import webbrowser
from pathlib import Path
from typing import Any, NoReturn

import uvicorn

from .. import files
from ..engine import Engine
from .app import build_app
from .security import Secrets

HOST = "127.0.0.1"  # never configurable: the UI is for the person at this machine


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:port (0: a free port chosen by the system)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(64)
    except OSError:
        sock.close()
        raise
    return sock


def open_in_browser(url: str) -> None:
    """Open the URL in the desktop's browser; without a display, say so instead.

    Without a display, ``webbrowser`` would start a console browser (lynx, w3m) in this terminal.
    """
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        print("memlikehuman: no graphical display here: open the URL above in a browser", file=sys.stderr)
        return
    if not webbrowser.open(url):
        print("memlikehuman: could not start a browser: open the URL above in one", file=sys.stderr)


def launcher(url: str, port: int) -> Path | None:
    """A page only this user can read that sends the browser on to `url`; None without a private directory.

    The browser is started with this file's path, never with the URL: a command line is visible to
    every local user (`ps`), and the URL holds the token. The way Jupyter opens its notebooks."""
    directory = files.runtime_dir()
    if directory is None:
        return None
    path = directory / f"ui-{port}-{os.getpid()}.html"
    target = html.escape(url, quote=True)
    files.write_private(
        path,
        f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={target}">'
        f'<title>MemLikeHuman</title><p><a href="{target}">Open the MemLikeHuman memory browser</a></p>\n',
    )
    return path


def run(engine: Engine, sock: socket.socket, *, open_browser: bool) -> None:
    """Print the URL as the first line of stdout, optionally open it (through a private launcher file),
    and serve until Ctrl-C."""
    keys = Secrets(port=int(sock.getsockname()[1]))
    app = build_app(engine, keys)
    print(keys.url, flush=True)
    # Standard error often ends in a log file; the token goes only to stdout, for the person who started it.
    print(
        f"memlikehuman: the UI of {engine.settings.archive_label} is at {keys.address}"
        " (open the URL with its token, the first line of standard output; Ctrl-C stops it)",
        file=sys.stderr,
    )
    page = launcher(keys.url, keys.port) if open_browser else None
    if open_browser and page is None:
        print("memlikehuman: no private directory for the browser's start page: open the URL above", file=sys.stderr)
    server = make_server(app)
    # uvicorn stops on SIGTERM, then raises it again with the handler it found: exit through `finally`.
    signal.signal(signal.SIGTERM, lambda *_: _terminated(server))
    try:
        if page is not None:
            threading.Thread(target=open_in_browser, args=(page.as_uri(),), daemon=True).start()
        server.run(sockets=[sock])
    finally:
        if page is not None:
            page.unlink(missing_ok=True)


def _terminated(server: uvicorn.Server) -> NoReturn:
    """SIGTERM before uvicorn handles it: stop. The exit alone is not enough: raised while the main thread
    runs an import's or a finalizer's callback, SystemExit is printed and dropped, and the server would
    start and serve on; told to stop, it stops as soon as it has started."""
    server.should_exit = True
    sys.exit(128 + signal.SIGTERM)


def make_server(app: Any) -> uvicorn.Server:
    """The server of the app, started by `run(sockets=[sock])`; it serves until Ctrl-C."""
    config = uvicorn.Config(
        app,
        log_config=None,  # uvicorn's default config logs access lines to stdout
        access_log=False,
        log_level="warning",
        server_header=False,
        proxy_headers=False,
        lifespan="off",
    )
    return uvicorn.Server(config)
