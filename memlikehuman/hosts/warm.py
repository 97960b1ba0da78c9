"""The archive's warm process as hooks and `serve` see it: whether it runs, starting it, stopping it.

One process per archive and settings (server/warm.py) keeps the archive open with the embedder
loaded, runs the indexer and the extraction worker, answers the hooks' channel (hosts/channel.py)
and serves the MCP sessions that `memlikehuman serve` relays to it (hosts/relay.py). It is started
on demand, detached: by a hook that finds none of its archive running (the hook never waits for it)
or by `serve`. It exits after MEMLIKEHUMAN_WARM_IDLE seconds without a session, a hook or a new
record (server/warm.py says when else).

Its files, in the private runtime directory of the channel (files.runtime_dir), owner-only:
- `<name>.lock`, name `<archive key>.<settings key>`: the process holds an exclusive flock on it for
  its whole life and writes its process ID into it. Held means running or starting, and the kernel
  releases it however the process ends: at most one runs per name;
- `<name>.sock`: its MCP socket, bound 0600 (channel.bind) once it can answer `initialize`;
- `<archive key>.hooks.<installed code>.sock`: its hook forker's (hosts/zygote.py, hosts/forward.py).
The settings key is a digest of the settings the process runs with (the scope defaults and the
hooks' own settings left out: each session and request carries those) and of the installed package,
so that another configuration or an upgrade gets a process of its own.

Wanted when MEMLIKEHUMAN_WARM_IDLE > 0 and an embedder is configured, never inside an extraction
command's run. The hooks import this module: nothing beyond os, stat, fcntl and our small modules.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .. import files
from ..text.digest import sha256_hex
from . import channel, forward
from .prompt_context import target

if TYPE_CHECKING:
    from ..config import Settings

LOCK, SOCKET = ".lock", ".sock"
LOG_SUFFIX = ".warm.log"
MAX_LOG_BYTES = 1_000_000  # a log past this is emptied when the next process starts
STOP_SECONDS = 10.0  # how long `stop` waits for SIGTERM before SIGKILL
# What the spawned interpreter runs: this module's main, with the spawner's --db.
_START = "from memlikehuman.hosts.warm import main; main()"
# Every setting is the process's but these, which each MCP session (the scope defaults) or hook
# request (the injection gate) brings along, and the hooks' own.
_PER_CALL = {
    "persona_id": "default",
    "project_id": "default",
    "hook_record": None,
    "gate": None,
    "inject_search": "auto",
    "inject_wait": 0.5,
}


class Place(NamedTuple):
    """Where one warm process keeps its lock and its MCP socket."""

    directory: Path
    name: str

    @property
    def lock(self) -> Path:
        return self.directory / (self.name + LOCK)

    @property
    def socket(self) -> Path:
        return self.directory / (self.name + SOCKET)


def wanted(settings: Settings) -> bool:
    """Whether these settings keep a warm process: an embedder to keep loaded, MEMLIKEHUMAN_WARM_IDLE > 0,
    not inside an extraction command's run."""
    return settings.warm_idle > 0 and settings.embedder != "none" and not settings.extracting


def name(settings: Settings) -> str:
    """`<archive key>.<settings key>`: the name of the warm process these settings use."""
    import dataclasses

    shared = dataclasses.replace(settings, **_PER_CALL)  # type: ignore[arg-type]
    digest = sha256_hex(f"{shared!r}|{forward.installed()}".encode("utf-8", "surrogateescape"))[:16]
    return f"{channel.archive_key(target(settings))}.{digest}"


def holder(lock: Path) -> int | None:
    """The process ID a held lock file names (0 while it is being written), None when no process holds
    it or it is not a file of ours; never raises."""
    import fcntl

    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not channel.ours(info):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, 32).strip()
            return int(text) if text.isdigit() else 0
        except OSError:
            return None
        return None  # nobody holds it (closing the file gives our shared lock back)
    finally:
        os.close(fd)


def running(settings: Settings, env: Mapping[str, str] | None = None) -> bool:
    """Whether a warm process of this archive (any settings) runs or starts, where a hook of environment
    `env` (default: this process's) looks (channel.client_dirs: its own runtime directory and the one a
    server started with less environment uses)."""
    prefix = channel.archive_key(target(settings)) + "."
    for directory in channel.client_dirs(env):
        with contextlib.suppress(OSError), os.scandir(directory) as entries:
            for entry in entries:
                if entry.name.startswith(prefix) and entry.name.endswith(LOCK) and holder(Path(entry.path)) is not None:
                    return True
    return False


def ensure(db: str | None, env: Mapping[str, str] | None = None) -> None:
    """Start the archive's warm process when none runs (a hook's call, with its environment `env`, default
    this process's): returns at once and never raises; a process that cannot start leaves the hook as it
    was (fast search, vectors later)."""
    from .. import config
    from ..errors import MemLikeHumanError

    with contextlib.suppress(OSError, MemLikeHumanError):
        settings = config.load(db, env)
        # Without a private runtime directory it could not listen: then nothing is started at all.
        if wanted(settings) and channel.runtime_dir(create=True, env=env) is not None and not running(settings, env):
            spawn(db, env)


def spawn(db: str | None, env: Mapping[str, str] | None = None) -> int:
    """Start a warm process with this --db and environment (default: this process's), in this process's
    working directory: detached (a session of its own), stdin, stdout and stderr on /dev/null, so no host
    waits on its pipes. Its process ID; raises OSError."""
    # -P: the working directory (a project someone else may have written) is not put on sys.path, so
    # its files cannot stand in for ours.
    argv = [sys.executable, "-P", "-c", _START, *(["--db", db] if db is not None else [])]
    null = os.devnull
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0),
    ]
    environment = os.environ if env is None else env
    return os.posix_spawn(sys.executable, argv, environment, file_actions=actions, setsid=True)


def stop(directory: Path) -> list[int]:
    """End every warm process whose lock is in `directory` (SIGTERM, SIGKILL after STOP_SECONDS) and
    wait for it; their process IDs. For `memlikehuman warm --stop`, tests and benchmarks."""
    import signal
    import time

    ended, locks = [], []
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        locks = [Path(entry.path) for entry in entries if entry.name.endswith(LOCK)]
    for lock in locks:
        pid = holder(lock)
        if not pid or not _is_warm(pid):
            continue
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        while holder(lock) == pid and time.monotonic() < deadline:
            time.sleep(0.02)
        if holder(lock) == pid:
            os.kill(pid, signal.SIGKILL)
        ended.append(pid)
    return ended


def _is_warm(pid: int) -> bool:
    """Whether process `pid` runs this module's main (its command line says so)."""
    try:
        return _START.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


# -- the process's own start ----------------------------------------------------------------------


def main() -> None:
    """The warm process: take the lock (another holds it: exit), log to `<archive>.warm.log`, then run
    server/warm.py until it is idle. Exit status 0, or 1 when the settings cannot be read."""
    files.restrict_umask()
    from .. import config
    from ..errors import MemLikeHumanError

    args = sys.argv[1:]
    db = args[1] if args[:1] == ["--db"] and len(args) == 2 else None
    try:
        settings = config.load(db)
    except MemLikeHumanError:
        sys.exit(1)
    directory = channel.runtime_dir(create=True)
    if not wanted(settings) or directory is None:
        sys.exit(0)
    place = Place(directory, name(settings))
    lock = acquire(place.lock)
    if lock is None:
        sys.exit(0)  # another process has it: it runs, or is starting
    _log_beside(settings.db_path)
    from ..server import warm as process

    process.run(settings, process.Place(place.lock, place.socket, lock))


def acquire(path: Path) -> int | None:
    """The lock file opened and locked, our process ID written into it; None when another process holds
    it or the file is not ours. Raises OSError."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, files.FILE_MODE)
    info = os.fstat(fd)
    try:
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise BlockingIOError
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.fchmod(fd, files.FILE_MODE)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _log_beside(db_path: Path) -> None:
    """Send stderr (the log lines) to `<archive>.warm.log`, 0600, emptied once past MAX_LOG_BYTES; where
    the archive's directory is open to others (the archive is refused there), they stay on /dev/null."""
    with contextlib.suppress(OSError):
        files.private_dirs(db_path.parent)
        if files.open_to_others(db_path.parent) is not None:
            return
        fd = os.open(
            db_path.with_name(db_path.name + LOG_SUFFIX),
            os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
            files.FILE_MODE,
        )
        os.fchmod(fd, files.FILE_MODE)
        if os.fstat(fd).st_size > MAX_LOG_BYTES:
            os.ftruncate(fd, 0)
        os.dup2(fd, 2)
        os.close(fd)
