"""`memlikehuman serve` as a relay: the host's stdio copied to and from the archive's warm process.

A host waits for its MCP server's answer to `initialize` (Claude Code's `claude -p` with the
`alwaysLoad` entry install writes waits before the first model request), and a server of its own
first imports the MCP SDK (about 0.6 s, more on a busy machine). The warm process (server/warm.py)
has it loaded: `serve` connects to its socket, starting it when none runs, names its scope defaults,
and from then on only copies bytes, both ways, until the warm process closes the session (after the
host's stdin ended and every call read was answered) or a signal ends it.

`relay` returns None, and `serve` runs in its own process as before, when the settings keep no warm
process (hosts/warm.wanted), with the sampling extractor (its model is this host's own client's),
without a private runtime directory, or when no warm process answers within START_SECONDS.
Imports nothing of the MCP SDK, the engine or the archive.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from typing import TYPE_CHECKING

from . import channel, warm

if TYPE_CHECKING:
    import socket

    from ..config import Settings

START_SECONDS = 15.0  # how long `serve` waits for a warm process to start before serving by itself
HELLO_SECONDS = 5.0
CHUNK = 65536
BACKLOG = 4 * CHUNK  # bytes of the host's input held while the warm process reads slowly


def relay(db: str | None) -> int | None:
    """Relay this process's stdio to the warm process of `db`'s settings; the exit status, or None when
    this `serve` must serve by itself (nothing was read from stdin then)."""
    from .. import config
    from ..errors import MemLikeHumanError

    try:
        settings = config.load(db)
    except MemLikeHumanError:
        return None  # serve says what is wrong
    if not warm.wanted(settings) or settings.extractor == "sampling":
        return None
    directory = channel.runtime_dir(create=True)
    if directory is None:
        return None
    sock = _session(warm.Place(directory, warm.name(settings)), settings, db)
    if sock is None:
        return None
    for number in (signal.SIGINT, signal.SIGTERM):  # the host's stop signals: exit at once, as serve does
        signal.signal(number, lambda *_: os._exit(0))
    return _pump(sock)


def _session(place: warm.Place, settings: Settings, db: str | None) -> socket.socket | None:
    """A connection whose session the warm process accepted, starting the process when none runs; None
    when ours ended without listening, or after START_SECONDS."""
    deadline = time.monotonic() + START_SECONDS
    child: int | None = None
    while time.monotonic() < deadline:
        sock = channel.connect(place.socket)
        if sock is not None:
            said = _hello(sock, settings)
            if said.get("ok"):
                return sock
            sock.close()
            if said.get("busy"):
                return None
            # no answer: it was ending (idle), and the next one starts
        if warm.holder(place.lock) is None:  # nobody runs it or is starting it
            if child is not None and _ended(child):
                return None  # ours could not start (its log says why): serve by ourselves
            if child is None or _ended(child):
                child = warm.spawn(db)
        time.sleep(0.01)
    return None


def _hello(sock: socket.socket, settings: Settings) -> dict[str, bool]:
    """Name the session's scope defaults; the warm process's answer: {"ok": true}, {"busy": true} (it
    serves as many sessions as it takes), or {} (no answer: it was ending)."""
    hello = {"op": "mcp", "persona_id": settings.persona_id, "project_id": settings.project_id}
    try:
        sock.settimeout(HELLO_SECONDS)
        sock.sendall(json.dumps(hello).encode() + b"\n")
        answer = b""
        while not answer.endswith(b"\n") and len(answer) < 4096:
            chunk = sock.recv(4096)
            if not chunk:
                return {}
            answer += chunk
        said = json.loads(answer)
    except (OSError, ValueError, RecursionError):
        return {}
    return said if said in ({"ok": True}, {"busy": True}) else {}


def _ended(pid: int) -> bool:
    """Whether our child `pid` has ended (and is reaped)."""
    with contextlib.suppress(ChildProcessError):
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    return True


def _pump(sock: socket.socket) -> int:
    """Copy stdin to the socket and the socket to stdout until the warm process closes the session; 0."""
    return _Pump(sock).run()


class _Pump:
    """Both directions of one relayed session on a non-blocking socket.

    The end of stdin is passed on as the end of what the socket sends, once everything read is sent
    (the warm process then answers every call read and closes); a host that stops reading stdout ends
    the relay. At most BACKLOG bytes of stdin are held while the warm process reads slowly."""

    def __init__(self, sock: socket.socket) -> None:
        import selectors

        self.sock, self.pending, self.reading, self.shut = sock, bytearray(), True, False
        sock.setblocking(False)
        self.selector = selectors.PollSelector()  # poll, not epoll: stdin may be a regular file
        self.selector.register(sock, selectors.EVENT_READ)

    def run(self) -> int:
        import selectors

        while True:
            self._plan()
            for key, events in self.selector.select():
                if key.fileobj != self.sock:
                    self._read_stdin()
                    continue
                if events & selectors.EVENT_WRITE:
                    self._send()
                if events & selectors.EVENT_READ and not self._forward():
                    return 0

    def _plan(self) -> None:
        """Wait for stdin while little is held and it has not ended, for the socket's room while something is held."""
        import selectors
        import socket

        wanted = self.reading and len(self.pending) < BACKLOG
        if wanted != (0 in self.selector.get_map()):
            if wanted:
                self.selector.register(0, selectors.EVENT_READ)
            else:
                self.selector.unregister(0)
        self.selector.modify(self.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if self.pending else 0))
        if not self.reading and not self.pending and not self.shut:
            self.shut = True
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_WR)

    def _read_stdin(self) -> None:
        data = os.read(0, CHUNK)
        self.pending += data
        self.reading = bool(data)

    def _send(self) -> None:
        with contextlib.suppress(BlockingIOError):
            del self.pending[: self.sock.send(self.pending)]

    def _forward(self) -> bool:
        """One read from the socket written to stdout; False once the session or stdout has ended."""
        try:
            data = self.sock.recv(CHUNK)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(1, view) :]
        except OSError:
            return False
        return True
