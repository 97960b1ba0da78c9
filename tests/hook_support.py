"""Running `memlikehuman hook` exactly as a host does: a subprocess with JSON on stdin, a cwd and an env."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
from conftest import BASE_ENV

SCRIPT = Path(sys.executable).with_name("memlikehuman")


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_hook(host: str, payload: dict[str, Any] | str, db: Path, cwd: Path, *args: str, **env: str) -> Ran:
    """Run the installed console script the way the host's settings run it."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(db.parent / "home"),
        **BASE_ENV,
        "MEMLIKEHUMAN_DB": str(db),
        **env,
    }
    done = subprocess.run(
        [str(SCRIPT), "hook", host, *args],
        input=data.encode(),
        capture_output=True,
        cwd=cwd,
        env=environment,
        timeout=60,
        check=False,
    )
    return Ran(done.returncode, done.stdout.decode(), done.stderr.decode())


def stored(db: Path) -> list[dict[str, Any]]:
    """Every event row of the archive, oldest first (read straight from the file)."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        names = ["event_id", "persona_id", "project_id", "session_id", "role", "source", "text"]
        cursor = conn.execute(f"SELECT {', '.join(names)} FROM events ORDER BY sequence")
        return [dict(zip(names, row, strict=True)) for row in cursor]
    finally:
        conn.close()


def checkpoints_of(db: Path) -> list[dict[str, Any]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        cursor = conn.execute("SELECT session_id, covered_event_id, state FROM checkpoints ORDER BY id")
        return [{"session_id": s, "covered_event_id": c, "state": json.loads(st)} for s, c, st in cursor]
    finally:
        conn.close()


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
