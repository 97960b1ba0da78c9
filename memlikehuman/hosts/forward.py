"""A hook handed to the archive's warm process: the process imports nothing of the engine, only passes
its arguments, environment, working directory and stdin on, writes out what comes back, and exits.

Most of a hook's time is its imports (bench/hooks.py: ~140 of ~150-200 ms). While the archive's warm
process runs (server/warm.py), its hook forker (hosts/zygote.py) has them loaded: it forks a child per
hook that takes this process's environment, working directory, argument list and stdin and runs the
very same hook code (`entry.hook_status`), so the result is the one this process would have had; the
child sends back the hook's stdout and stderr, which this process writes as its own, and its status.

The hook runs here instead (`forward` returns None, stdin put back) when: neither `--db` (installed
hooks always give it) nor MEMLIKEHUMAN_DB names the archive; no forker of this archive and this
installed package listens; the payload names neither a session nor a transcript (such a session is
keyed by the process that started the hook, `adapters._host_process`, which only this process knows);
the working directory is gone; the forker does not start the hook within STARTED_SECONDS (suspended,
say: it then sees this process gone and starts none); or the child ends without its answer. Trust as
the channel's (hosts/channel.py): a socket of this user, 0600, in the private runtime directory, and
the peer's uid checked.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

from .. import __version__
from ..text.digest import sha256_hex
from . import channel

SUFFIX = ".sock"
_FORKER = "from memlikehuman.hosts.zygote import main; main()"
STARTED_SECONDS = 1.0  # how long a hook waits for the forker to start its child before it runs here
_URLS = ("postgresql://", "postgres://")  # archive/db.URL_PREFIXES, without importing apsw here


def installed() -> str:
    """What names the installed code: version, interpreter, package directory and its modification time
    (a new install or upgrade changes it)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return f"{__version__}|{os.path.realpath(sys.executable)}|{package}|{os.stat(package).st_mtime_ns}"


def socket_name(target: str) -> str:
    """The forker's socket file name for an archive (its URL or resolved path) and this installed code."""
    return (
        f"{channel.archive_key(target)}.hooks.{sha256_hex(installed().encode('utf-8', 'surrogateescape'))[:16]}{SUFFIX}"
    )


def start_forker(path: Path) -> tuple[int, int]:
    """Start a hook forker (hosts/zygote.py) listening on `path`, its stdin a pipe whose writing end is
    returned with its process ID: keep that end open for as long as the forker is to run. With `python -P`,
    as the warm process: no folder of the working directory stands in for ours. Raises OSError."""
    read, write = os.pipe()
    os.set_inheritable(read, True)
    actions = [(os.POSIX_SPAWN_DUP2, read, 0), (os.POSIX_SPAWN_CLOSE, read)]
    try:
        argv = [sys.executable, "-P", "-c", _FORKER, str(path)]
        pid = os.posix_spawn(sys.executable, argv, os.environ, file_actions=actions)
    finally:
        os.close(read)
    return pid, write


def forward(argv: list[str]) -> int | None:
    """Run `memlikehuman hook ARGV` in a child of the archive's hook forker; its exit status, or None (with
    stdin put back for the hook to read here) when it must run in this process."""
    raw = getattr(sys.stdin, "buffer", None)
    if raw is None:
        return None  # a text stream with no bytes below it (an embedding caller's): nothing to hand on
    data = raw.read()
    status = None
    with contextlib.suppress(OSError, ValueError):
        status = _forwarded(argv, data)
    if status is None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding=sys.stdin.encoding, errors=sys.stdin.errors)
    return status


def _forwarded(argv: list[str], data: bytes) -> int | None:
    db = _db(argv) or os.environ.get("MEMLIKEHUMAN_DB")
    if not db or not _keyed(data):
        return None
    name = socket_name(db if db.startswith(_URLS) else str(Path(db).expanduser().resolve()))
    sock = next((s for d in channel.client_dirs() if (s := channel.connect(d / name)) is not None), None)
    if sock is None:
        return None
    with sock:
        header = {
            "argv": argv,
            "env": dict(os.environ),
            "cwd": os.getcwd(),
            "stdin": len(data),
            "encodings": [[s.encoding, s.errors] for s in (sys.stdin, sys.stdout, sys.stderr)],
        }
        sock.sendall(json.dumps(header).encode() + b"\n" + data)
        return _answer(sock)


def _db(argv: list[str]) -> str | None:
    """The archive the hook's --db names (`--db X` or `--db=X`), else None."""
    for n, arg in enumerate(argv):
        if arg == "--db" and n + 1 < len(argv):
            return argv[n + 1]
        if arg.startswith("--db="):
            return arg.removeprefix("--db=")
    return None


def _keyed(data: bytes) -> bool:
    """Whether the payload names its session or transcript (adapters.session_of keys it without this process)."""
    try:
        payload: Any = json.loads(data)
    except (ValueError, RecursionError):
        return False
    if not isinstance(payload, dict):
        return False
    named = [payload.get(key) for key in ("session_id", "conversation_id", "sessionId", "transcript_path")]
    return any((isinstance(v, str) and v) or (isinstance(v, int | float) and not isinstance(v, bool)) for v in named)


def _answer(sock: Any) -> int | None:
    """The child's status, its stdout and stderr written out as ours; None when the forker started no
    child within STARTED_SECONDS or the child ended without its answer (the hook then runs here)."""
    sock.settimeout(STARTED_SECONDS)
    with sock.makefile("rb") as reader:
        if reader.readline() != b"started\n":
            return None
        sock.settimeout(None)  # the child runs the hook: the host's own timeout is the bound
        ended = reader.readline().split()
        if len(ended) != 4 or ended[0] != b"ended" or not all(f.lstrip(b"-").isdigit() for f in ended[1:]):
            return None
        status, out, err = (int(f) for f in ended[1:])
        written, said = reader.read(out), reader.read(err)
    if len(written) != out or len(said) != err:
        return None
    for fd, data in ((2, said), (1, written)):
        view = memoryview(data)
        with contextlib.suppress(OSError):  # a host that stopped reading: nothing to save
            while view:
                view = view[os.write(fd, view) :]
    return status
