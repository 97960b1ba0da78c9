"""Fixtures of the channel tests (tests/test_channel.py, tests/reliability/test_audit_channel.py).

Each test gets its own XDG_RUNTIME_DIR, XDG_CACHE_HOME and TMPDIR (short paths: a socket path holds at
most 107 bytes), so nothing touches the real runtime or cache directory.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from memlikehuman.hosts.channel import Listener

OTHER = 65534  # nobody
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")


class Dirs(NamedTuple):
    base: Path
    xdg: Path
    tmp: Path
    cache: Path

    @property
    def fallback(self) -> Path:
        """Where sockets go when XDG_RUNTIME_DIR cannot be used: under the user's own cache directory."""
        return self.cache / "memlikehuman" / "run"


@pytest.fixture
def dirs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Dirs]:
    base = Path(tempfile.mkdtemp(prefix="mlh-", dir="/tmp" if os.path.isdir("/tmp") else None))
    found = Dirs(base, base / "xdg", base / "tmp", base / "cache")
    for directory in (found.xdg, found.tmp):
        directory.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(found.xdg))
    monkeypatch.setenv("TMPDIR", str(found.tmp))
    monkeypatch.setenv("XDG_CACHE_HOME", str(found.cache))
    yield found
    shutil.rmtree(base)


@pytest.fixture
def serve(dirs: Dirs) -> Iterator[Callable[..., Listener]]:
    """Start a listener (closed at teardown); `answer` defaults to one that names its archive."""
    started: list[Listener] = []

    def start(target: str, answer: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> Listener:
        listener = Listener(target, answer or (lambda request: {"target": target, "request": request}))
        started.append(listener)
        assert listener.start() is not None
        return listener

    yield start
    for listener in started:
        listener.close()


class Recorder:
    """An `answer` that records the requests it gets."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.calls: list[dict[str, Any]] = []

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(request)
        return self.reply


def path_of(listener: Listener) -> Path:
    assert listener.path is not None
    return listener.path


def path_of_started(listener: Listener) -> Path:
    path = listener.start()
    assert path is not None
    return path


def stale_socket(directory: Path, name: str) -> Path:
    """A socket file, 0600 and ours, that nothing listens on any more."""
    path = directory / name
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))
    os.chmod(path, 0o600)
    future = time.time_ns() + 10**10  # the newest file: tried first
    os.utime(path, ns=(future, future))
    return path
