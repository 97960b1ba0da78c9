"""`memlikehuman serve` at the end of stdin: every call already read is answered, then the process exits
at once and cleanly, also while the local embedder is busy (a real subprocess, raw stdio).

A host that is done writes its last calls and closes stdin: the answers must still come, the recorded
events must be in the archive, and the process must not linger (nor die of SIGABRT: onnxruntime
running in the indexer's thread while the interpreter tears down).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import BASE_ENV, make_settings

from memlikehuman.admin.stats import ScopeStats
from memlikehuman.engine import Engine

EXIT_SECONDS = 1.0  # from the last answer to the process's end
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}


def _rpc(message_id: int, method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": message_id, "method": method, "params": params}) + "\n"


def _call(message_id: int, tool: str, **arguments: Any) -> str:
    return _rpc(message_id, "tools/call", {"name": tool, "arguments": arguments})


def _record(message_id: int, event_id: str, text: str) -> str:
    return _call(message_id, "memory_record", event_id=event_id, text=text, role="user", source="chat")


@dataclass
class Ended:
    answers: dict[int, dict[str, Any]]
    status: int
    after_last_answer: float  # seconds from the last answer to the process's end
    stderr: str


def _serve_until_stdin_ends(db: Path, calls: list[str], **env: str) -> Ended:
    """Start serve, write initialize, initialized and `calls`, close stdin at once, read to the end."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlikehuman", "serve", "--db", str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **BASE_ENV, **env},
    )
    assert proc.stdin and proc.stdout and proc.stderr
    initialized = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
    proc.stdin.write("".join([_rpc(1, "initialize", INIT), initialized, *calls]).encode())
    proc.stdin.close()
    answers: dict[int, dict[str, Any]] = {}
    last = time.monotonic()
    for line in proc.stdout:
        message = json.loads(line)
        if "id" in message:
            answers[message["id"]] = message
            last = time.monotonic()
    status = proc.wait(timeout=60)
    ended = time.monotonic()
    stderr = proc.stderr.read().decode()
    proc.stdout.close()
    proc.stderr.close()
    return Ended(answers, status, ended - last, stderr)


def _totals(db: Path, **env: str) -> ScopeStats:
    """What the archive holds, over every scope."""
    with Engine(make_settings(db, **env)) as engine:
        return engine.stats().totals()


def _results(ended: Ended, ids: range) -> list[dict[str, Any]]:
    missing = [i for i in ids if i not in ended.answers]
    assert not missing, f"calls left unanswered: {missing}; stderr: {ended.stderr[-2000:]}"
    results = [ended.answers[i].get("result") or {} for i in ids]
    assert all(result and not result.get("isError") for result in results), [ended.answers[i] for i in ids]
    return results


def test_calls_sent_with_stdin_closed_right_after_them_are_all_answered_and_serve_exits_at_once(tmp_path: Path):
    db = tmp_path / "memory.sqlite3"
    calls = [
        _record(2, "e-1", "I drink green tea every morning"),
        _record(3, "e-2", "The staging server moved to port 8443"),
        _call(4, "memory_recall", query="tea"),
        _call(5, "session_resume"),
        _record(6, "e-3", "Our standup is at nine"),
    ]
    ended = _serve_until_stdin_ends(db, calls)
    results = _results(ended, range(2, 7))
    assert [results[i]["structuredContent"]["event_id"] for i in (0, 1, 4)] == ["e-1", "e-2", "e-3"]
    assert ended.status == 0, ended.stderr[-2000:]
    assert ended.after_last_answer < EXIT_SECONDS, f"{ended.after_last_answer:.2f} s after the last answer"
    assert _totals(db).events == 3


@pytest.mark.lifecycle
def test_serve_ends_cleanly_at_once_while_the_local_embedder_is_busy_with_long_events(tmp_path: Path):
    db = tmp_path / "memory.sqlite3"
    count = 48
    long = " ".join(f"note {n} about the harbour, the ferry times and the weather at sea" for n in range(400))
    calls = [_record(2 + n, f"long-{n}", f"{n}: {long}") for n in range(count)]
    ended = _serve_until_stdin_ends(db, calls, MEMLIKEHUMAN_EMBEDDER="local")
    _results(ended, range(2, 2 + count))
    assert ended.status == 0, f"status {ended.status} (-6: SIGABRT); stderr: {ended.stderr[-2000:]}"
    assert "terminate called" not in ended.stderr and "Traceback" not in ended.stderr, ended.stderr[-2000:]
    assert ended.after_last_answer < EXIT_SECONDS, f"{ended.after_last_answer:.2f} s after the last answer"
    totals = _totals(db, MEMLIKEHUMAN_EMBEDDER="local")
    assert totals.events == count
    # The embedder was still at work when stdin ended: what it had not embedded is embedded later.
    assert totals.vectors_missing
