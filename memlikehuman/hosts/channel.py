"""A local channel from `memlikehuman hook` processes to the `memlikehuman serve` processes of an archive.

A server has the embedder loaded; a hook has about 100 ms and cannot load it, so it asks a running
server (`ask`) and falls back to its own search when no trusted server answers (None).

Protocol: one Unix-socket connection per request. The client sends one line of JSON (an object,
`\\n`-terminated, at most MAX_LINE bytes); the server answers one line of JSON and closes. Error answers:
{"error": "bad_request"} (the line is not a JSON object), {"error": "internal"} (`answer` raised or gave
no JSON of at most MAX_LINE bytes; logged to stderr). A request line past MAX_LINE, or not complete
within CONNECTION_SECONDS: closed unanswered.

Where: in `runtime_dir()` (files.runtime_dir: $XDG_RUNTIME_DIR/memlikehuman, else a 0700 directory under
the user's cache directory; never /tmp), one socket file per listener, `<archive_key>-<pid>.sock`
(further listeners of one process: `<archive_key>-<pid>-<n>.sock`); a path longer than a socket address
holds (a long home directory) is bound and reached through /proc/self/fd/N of its directory
(`address`), so such a home does not turn the channel off. A socket is bound 0600 under a hidden name
and renamed into place once listening, so a visible socket file that refuses connections is stale; a
server starts listening only once it can answer at once (server/app.py warms it first), so a hook never
waits on a server that is still loading its embedder. A listener removes the socket files and rest marks
of servers that no longer run when it starts, and its own when it closes.

A hook asks every ready server of its archive at once and takes the first answer (`ask`); a server
that lets the time run out is marked resting and skipped for REST_SECONDS. A server answers at most
MAX_CONNECTIONS requests at a time and closes further connections unanswered.

Trust; whatever fails is ignored, never repaired, never deleted:
- the directory: a directory (not a symlink) owned by os.getuid(), no group/other permission bits;
- a socket file (lstat, before connecting): a socket owned by os.getuid(), no group/other bits;
- the peer, both ways: its SO_PEERCRED uid is os.getuid(); the server drops others unanswered.
Without AF_UNIX or SO_PEERCRED (not Linux) there is no channel: runtime_dir() returns None.
The hook imports this module: no logging, threading or hashlib at import time.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import stat
import struct
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import files
from ..text.digest import sha256_hex

if TYPE_CHECKING:
    import logging
    import socket
    import threading

MAX_LINE = 256 * 1024  # bytes of one request or answer line, without its newline
CONNECTION_SECONDS = 5.0  # the server's whole budget for one connection: read, answer, send
MAX_CONNECTIONS = 16  # requests answered at once; more connections are closed unanswered
REST_SECONDS = 60.0  # a server that let a hook's time run out is not asked again for this long
MAX_ADDRESS = 107  # bytes of a socket path that a Unix socket address holds (sun_path: 108 with its NUL)
LONGEST_WAIT = 60.0  # seconds of one socket operation at most (a hook host gives up by then; settimeout has a ceiling)
_UCRED = struct.Struct("i2I")  # struct ucred: pid_t pid, uid_t uid, gid_t gid
_SEQUENCE = itertools.count()  # tells apart the listeners of one process
_BAD_REQUEST = b'{"error":"bad_request"}\n'
_INTERNAL = b'{"error":"internal"}\n'

Answer = Callable[[dict[str, Any]], dict[str, Any]]


def runtime_dir(create: bool = True, env: Mapping[str, str] | None = None) -> Path | None:
    """The private directory for sockets (files.runtime_dir, in the environment `env`, default this
    process's); None (never raises) when it is missing or untrusted, or without AF_UNIX and SO_PEERCRED
    (not Linux). `create`: a listener's call; a client only looks."""
    import _socket  # the C module: `socket` itself costs a hook ~4 ms, paid only when a server is there

    if not hasattr(_socket, "AF_UNIX") or not hasattr(_socket, "SO_PEERCRED"):
        return None
    return files.runtime_dir(create, env)


def ours(info: os.stat_result) -> bool:
    return info.st_uid == os.getuid() and info.st_mode & 0o077 == 0


def archive_key(target: str) -> str:
    """A short name for an archive (a resolved file path or a PostgreSQL URL): its SHA-256, 16 hex digits."""
    return sha256_hex(target.encode("utf-8", "surrogateescape"))[:16]


class Listener:
    """Serves requests for one archive on <runtime_dir>/<archive_key>-<pid>.sock in a daemon thread.

    Each connection gets its own short-lived daemon thread (a slow client blocks no other), so `answer`
    may run in several threads at once.
    """

    def __init__(self, target: str, answer: Answer) -> None:
        import threading

        self._target, self._answer = target, answer
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._path: Path | None = None
        self._inode: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    @property
    def path(self) -> Path | None:
        """The socket file while serving, else None."""
        return self._path

    def start(self) -> Path | None:
        """Bind, listen and serve; the socket file, or None (a warning logged) when there is no channel."""
        import threading

        with self._lock:
            if self._socket is not None or self._closed:
                return self._path
            directory = runtime_dir()
            if directory is None:
                _log().warning("channel: no private runtime directory; hooks will search by themselves")
                return None
            n = next(_SEQUENCE)
            path = directory / f"{archive_key(self._target)}-{os.getpid()}{f'-{n}' if n else ''}.sock"
            try:
                self._socket, self._inode = bind(path)
            except OSError as error:
                _log().warning("channel: cannot listen on %s: %s", path, error)
                return None
            self._path = path
            _sweep(directory)
            self._thread = threading.Thread(target=self._serve, args=(self._socket,), name="channel", daemon=True)
            self._thread.start()
            return path

    def close(self) -> None:
        """Stop serving and remove the socket file if it is still the one bound; idempotent. A listener
        closed before it started never starts."""
        with self._lock:
            self._closed = True
            sock, path, inode, thread = self._socket, self._path, self._inode, self._thread
            self._socket = self._path = self._inode = self._thread = None
        if sock is None or path is None or thread is None:
            return
        import socket

        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        thread.join(CONNECTION_SECONDS)
        sock.close()
        with contextlib.suppress(OSError):
            if identity(os.lstat(path)) == inode:
                os.unlink(path)
        with contextlib.suppress(OSError):
            os.unlink(_rest_marker(path))  # a hook's mark of this server: gone with it

    def _serve(self, sock: socket.socket) -> None:
        import threading

        while True:
            try:
                connection, _ = sock.accept()
            except OSError as error:
                if self._socket is not sock:
                    return  # closed
                _log().warning("channel: accept failed on %s: %s", self._path, error)
                time.sleep(0.5)  # out of file descriptors, say: pause rather than spin
                continue
            if not self._slots.acquire(blocking=False):
                connection.close()  # MAX_CONNECTIONS already being answered: the hook falls back at once
                continue
            threading.Thread(target=self._handle, args=(connection,), name="channel-request", daemon=True).start()

    def _handle(self, connection: socket.socket) -> None:
        deadline = time.monotonic() + CONNECTION_SECONDS
        try:
            with connection, contextlib.suppress(OSError):
                if peer_uid(connection) != os.getuid():
                    return
                line = _read_line(connection, deadline)
                if line is not None:
                    reply = self._reply(line)
                    _budget(connection, deadline)
                    connection.sendall(reply)
        finally:
            self._slots.release()

    def _reply(self, line: bytes) -> bytes:
        try:
            request = json.loads(line)
        except (ValueError, RecursionError):
            request = None
        if not isinstance(request, dict):
            return _BAD_REQUEST
        try:
            return _encode(self._answer(request))
        except Exception:  # the edge of a request thread: log, answer an error, keep serving
            _log().exception("channel: answering a request failed")
            return _INTERNAL


def ask(
    target: str, request: dict[str, Any], timeout: float, env: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """Send one request to every ready server of this archive at once and return the first answer; never raises.

    None when no trusted server answers within `timeout` seconds in total (an answer that is not a JSON
    object or has an "error" key counts as none), or when the request is not JSON of at most MAX_LINE
    bytes (a warning is logged). A server that let the time run out (suspended, or busy) is marked
    and not asked again for REST_SECONDS, so that it does not cost every prompt its whole wait. A
    socket file that passes the trust checks but refuses connections is stale (ours, no longer
    listening): it is deleted. The servers are looked for where `env` (default: this process's
    environment) names (`client_dirs`).
    """
    deadline = time.monotonic() + timeout
    try:
        data = _encode(request)
    except (TypeError, ValueError) as error:
        _log().warning("channel: request not sent: %s", error)
        return None
    key = archive_key(target)
    found = [(path, info) for directory in client_dirs(env) for path, info in _candidates(directory, key)]
    candidates = [(path, info) for path, info in found if not _resting(path)]
    if not candidates:
        return None
    import selectors

    with selectors.DefaultSelector() as selector:
        exchanges = [x for path, info in candidates if (x := _Exchange.open(path, info, data, selector))]
        try:
            return _first_answer(selector, exchanges, deadline)
        finally:
            for exchange in exchanges:
                exchange.close(selector, timed_out=time.monotonic() >= deadline)


def _first_answer(selector: Any, exchanges: list[_Exchange], deadline: float) -> dict[str, Any] | None:
    open_ones = set(exchanges)
    while open_ones and (remaining := deadline - time.monotonic()) > 0:
        for key, events in selector.select(min(remaining, LONGEST_WAIT)):
            exchange: _Exchange = key.data
            if exchange.step(events, selector) and exchange.answer is not None:
                return exchange.answer
            if exchange.done:  # ended without an answer (an error, EOF): it is watched no longer
                open_ones.discard(exchange)
                with contextlib.suppress(KeyError, ValueError):
                    selector.unregister(exchange.sock)
    return None


class _Exchange:
    """One request to one server on a non-blocking socket: write the line, read one line back."""

    def __init__(self, path: Path, sock: socket.socket, data: bytes) -> None:
        self.path, self.sock = path, sock
        self.out, self.got = memoryview(data), bytearray()
        self.done = False
        self.answer: dict[str, Any] | None = None

    @classmethod
    def open(cls, path: Path, info: os.stat_result, data: bytes, selector: Any) -> _Exchange | None:
        """Connected and registered; None (a stale file deleted) when the server cannot be asked."""
        import selectors
        import socket

        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            with address(path) as where:
                sock.connect(where)
            if peer_uid(sock) != os.getuid():
                sock.close()
                return None
        except ConnectionRefusedError:
            sock.close()
            with contextlib.suppress(OSError):
                if identity(os.lstat(path)) == identity(info):  # still the file that passed the checks
                    os.unlink(path)
            return None
        except OSError:  # its backlog is full (EAGAIN), or it went away
            sock.close()
            return None
        exchange = cls(path, sock, data)
        selector.register(sock, selectors.EVENT_WRITE, exchange)
        return exchange

    def step(self, events: int, selector: Any) -> bool:
        """Go on after the selector's `events`; True when this exchange has ended."""
        import selectors

        try:
            if self.out:
                sent = self.sock.send(self.out)
                self.out = self.out[sent:]
                if not self.out:
                    selector.modify(self.sock, selectors.EVENT_READ, self)
                return False
            chunk = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            chunk = b""
        end = chunk.find(b"\n")
        self.got += chunk if end < 0 else chunk[:end]
        if chunk and end < 0 and len(self.got) <= MAX_LINE:
            return False
        self.done = True
        if end >= 0 and len(self.got) <= MAX_LINE:
            self.answer = _decoded(bytes(self.got))
        return True

    def close(self, selector: Any, *, timed_out: bool) -> None:
        """Unregister and close; a server that had not answered when the time ran out is marked resting."""
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(self.sock)
        self.sock.close()
        if timed_out and not self.done:
            marker = _rest_marker(self.path)
            with contextlib.suppress(OSError):
                if not files.create_private(marker):
                    os.utime(marker)


def connect(path: Path) -> socket.socket | None:
    """A blocking connection to the socket file `path` when it is a socket of ours (owner, mode) and the
    peer listening on it is this user; else None, never raises. (`ask` connects without blocking.)"""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISSOCK(info.st_mode) or not ours(info):
        return None
    import socket  # only with a socket there: `socket` costs a hook ~4 ms

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with address(path) as where:
            sock.connect(where)
        if peer_uid(sock) == os.getuid():
            return sock
    except OSError:
        pass
    sock.close()
    return None


def _decoded(line: bytes) -> dict[str, Any] | None:
    try:
        answer = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return answer if isinstance(answer, dict) and "error" not in answer else None


def _rest_marker(path: Path) -> Path:
    return path.with_name(path.name + ".resting")


def _resting(path: Path) -> bool:
    """Whether the server on `path` let a hook's time run out less than REST_SECONDS ago."""
    try:
        return time.time() - os.stat(_rest_marker(path)).st_mtime < REST_SECONDS
    except OSError:
        return False


def client_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """Where a hook looks for servers: the runtime directory its own environment (`env`, default this
    process's) names, and the one a server started with less of it uses (Codex starts MCP servers without
    XDG_RUNTIME_DIR): both are the user's own private directories. A hook without a server leaves no
    directory behind."""
    import _socket

    if not hasattr(_socket, "AF_UNIX") or not hasattr(_socket, "SO_PEERCRED"):
        return []
    home = {"HOME": str(files.home_dir(env))}  # the bare environment still has a home
    found = [files.runtime_dir(create=False, environ=env), files.runtime_dir(create=False, environ=home)]
    return list(dict.fromkeys(d for d in found if d is not None))


def _candidates(directory: Path, key: str) -> list[tuple[Path, os.stat_result]]:
    """The trusted socket files of an archive, newest first."""
    found = []
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.startswith(f"{key}-") and entry.name.endswith(".sock"):
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISSOCK(info.st_mode) and ours(info):
                        found.append((Path(entry.path), info))
    return sorted(found, key=lambda item: item[1].st_mtime_ns, reverse=True)


def _sweep(directory: Path) -> None:
    """Remove the socket files and rest marks of servers that no longer run (a server killed with SIGKILL
    cannot remove its own), and rest marks whose socket is gone. Only files of ours are touched."""
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in list(entries):
            if not _stale(directory, entry.name):
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if ours(info) and (stat.S_ISSOCK(info.st_mode) or stat.S_ISREG(info.st_mode)):
                    os.unlink(entry.path)


def _stale(directory: Path, name: str) -> bool:
    """Whether `name` is the socket file or rest mark of a server that no longer runs (the process ID is
    in the name), or a rest mark without its socket file."""
    sock = name.removesuffix(".resting")
    if not sock.endswith(".sock") or sock.startswith("."):
        return False
    if sock != name and not os.path.lexists(directory / sock):
        return True
    pid = sock.removesuffix(".sock").split("-")[1:2]
    return bool(pid) and pid[0].isdigit() and not _alive(int(pid[0]))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process of that number: alive
        return True
    return True


def bind(path: Path) -> tuple[socket.socket, tuple[int, int]]:
    """A socket listening on `path`, and the file's identity: made 0600 under a hidden name, renamed
    into place once listening. Raises OSError."""
    hidden = path.with_name(f".{path.name}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(hidden)  # left by a dead process of the same pid
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        # No umask change: it is process-wide, and the server's other threads may be creating files. The
        # directory is the user's alone (0700), so nobody else can reach the file before the chmod.
        with address(hidden) as where:
            sock.bind(where)
        os.chmod(hidden, 0o600)
        bound = identity(os.lstat(hidden))
        sock.listen(socket.SOMAXCONN)
        os.rename(hidden, path)
    except OSError:
        sock.close()
        with contextlib.suppress(OSError):
            os.unlink(hidden)
        raise
    return sock, bound


@contextlib.contextmanager
def address(path: Path) -> Iterator[str]:
    """What bind and connect take for `path`: the path when it fits a socket address, else the same file
    reached through a descriptor of its directory (/proc/self/fd/N/NAME), which fits whatever the home
    directory's length. Raises OSError (the directory is gone, or there is no /proc)."""
    if len(os.fsencode(path)) <= MAX_ADDRESS:
        yield str(path)
        return
    directory = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{directory}/{path.name}"
    finally:
        os.close(directory)


def identity(info: os.stat_result) -> tuple[int, int]:
    """A file's device and inode: what tells it from a file put in its place."""
    return info.st_dev, info.st_ino


def peer_uid(sock: socket.socket) -> int:
    import socket

    _, uid, _ = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
    return int(uid)


def _read_line(sock: socket.socket, deadline: float) -> bytes | None:
    """One line without its newline; None at EOF before a newline or past MAX_LINE. Raises OSError."""
    buffer = bytearray()
    while len(buffer) <= MAX_LINE:
        _budget(sock, deadline)
        chunk = sock.recv(65536)
        if not chunk:
            return None
        end = chunk.find(b"\n")
        buffer += chunk if end < 0 else chunk[:end]
        if end >= 0:
            return bytes(buffer) if len(buffer) <= MAX_LINE else None
    return None


def _budget(sock: socket.socket, deadline: float) -> None:
    """Give the socket's next operation what is left of the time; raises TimeoutError when nothing is."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError
    sock.settimeout(min(remaining, LONGEST_WAIT))


def _encode(message: dict[str, Any]) -> bytes:
    """One line of JSON (ASCII). Raises TypeError (not JSON-serializable), ValueError (past MAX_LINE)."""
    data = json.dumps(message, separators=(",", ":")).encode()
    if len(data) > MAX_LINE:
        raise ValueError(f"{len(data)} bytes of JSON: the channel carries at most {MAX_LINE}")
    return data + b"\n"


def _log() -> logging.Logger:
    import logging  # ~10 ms of start-up: only when there is something to log

    return logging.getLogger(__name__)
