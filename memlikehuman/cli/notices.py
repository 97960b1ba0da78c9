"""Standing warnings said once per terminal session and day, not on every command.

A standing warning describes a scope, not the question asked: events pending or failed extraction,
events dated in the future, events without vectors (retrieval/coverage.STANDING). At a terminal
(stderr is one) `recall` says each once per terminal session (the shell's session ID, which every
command typed in one terminal shares) and day, for each scope, and again after it went away and came
back; the counts stay on its summary line every time. Warnings about the query itself (a degraded
search, truncated excerpts, an `--as-of` that leaves events out) always show. Elsewhere (a script,
a log) every warning shows every time.

What was said is kept in `<archive>.cli.json` beside the archive (owner-only, replaced atomically):
per terminal session and day, the scopes and the kinds of warning said. No text, no record ID.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import date
from pathlib import Path
from typing import Any

from .. import files
from ..records import Scope

KEPT = 20  # terminal sessions remembered (the newest)


def state_path(db_path: Path) -> Path:
    """The file of what the command line said, beside the archive."""
    return db_path.with_name(db_path.name + ".cli.json")


def to_say(db_path: Path, scope: Scope, standing: list[tuple[str, str]]) -> list[str]:
    """The standing warnings (kind, text) to say now; notes them as said. At no terminal: all of them."""
    if not sys.stderr.isatty():
        return [text for _, text in standing]
    session = f"{_session()}:{date.today().isoformat()}"
    path, key = state_path(db_path), f"{scope.persona_id}/{scope.project_id}"
    said = _read(path)
    scopes = said.pop(session, {})
    before = [kind for kind in scopes.get(key, []) if isinstance(kind, str)]
    now = [kind for kind, _ in standing]  # what went away since is said again when it comes back
    if now != before:
        scopes[key] = now
        said[session] = scopes  # the newest session last
        _write(db_path, path, dict(list(said.items())[-KEPT:]))
    return [text for kind, text in standing if kind not in before]


def _session() -> int:
    """The terminal session: the session ID every process started from one shell shares."""
    try:
        return os.getsid(0)
    except (AttributeError, OSError):  # no sessions (Windows): one per day
        return 0


def _read(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)}


def _write(db_path: Path, path: Path, data: object) -> None:
    """Replace the file (never through a link); a failure only means a warning is said again."""
    try:
        files.private_dirs(db_path.parent)
        files.write_private(path, json.dumps(data))
    except OSError:
        pass
