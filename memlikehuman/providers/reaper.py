"""Runs a command and, when it ends or this process gets SIGTERM, kills every process it left behind.

Started by providers/run.py as `python -I reaper.py COMMAND...` (a file of its own, standard library
only: no package import on this path). It makes itself the subreaper of its descendants (Linux
PR_SET_CHILD_SUBREAPER), so a grandchild that leaves the process group or the session, or whose
parent exits, is still its child and can be found: a killed extraction run leaves nothing running.
It also asks for SIGTERM when the server that started it dies (PR_SET_PDEATHSIG), so a server
killed by its host takes its runs with it.
The command inherits stdin, stdout and stderr. Exit status: the command's (a signal: 128 + its
number), 127 when it cannot be started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

PARENT = "MEMLIKEHUMAN_REAPER_PARENT"  # the server's pid, set by run.start (read once, not passed on)
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper(parent: int) -> None:
    """Adopt orphaned descendants, and get SIGTERM when `parent` (the server) dies, however it dies: the run
    then ends with it (Linux only; elsewhere the process group is all there is)."""
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # it died before the signal was asked for
        os._exit(143)


def descendants(root: int) -> set[int]:
    """The live descendants of `root`, read from /proc (a zombie counts: it is reaped later)."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        parents[int(name)] = int(fields[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def kill_all() -> None:
    """SIGKILL this process's group and every descendant, then reap them all."""
    own = os.getpid()
    for _ in range(10):  # a process may fork while the others die: look again
        left = descendants(own)
        if not left:
            break
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        _reap(block=False)
    with contextlib.suppress(OSError):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.killpg(os.getpgrp(), signal.SIGKILL)  # what /proc could not show (no /proc); this process too


def _reap(block: bool) -> list[tuple[int, int]]:
    reaped: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped.append((pid, status))
        if block:
            return reaped


def _terminated(*_: object) -> None:
    kill_all()
    os._exit(143)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _terminated)
    become_subreaper(int(os.environ.pop(PARENT, "0")) or os.getppid())
    child = os.fork()
    if child == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"cannot start {argv[0]}: {exc.strerror or exc}\n".encode())
        os._exit(127)
    while True:
        for pid, status in _reap(block=True):
            if pid == child:
                code = os.waitstatus_to_exitcode(status)
                for pid_left in descendants(os.getpid()):
                    with contextlib.suppress(OSError):
                        os.kill(pid_left, signal.SIGKILL)
                _reap(block=False)
                return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
