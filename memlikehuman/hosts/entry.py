"""The `memlikehuman` console script: `hook` skips the click group, everything else goes to it.

Hosts run `memlikehuman hook HOST` before every prompt; importing the whole command group (click
and every command module) would double its start-up time (bench/hooks.py measures both).
"""

from __future__ import annotations

import sys


def main() -> None:
    """Run the command line."""
    if sys.argv[1:2] == ["hook"]:
        from .hook import main as hook_main

        sys.exit(hook_main(sys.argv[2:]))
    from ..cli import main as group

    group()
