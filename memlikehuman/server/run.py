"""`memlikehuman serve` itself: the settings, the archive checked, the server built and run over stdio.

Both the command line's `serve` and the console script's fast path (hosts/entry.py, which skips the
click group: a host waits for `initialize`, and every import before the MCP SDK's delays it) call `main`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys

from .. import config
from ..engine import open_archive
from ..errors import MemLikeHumanError


def main(db: str | None, *, verbose: bool = False) -> int:
    """Serve until stdin closes or a stop signal, then end the process (status 0); return 1 at once when
    the settings or the archive are unusable."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.DEBUG if verbose else logging.INFO, format="memlikehuman: %(message)s"
    )
    try:
        settings = config.load(db)
        if settings.extracting:
            # A host CLI that an extraction runs headless started its MCP servers after all: ours must not
            # record that run's prompt or start another run (providers/command.py).
            print(
                "memlikehuman: not serving inside an extraction run (MEMLIKEHUMAN_EXTRACTING is set)", file=sys.stderr
            )
            return 1
        # A host keeps its servers' stderr as an error log (Claude Code marks each line [ERROR]): the
        # start-up lines are for a person at a terminal, or for -v; warnings and failures are always written.
        watched = sys.stderr.isatty() or verbose
        if not watched:
            logging.getLogger("memlikehuman").setLevel(logging.WARNING)
            logging.getLogger("mcp").setLevel(logging.ERROR)  # a call the agent got wrong is its result
        open_archive(settings)  # a bad --db fails here, with a clear message, before anything is served
    except MemLikeHumanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    # A dependency that prints on import would corrupt the JSON-RPC stream: send it to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        from . import build_server

        server = build_server(settings)
    if watched:
        print(
            f"memlikehuman: archive {settings.archive_label}; extractor {settings.extractor}, embedder"
            f" {settings.embedder}; waiting for an MCP host on stdio (Ctrl-C to stop)",
            file=sys.stderr,
        )
    server.stopping.install()  # SIGINT and SIGTERM: the socket removed, the archive closed, exit (app.py)
    with contextlib.suppress(KeyboardInterrupt):
        server.run("stdio")
    # stdin ended: every call read was answered, and the lifespan stopped the worker and the indexer and
    # closed the archive. No interpreter teardown: a native thread still finishing (an embedder model
    # being loaded) would hold the exit, and one inside onnxruntime could abort it (std::terminate).
    logging.shutdown()  # the log lines flushed; stdout's last answer is written (the SDK flushes each)
    os._exit(0)
