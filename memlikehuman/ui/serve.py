"""Run the UI: bind 127.0.0.1 (only), print the URL with this run's token, serve until interrupted."""

from __future__ import annotations

import os
import socket
import sys
import threading
import webbrowser

import uvicorn

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


def run(engine: Engine, sock: socket.socket, *, open_browser: bool) -> None:
    """Print the URL as the first line of stdout, optionally open it, and serve until Ctrl-C."""
    keys = Secrets(port=int(sock.getsockname()[1]))
    app = build_app(engine, keys)
    print(keys.url, flush=True)
    print(
        f"memlikehuman: the UI of {engine.settings.archive_label} is at {keys.url} (Ctrl-C stops it)", file=sys.stderr
    )
    if open_browser:
        threading.Thread(target=open_in_browser, args=(keys.url,), daemon=True).start()
    config = uvicorn.Config(
        app,
        log_config=None,  # uvicorn's default config logs access lines to stdout
        access_log=False,
        log_level="warning",
        server_header=False,
        proxy_headers=False,
        lifespan="off",
    )
    uvicorn.Server(config).run(sockets=[sock])
