"""The hook forker: a process with the hooks' modules imported that forks a child per hook handed to it
(hosts/forward.py), so that a hook costs its work and not its imports.

The archive's warm process starts one (forward.start_forker) and holds its stdin: when the warm process ends, however
it ends, the forker sees the end of its stdin, removes its socket and exits. It listens on
`<archive key>.hooks.<installed code>.sock` (forward.socket_name) in the warm process's runtime directory
(channel.bind: 0600, the directory 0700) and serves only this user (SO_PEERCRED).

Single-threaded on purpose, and it opens no archive: fork copies only the calling thread, so a process
with other threads (the warm process's embedder, indexer, event loop) could leave its child a lock
held for ever. Each child opens the archive itself, exactly as a hook process does.

Protocol, one connection per hook: a JSON line `{"argv", "env", "cwd", "stdin": N, "encodings"}`, then
N bytes of the hook process's stdin. The child answers on the same connection: `started` as it begins,
then `ended STATUS OUT ERR` and that many bytes of the hook's stdout and stderr, which the hook process
writes out as its own. No descriptor crosses: a forker that stopped never holds the host's pipes open.
A request that is incomplete after REQUEST_SECONDS or malformed, or whose hook process has stopped
waiting (forward.STARTED_SECONDS), is closed unanswered: the hook runs in its own process.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .. import files
from . import channel

if TYPE_CHECKING:
    import selectors
    import socket

REQUEST_SECONDS = 2.0
# What a hook imports on its way (the prompt hook's search and the start hook's resume included).
PRELOADED = (
    "memlikehuman.hosts.hook",
    "memlikehuman.hosts.prompt_context",
    "memlikehuman.hosts.transcript",
    "memlikehuman.engine",
    "memlikehuman.retrieval.recall",
    "memlikehuman.retrieval.injection",
    "memlikehuman.sessions.context",
)


def main() -> None:
    """Import the hooks' modules, listen, fork a child per hook until stdin ends; then remove the socket."""
    files.restrict_umask()
    path = Path(sys.argv[1])
    for module in PRELOADED:
        importlib.import_module(module)
    gc.freeze()  # what the imports made stays put: the children share those pages
    sock, identity = channel.bind(path)
    try:
        Forker(sock).serve()
    finally:
        with contextlib.suppress(OSError):
            if channel.identity(os.lstat(path)) == identity:
                os.unlink(path)
    os._exit(0)


class Forker:
    """The listening socket and the loop that forks a child per request."""

    def __init__(self, listener: socket.socket) -> None:
        import selectors
        import signal

        self.listener = listener
        self.selector: selectors.BaseSelector = selectors.DefaultSelector()
        self.selector.register(listener, selectors.EVENT_READ, "accept")
        self.selector.register(0, selectors.EVENT_READ, "parent")
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the children are reaped by the kernel

    def serve(self) -> None:
        """Until the warm process's pipe ends."""
        while True:
            for key, _ in self.selector.select():
                if key.data == "parent":
                    if not os.read(0, 4096):
                        return
                else:
                    with contextlib.suppress(OSError):
                        self._accept()

    def _accept(self) -> None:
        connection, _ = self.listener.accept()
        with connection:
            try:
                request = _request(connection) if channel.peer_uid(connection) == os.getuid() else None
            except (OSError, ValueError):
                request = None
            if request is None or _gone(connection):  # a hook that stopped waiting runs by itself
                return
            if os.fork() == 0:
                _child(*request, connection.fileno())


def _gone(connection: socket.socket) -> bool:
    """Whether the hook process closed its end (it waited STARTED_SECONDS for us and went on by itself)."""
    import socket

    connection.setblocking(False)  # a socket with a timeout would wait for data even with MSG_DONTWAIT
    try:
        return connection.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _request(connection: socket.socket) -> tuple[dict[str, Any], bytes] | None:
    """The header and stdin bytes of one request; None when it is not one. Raises OSError."""
    connection.settimeout(REQUEST_SECONDS)
    buffer = bytearray()
    while b"\n" not in buffer and len(buffer) <= (1 << 20):
        chunk = connection.recv(65536)
        if not chunk:
            return None
        buffer += chunk
    line, _, rest = bytes(buffer).partition(b"\n")
    try:
        header = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not _well_formed(header):
        return None
    data = bytearray(rest)
    while len(data) < header["stdin"]:
        chunk = connection.recv(min(1 << 20, header["stdin"] - len(data)))
        if not chunk:
            return None
        data += chunk
    return header, bytes(data[: header["stdin"]])


def _well_formed(header: Any) -> bool:
    return (
        isinstance(header, dict)
        and isinstance(header.get("argv"), list)
        and all(isinstance(a, str) for a in header["argv"])
        and isinstance(header.get("env"), dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in header["env"].items())
        and isinstance(header.get("cwd"), str)
        and isinstance(header.get("stdin"), int)
        and header["stdin"] >= 0
        and isinstance(header.get("encodings"), list)
        and len(header["encodings"]) == 3
        and all(isinstance(e, list) and len(e) == 2 and all(isinstance(s, str) for s in e) for e in header["encodings"])
    )


def _child(header: dict[str, Any], data: bytes, connection: int) -> NoReturn:
    """In the forked child: become the hook process the request describes, run the hook, send its output."""
    import io
    import signal

    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.dup2(connection, 3)
        os.set_blocking(3, True)  # the forker peeked at it without blocking
        stdin = os.memfd_create("stdin", 0)
        view = memoryview(data)
        while view:
            view = view[os.write(stdin, view) :]
        os.lseek(stdin, 0, os.SEEK_SET)
        os.dup2(stdin, 0)
        os.closerange(4, 1 << 16)  # the forker's sockets and selector
        os.write(3, b"started\n")
        os.chdir(header["cwd"])
        os.environ.clear()
        os.environ.update(header["env"])
        (inp, in_errors), (out, out_errors), (err, err_errors) = header["encodings"]
        captured = io.BytesIO(), io.BytesIO()
        sys.stdin = open(0, encoding=inp, errors=in_errors, closefd=False)  # noqa: SIM115
        sys.stdout = io.TextIOWrapper(captured[0], encoding=out, errors=out_errors, write_through=True)
        sys.stderr = io.TextIOWrapper(captured[1], encoding=err, errors=err_errors, write_through=True)
        sys.argv = ["memlikehuman", "hook", *header["argv"]]
        from .entry import hook_status

        status = hook_status(header["argv"])
        written, said = captured[0].getvalue(), captured[1].getvalue()
        reply = f"ended {status} {len(written)} {len(said)}\n".encode() + written + said
        view = memoryview(reply)
        while view:
            view = view[os.write(3, view) :]
    finally:
        os._exit(0)
