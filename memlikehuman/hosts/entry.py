"""The `memlikehuman` console script: `hook` skips the click group, everything else goes to it.

Hosts run `memlikehuman hook HOST` before every prompt; importing the whole command group (click
and every command module) would double its start-up time (bench/hooks.py measures both).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from typing import NoReturn

from .. import files


def main() -> None:
    """Run the command line."""
    files.restrict_umask()  # whatever this process or SQLite creates is owner-only (files.py)
    if sys.argv[1:2] == ["hook"] and not {"-h", "--help"} & set(sys.argv[2:]):  # help: the click command
        # The archive's hook forker has the hook's imports loaded: a child of it runs the hook with this
        # process's arguments, environment and descriptors (hosts/forward.py); else it runs here.
        from .forward import forward

        forwarded = forward(sys.argv[2:])
        if forwarded is not None:
            os._exit(forwarded)
        run_hook(sys.argv[2:])
    served = _serve_args(sys.argv[1:])
    if served is not None:
        # What a host starts: a relay to the archive's warm process, which has the MCP SDK loaded
        # (hosts/relay.py); else straight to a server of its own, without the command group's imports
        # (a host waits for `initialize`, and may start its first turn without our tools if it waits too long).
        from .relay import relay

        relayed = relay(served[0])
        if relayed is not None:
            os._exit(relayed)  # stdout is written unbuffered: nothing is left to flush
        from ..server.run import main as serve

        sys.exit(serve(served[0]))
    from ..cli import main as group

    group()


def run_hook(argv: list[str]) -> NoReturn:
    """`memlikehuman hook ARGV` in this process, then exit."""
    status = hook_status(argv)
    # The hook has closed the archive and written its answer: exit without tearing the interpreter
    # down module by module (milliseconds of every prompt; nothing is left to flush but these two).
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a host that stopped reading: nothing to save
            stream.flush()
    os._exit(status)


def hook_status(argv: list[str]) -> int:
    """Run `memlikehuman hook ARGV` (in a hook process, or a child of the hook forker); its exit status."""
    files.restrict_umask()
    # A hook process lives for one call and creates few cycles: the collector's passes over the
    # objects its imports create cost milliseconds of every prompt, and exit frees everything.
    gc.disable()
    from .hook import main as hook_main

    return hook_main(argv)


def _serve_args(args: list[str]) -> tuple[str | None] | None:
    """(the --db value or None) for exactly `serve`, `serve --db X` or `serve --db=X`; else None (the group)."""
    if args[:1] != ["serve"]:
        return None
    rest = args[1:]
    if not rest:
        return (None,)
    if len(rest) == 2 and rest[0] == "--db":
        return (rest[1],)
    if len(rest) == 1 and rest[0].startswith("--db="):
        return (rest[0].removeprefix("--db="),)
    return None
