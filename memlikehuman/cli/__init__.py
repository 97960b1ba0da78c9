"""The command line edge: `memlikehuman serve` and the admin commands.

Each command lives in its own module and is added to the `main` group here.
"""

from __future__ import annotations

from .main import main

__all__ = ["main"]
