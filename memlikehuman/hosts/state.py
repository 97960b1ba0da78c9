"""What the hooks leave beside the archive: when each last ran, and one log line per failure.

`<archive>.hooks.json` maps host -> event -> the time of its last successful run (for `doctor`);
`<archive>.hooks.log` gets one line per failure. Both are small, rewritten or appended by each run;
a lost update between two hooks finishing at once only makes a "last ran" time a moment older.
Per recent session: `<archive>.injected.json`, the keys of the records the prompt hook injected
("memory:" or "event:" and the row number), and `<archive>.replies.json`, whether the reply hook took the
latest reply. None of them holds text, nor a record ID (a hook's event ID holds a digest of its
text, and these files are not rewritten by a forget).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from .. import files


def state_path(db_path: Path) -> Path:
    """The last-run file of an archive."""
    return db_path.with_name(db_path.name + ".hooks.json")


def log_path(db_path: Path) -> Path:
    """The failure log of an archive."""
    return db_path.with_name(db_path.name + ".hooks.log")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _read_object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _replace(db_path: Path, path: Path, data: object) -> None:
    """Write `data` to `path` beside the archive by an atomic rename (raises OSError).

    A PostgreSQL archive's side files go to the user data directory, which may not exist yet."""
    files.private_dirs(db_path.parent)
    files.write_private(path, json.dumps(data))


def last_runs(db_path: Path) -> dict[str, dict[str, str]]:
    """host -> event -> last successful run; {} when no hook has run."""
    return _read_object(state_path(db_path))


def ran(db_path: Path, host: str, event: str) -> None:
    """Note a successful run (atomically replaced; never raises).

    A run within the same minute as the noted one writes nothing: `doctor` shows minutes, and a
    prompt hook saves the rewrite.
    """
    try:
        runs = last_runs(db_path)
        now = _now()
        noted = runs.get(host)
        if not isinstance(noted, dict):
            noted = runs[host] = {}
        if str(noted.get(event, ""))[:16] == now[:16]:
            return
        noted[event] = now
        _replace(db_path, state_path(db_path), runs)
    except OSError:
        pass


def failed(
    db_path: Path | None,
    host: str,
    event: str | None,
    exc: BaseException,
    stderr: TextIO,
    env: Mapping[str, str] | None = None,
) -> None:
    """One line on stderr and in the log beside the archive (when unknown, the default archive the
    environment `env` names, default this process's), unless the archive's directory is open to others
    (the archive is refused there: stderr only)."""
    text = " ".join(str(exc).split())[:500] or type(exc).__name__
    line = f"{_now()} memlikehuman hook {host or '?'} {event or ''}: {type(exc).__name__}: {text}".replace("  ", " ")
    with contextlib.suppress(OSError, ValueError):
        stderr.write(line + "\n")
    try:
        if db_path is None:
            from ..config import default_db_path

            db_path = default_db_path(env)
        files.private_dirs(db_path.parent)
        if files.open_to_others(db_path.parent) is None:  # else the archive was refused there: nothing goes in
            files.append_private(log_path(db_path), line + "\n")
    except OSError:
        pass


# -- what the prompt hook injected, per session ----------------------------------------------------

# Read on every prompt: at most ~20 x 200 IDs of ~90 bytes.
SESSIONS_KEPT = 20  # sessions whose injected records are remembered (the newest)
IDS_KEPT = 200  # records remembered per session


def injected_path(db_path: Path) -> Path:
    """The file of what the prompt hook injected in each recent session."""
    return db_path.with_name(db_path.name + ".injected.json")


def _injected_all(db_path: Path) -> dict[str, list[str]]:
    data = _read_object(injected_path(db_path))
    return {k: [i for i in v if isinstance(i, str)] for k, v in data.items() if isinstance(v, list)}


def injected(db_path: Path, session_id: str) -> list[str]:
    """The keys of the records the prompt hook injected earlier in this session ([] when none or unreadable).

    An item's key ("memory:" or "event:" and the row number) names no text: a hook's event ID holds a digest of
    its text, and this file is not rewritten when the record is forgotten.
    """
    return _injected_all(db_path).get(session_id, [])


def note_injected(db_path: Path, session_id: str, record_ids: list[str]) -> None:
    """Add record keys to the session's injected ones (atomically replaced; never raises).

    Two prompts of one session finishing at once may lose one's note: that record may then be
    injected once more, nothing worse.
    """
    if not record_ids:
        return
    try:
        sessions = _injected_all(db_path)
        ids = [*sessions.pop(session_id, []), *record_ids][-IDS_KEPT:]
        sessions[session_id] = list(dict.fromkeys(ids))  # the newest session last
        _replace(db_path, injected_path(db_path), dict(list(sessions.items())[-SESSIONS_KEPT:]))
    except OSError:
        pass


def forget_injected(db_path: Path, session_id: str) -> None:
    """Drop what the session's prompts were handed: its conversation no longer holds it (never raises)."""
    try:
        sessions = _injected_all(db_path)
        if sessions.pop(session_id, None) is not None:
            _replace(db_path, injected_path(db_path), sessions)
    except OSError:
        pass


# -- whether the reply hook handled the session's latest reply --------------------------------------
#
# PreCompact and SessionEnd record the transcript's final reply when the reply hook missed it (the
# user interrupted, the hook timed out, or the transcript was not written to its end when the reply
# hook read it). A reply the reply hook did take is not taken again: the user may have forgotten it
# since, and the transcript still holds it. The mark is PAYLOAD (the host sent the final reply with
# the hook) or the transcript message's own ID, never the reply's text or a digest of it; the prompt
# hook clears it when the next turn starts.
PAYLOAD = "payload"


def replies_path(db_path: Path) -> Path:
    """The file of the sessions whose latest reply the reply hook handled."""
    return db_path.with_name(db_path.name + ".replies.json")


def reply_mark(db_path: Path, session_id: str) -> str | None:
    """What the reply hook took as this session's latest reply (PAYLOAD or a transcript message ID)."""
    mark = _read_object(replies_path(db_path)).get(session_id)
    return mark if isinstance(mark, str) else None


def note_reply(db_path: Path, session_id: str, mark: str | None) -> None:
    """Set the session's mark (the reply hook) or clear it (None: a new prompt); never raises.

    Clearing writes only when the session is marked: once per turn, not on every prompt.
    """
    try:
        marks = _read_object(replies_path(db_path))
        if mark is None and session_id not in marks:
            return
        marks.pop(session_id, None)
        if mark is not None:
            marks[session_id] = mark  # the newest session last
        _replace(db_path, replies_path(db_path), dict(list(marks.items())[-SESSIONS_KEPT:]))
    except OSError:
        pass


# -- how far each session's start context went ---------------------------------------------------------
#
# A session's SessionStart context hands the scope as it was then; a resumed session (`claude -p --resume`,
# `codex exec resume`) keeps that context in its conversation, so its start hands only what changed since.
# The mark is two row numbers (the scope's newest event and memory), never text.


def starts_path(db_path: Path) -> Path:
    """The file of the marks of recent sessions' start contexts."""
    return db_path.with_name(db_path.name + ".starts.json")


def start_mark(db_path: Path, session_id: str) -> tuple[int, int] | None:
    """The (event, memory) mark of this session's start context, None when it had none (or unreadable)."""
    mark = _read_object(starts_path(db_path)).get(session_id)
    if isinstance(mark, list) and len(mark) == 2 and all(isinstance(n, int) for n in mark):
        return mark[0], mark[1]
    return None


def note_start(db_path: Path, session_id: str, mark: tuple[int, int]) -> None:
    """Keep the mark of the context this session's start handed (atomically replaced; never raises)."""
    try:
        marks = _read_object(starts_path(db_path))
        marks.pop(session_id, None)
        marks[session_id] = list(mark)  # the newest session last
        _replace(db_path, starts_path(db_path), dict(list(marks.items())[-SESSIONS_KEPT:]))
    except OSError:
        pass
