"""Running an extraction command: the prompt in, at most a capped reply out, nothing left running after.

The command runs under providers/reaper.py in a session of its own, so a timeout (or a server that
stops) kills the whole tree it started, also what left its process group. Its standard output and
error are read as they come and capped while reading: a command that prints more than its cap is
killed and the run fails (`TooMuchOutput`), so a runaway CLI costs this process at most the caps.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass

REAPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reaper.py")
STDOUT_CAP = 4_000_000  # bytes: an extraction answer is a few kB
STDERR_CAP = 1_000_000
CHUNK = 65_536
KILL_WAIT = 5.0  # seconds a killed run is given to go before it is killed harder


class TooMuchOutput(Exception):
    """The command printed more than a cap allows on `stream` ("stdout" or "stderr")."""

    def __init__(self, stream: str, cap: int) -> None:
        super().__init__(f"{stream} over {cap:,} bytes")
        self.stream, self.cap = stream, cap


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: bytes
    stderr: bytes


def start(argv: tuple[str, ...], env: Mapping[str, str], cwd: str) -> subprocess.Popen[bytes]:
    """The command started under the reaper, in a session of its own. Raises OSError."""
    return subprocess.Popen(
        [sys.executable, "-I", REAPER, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env={**env, "MEMLIKEHUMAN_REAPER_PARENT": str(os.getpid())},
        start_new_session=True,
    )


def exchange(process: subprocess.Popen[bytes], data: bytes, timeout: float) -> Finished:
    """Write `data` to the command, read its output until it exits, within `timeout` seconds.

    Raises subprocess.TimeoutExpired or TooMuchOutput; the run is killed first either way."""
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    deadline = time.monotonic() + timeout
    caps = {process.stdout: ("stdout", STDOUT_CAP), process.stderr: ("stderr", STDERR_CAP)}
    got: dict[object, bytearray] = {process.stdout: bytearray(), process.stderr: bytearray()}
    pending = memoryview(data)
    try:
        with selectors.DefaultSelector() as selector:
            for stream in caps:
                selector.register(stream, selectors.EVENT_READ)
            _open_stdin(process, selector, pending)
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise subprocess.TimeoutExpired(process.args, timeout)
                for key, _ in selector.select(remaining):
                    if key.fileobj is process.stdin:
                        pending = _write(process, selector, pending)
                    else:
                        _read(key.fileobj, selector, got, caps)  # type: ignore[arg-type]
        returncode = process.wait(max(0.0, deadline - time.monotonic()))
    except BaseException:
        kill(process)
        raise
    _close_pipes(process)  # read to the end: the descriptors go now, not whenever the Popen is collected
    return Finished(returncode, bytes(got[process.stdout]), bytes(got[process.stderr]))


def _open_stdin(process: subprocess.Popen[bytes], selector: selectors.BaseSelector, pending: memoryview) -> None:
    assert process.stdin is not None
    if pending:
        os.set_blocking(process.stdin.fileno(), False)
        selector.register(process.stdin, selectors.EVENT_WRITE)
    else:
        process.stdin.close()


def _write(process: subprocess.Popen[bytes], selector: selectors.BaseSelector, pending: memoryview) -> memoryview:
    assert process.stdin is not None
    try:
        sent = os.write(process.stdin.fileno(), pending[:CHUNK])
    except BlockingIOError:
        return pending
    except BrokenPipeError:  # it stopped reading: its output says why
        sent = len(pending)
    pending = pending[sent:]
    if not pending:
        selector.unregister(process.stdin)
        process.stdin.close()
    return pending


def _read(
    stream: object, selector: selectors.BaseSelector, got: dict[object, bytearray], caps: dict[object, tuple[str, int]]
) -> None:
    chunk = os.read(stream.fileno(), CHUNK)  # type: ignore[attr-defined]
    if not chunk:
        selector.unregister(stream)  # type: ignore[arg-type]
        return
    got[stream] += chunk
    name, cap = caps[stream]
    if len(got[stream]) > cap:
        raise TooMuchOutput(name, cap)


def kill(process: subprocess.Popen[bytes]) -> None:
    """Stop the run and everything it started: SIGTERM to the reaper (which kills the tree), then
    SIGKILL to the session's group when it does not go in time; the pipes are closed, not drained."""
    with contextlib.suppress(OSError):
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(KILL_WAIT)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    _close_pipes(process)


def _close_pipes(process: subprocess.Popen[bytes]) -> None:
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
