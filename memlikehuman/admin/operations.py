"""The operations that need no open Engine: create or upgrade an archive, and the doctor's checks.

The facade (engine.py) re-exports both; its own methods, the operator ones included, live there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..archive.db import open_database
from ..archive.schema import migrate
from ..config import Settings

if TYPE_CHECKING:
    from ..records import Check


def open_archive(settings: Settings) -> int:
    """Create or upgrade the archive settings name and close it again; return its schema version."""
    db = open_database(settings.archive)
    try:
        return migrate(db)
    finally:
        db.close()


def diagnose(
    db: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    more: Callable[[Settings], list[Check]] | None = None,
) -> list[Check]:
    """The doctor's checks (doctor.diagnose), then `more` (an edge's, e.g. the wired hosts), given the
    settings. Nothing is written and no archive is created."""
    from .doctor import diagnose as checks

    return checks(db, env, more)
