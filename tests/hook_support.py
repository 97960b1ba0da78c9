"""Running `memlikehuman hook` with what a host hands it: JSON on stdin, its options, a cwd and an env.

`run_hook` calls the hook's logic (hosts/hook.run) in the test process, handing it that environment
and working directory (hook.Surroundings) instead of the test process's; `spawn_hook` starts the
console script as the host does, for tests about the process itself (its exit, its bytes on stdout,
its umask, its imports, its timeout, the warm process's forker).

The archive a hook is pointed at is a SQLite file or a PostgreSQL URL (the `db` fixture runs both).
Each run gets its own HOME and XDG_DATA_HOME: a URL archive's side files (the hooks' log and state)
live in the user data directory, so a test never writes to the real one (``side_file``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import pytest
from conftest import BASE_ENV
from pg_support import server_database

from memlikehuman.archive.db import is_url, open_database
from memlikehuman.hosts import hook

SCRIPT = Path(sys.executable).with_name("memlikehuman")
Archive: TypeAlias = Path | str  # what a hook is pointed at: a SQLite file or a PostgreSQL URL
# A URL archive -> the HOME its hooks run with (set by the `db` fixture; a file's is beside it).
HOMES: dict[str, Path] = {}


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture(name="db")
def hook_archive(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Path | str:
    """The archive a hook is pointed at, of each backend in turn (not created until a hook writes).

    A module of hook tests imports this fixture to run on both backends: a SQLite file under
    tmp_path/data, or a fresh PostgreSQL database whose hooks run with HOME tmp_path/data/home.
    """
    if backend != "sqlite":
        url = str(request.getfixturevalue(server_database(backend)))
        HOMES[url] = tmp_path / "data" / "home"
        return url
    return tmp_path / "data" / "memory.sqlite3"


def home_of(db: Path | str) -> Path:
    """The HOME the hooks of this archive run with."""
    return HOMES[str(db)] if is_url(db) else Path(db).parent / "home"


def side_file(db: Path | str, suffix: str) -> Path:
    """Where a hook keeps a side file (suffix ".hooks.log" or ".hooks.json") of this archive.

    A file's are beside it; a URL's in the user data directory, named after a digest of the URL.
    """
    if not is_url(db):
        return Path(f"{db}{suffix}")
    digest = hashlib.sha256(str(db).encode()).hexdigest()[:16]
    return home_of(db) / ".local" / "share" / "memlikehuman" / f"postgres-{digest}{suffix}"


def run_hook(
    host: str,
    payload: dict[str, Any] | str,
    db: Path | str,
    cwd: Path,
    *args: str,
    timeout: float | None = None,
    **env: str,
) -> Ran:
    """`memlikehuman hook HOST ARGS`'s logic (hosts/hook.run) on this payload, in the environment and working
    directory `spawn_hook` would start the process with, the test process as the process that started it.

    Its stdout and stderr are what the hook wrote to them, and what it logged at WARNING or above (a
    process's logging writes that to stderr); its returncode what `run` returns. With `timeout`, the call
    runs on a thread of its own and raises subprocess.TimeoutExpired when it outlives `timeout` seconds
    (the thread is left to end by itself)."""
    call = _call(host, payload, db, cwd, args, env)
    around = hook.Surroundings(call["env"], cwd, os.getpid())
    stdin = io.StringIO(call["input"].decode("utf-8", "surrogateescape"))
    stdout, stderr = io.StringIO(), io.StringIO()
    ran: list[int] = []

    def call_hook() -> None:
        with _logged_to(stderr):
            ran.append(hook.run(hook.options_of(call["args"][2:]), stdin, stdout, stderr, around))

    if timeout is None:
        call_hook()
    else:
        thread = threading.Thread(target=call_hook, name="hook", daemon=True)
        thread.start()
        thread.join(timeout)
        if thread.is_alive():
            raise subprocess.TimeoutExpired(call["args"], timeout)
    return Ran(ran[0], stdout.getvalue(), stderr.getvalue())


@contextlib.contextmanager
def _logged_to(stream: io.StringIO) -> Iterator[None]:
    """What this thread logs at WARNING or above, written to `stream` as a process's last-resort handler would."""
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.WARNING)
    thread = threading.get_ident()
    handler.addFilter(lambda record: record.thread == thread)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


def spawn_hook(
    host: str, payload: dict[str, Any] | str, db: Path | str, cwd: Path, *args: str, timeout: float = 60, **env: str
) -> Ran:
    """`memlikehuman hook HOST ARGS` as the host runs it: the console script in a new process (TimeoutExpired
    past `timeout`), for tests about the process itself."""
    call = _call(host, payload, db, cwd, args, env)
    return _ran(subprocess.run(**call, capture_output=True, timeout=timeout, check=False))


def run_command(command: str, payload: dict[str, Any], cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """Run a hook command as written in a host's config, through a shell as the host runs it."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), **BASE_ENV}
    data = json.dumps(payload)
    return subprocess.run(
        command, shell=True, input=data, capture_output=True, text=True, cwd=cwd, env=env, check=False
    )


def spawn_hook_from_new_parent(host: str, payload: dict[str, Any] | str, db: Path | str, cwd: Path, **env: str) -> Ran:
    """`spawn_hook` started by a process of its own, as another host process would start it."""
    call = _call(host, payload, db, cwd, (), env)
    relay = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"
    call["args"] = [sys.executable, "-c", relay, *call["args"]]
    return _ran(subprocess.run(**call, capture_output=True, timeout=60, check=False))


def _call(
    host: str, payload: dict[str, Any] | str, db: Path | str, cwd: Path, args: tuple[str, ...], env: dict[str, str]
) -> dict[str, Any]:
    """What subprocess.run takes for one hook run: argv, stdin, working directory and environment."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    home = home_of(db)
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        **BASE_ENV,
        "MEMLIKEHUMAN_DB": str(db),
        **env,
    }
    return {"args": [str(SCRIPT), "hook", host, *args], "input": data.encode(), "cwd": cwd, "env": environment}


def _ran(done: subprocess.CompletedProcess[bytes]) -> Ran:
    return Ran(done.returncode, done.stdout.decode(), done.stderr.decode())


def injected_records(ran: Ran) -> list[dict[str, Any]]:
    """The JSON records of the data block a prompt hook injected (Claude Code's and Codex's answer); [] without one.

    The block opens with a line «DATA n recalled» and closes with «END n recalled», n random per prompt;
    each line between is one JSON object (hosts/prompt_context.py)."""
    if not ran.stdout.strip():
        return []
    context = ran.json()["hookSpecificOutput"]["additionalContext"]
    lines = context.splitlines()
    opening = [i for i, line in enumerate(lines) if line.startswith("«DATA ") and line.endswith(" recalled»")]
    if not opening:
        return []
    boundary = lines[opening[0]].split()[1]
    closing = lines.index(f"«END {boundary} recalled»")
    return [json.loads(line) for line in lines[opening[0] + 1 : closing]]


def _rows(db: Path | str, sql: str) -> list[dict[str, Any]]:
    """The rows of a query on the archive; none when no hook has created it yet."""
    if not is_url(db) and not Path(db).exists():
        return []
    opened = open_database(db)
    try:
        if is_url(db) and not opened.scalar("SELECT to_regclass('events') IS NOT NULL AS created"):
            return []
        return list(opened.query(sql))
    finally:
        opened.close()


def missing_vectors(db: Path | str, persona: str | None = None) -> int:
    """How many events (of `persona`, or of all) have no vector yet."""
    sql = "SELECT count(*) AS n FROM events e LEFT JOIN event_vectors v ON v.event_sequence = e.sequence"
    sql += " WHERE v.event_sequence IS NULL" + ("" if persona is None else f" AND e.persona_id = '{persona}'")
    rows = _rows(db, sql)
    return int(rows[0]["n"]) if rows else 0


def stored(db: Path | str) -> list[dict[str, Any]]:
    """Every event row of the archive, oldest first (read straight from the database)."""
    columns = "event_id, persona_id, project_id, session_id, role, source, text"
    return _rows(db, f"SELECT {columns} FROM events ORDER BY sequence")


def checkpoints_of(db: Path | str) -> list[dict[str, Any]]:
    found = _rows(db, "SELECT session_id, covered_event_id, state FROM checkpoints ORDER BY id")
    return [{**row, "state": row["state"] and json.loads(row["state"])} for row in found]


def write_transcript(path: Path, session_id: str, turns: list[tuple[str, str]]) -> Path:
    """A Claude Code session transcript (JSONL) with the given (role, text) turns."""
    lines = [{"type": "summary", "summary": "an earlier summary line", "leafUuid": "leaf-0"}]
    parent = None
    for number, (role, text) in enumerate(turns):
        uuid = f"{session_id}-u{number}"
        message: dict[str, Any]
        if role == "user":
            message = {"role": "user", "content": text}
        else:
            message = {
                "id": f"msg_{number}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [
                    {"type": "text", "text": text},
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {}},
                ],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
        lines.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": str(path.parent),
                "sessionId": session_id,
                "version": "2.1.0",
                "gitBranch": "main",
                "type": role,
                "message": message,
                "uuid": uuid,
                "timestamp": f"2026-11-30T10:{number:02d}:00.000Z",
            }
        )
        parent = uuid
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path
