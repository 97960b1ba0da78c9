"""`memlikehuman ARGS` run inside the test process as its own process would run it (the inner loop).

`run` takes what `subprocess.run` takes for the console script and gives back what it gives back,
but calls the script's entry point (memlikehuman/hosts/entry.py `main`) in this process: a hook
process spends about 150 ms of CPU starting Python and importing, and the hook tests start hundreds.
For the call, this process is made to look like the new one, and put back afterwards:
- sys.argv and __main__, the environment (only what the process would get), the working directory;
- file descriptors 0, 1 and 2 on temporary files, with sys.stdin, stdout and stderr opened on them
  as Python opens them without a locale (UTF-8; surrogateescape, stderr backslashreplace): what C
  code writes there is caught too;
- the umask and the garbage collector (the entry changes both) and os._exit, the entry's last
  call, which here raises SystemExit; an exception that escapes is a traceback and status 1;
- logging as a new process has it: no handler on the root logger, so a warning reaches stderr
  through logging.lastResort, and our loggers at their default level (the in-process CLI and server
  change theirs);
- `timeout`: SIGALRM raises a BaseException, which the hook's top-level `except Exception` cannot
  swallow, reported as subprocess.TimeoutExpired.
Not like a new process: imported modules and their caches are shared (memlikehuman caches only pure
functions at module level); pytest's warning filters stay (a warning is an error: stricter than the
process); and the test's other threads see the call's environment and working directory while it runs,
so callers run only the main thread's calls here (hook_support.run_hook).
"""

from __future__ import annotations

import contextlib
import gc
import io
import logging
import os
import signal
import subprocess
import sys
import tempfile
import traceback
import types
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from memlikehuman.hosts import entry


class _Deadline(BaseException):
    """The timeout, raised by SIGALRM wherever the call is: no `except Exception` stops it."""


def run(
    args: Sequence[str], *, input: bytes, cwd: Path, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[bytes]:
    """Run the console script `args[0]` with `args[1:]` in this process, as subprocess.run(args, input=input,
    capture_output=True, cwd=cwd, env=env, timeout=timeout) would run it (raises subprocess.TimeoutExpired)."""
    argv = list(args)
    assert Path(argv[0]).name == "memlikehuman", argv  # the console script: hosts/entry.py
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        stdin.write(input)
        stdin.seek(0)
        with _process(argv, cwd, env), _descriptors(stdin, stdout, stderr), _streams(), _fresh_logging():
            status = _call(timeout)
        stdout.seek(0)
        stderr.seek(0)
        out, err = stdout.read(), stderr.read()
    if status is None:
        raise subprocess.TimeoutExpired(argv, timeout, output=out, stderr=err)
    return subprocess.CompletedProcess(argv, status, out, err)


def _call(timeout: float) -> int | None:
    """The entry point's exit status; None when it ran past `timeout` seconds."""
    previous = signal.signal(signal.SIGALRM, _expire)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, timeout)
            return _status_of(entry.main)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Deadline:  # one-shot: fired in the call or just after it, never again
        return None
    finally:
        signal.signal(signal.SIGALRM, previous)
        sys.stdout.flush()  # what the interpreter's exit does; after os._exit there is nothing left
        sys.stderr.flush()


def _status_of(main: Any) -> int:
    try:
        main()
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=sys.stderr)
        return 1
    except Exception:  # what the interpreter does with an exception nobody caught
        traceback.print_exc()
        return 1
    return 0


def _expire(signum: int, frame: Any) -> NoReturn:
    raise _Deadline


def _exit_raises(status: int) -> NoReturn:
    raise SystemExit(status)


@contextlib.contextmanager
def _process(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> Iterator[None]:
    """argv, __main__, environment, working directory, umask, garbage collector and os._exit of the call."""
    saved_argv, saved_main, saved_env, saved_cwd = sys.argv, sys.modules["__main__"], dict(os.environ), os.getcwd()
    umask, collecting, exit_now = os.umask(0o022), gc.isenabled(), os._exit
    os.umask(umask)  # read, not changed: the process would inherit it
    sys.argv = list(argv)
    # The console script file runs as __main__, without a module spec (click names the program after it).
    script = sys.modules["__main__"] = types.ModuleType("__main__")
    script.__file__, script.__spec__ = argv[0], None
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    os._exit = _exit_raises
    try:
        yield
    finally:
        os._exit = exit_now
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv, sys.modules["__main__"] = saved_argv, saved_main
        os.umask(umask)
        if collecting:
            gc.enable()


@contextlib.contextmanager
def _descriptors(*files: Any) -> Iterator[None]:
    """File descriptors 0, 1 and 2 on these files."""
    saved = [os.dup(number) for number in (0, 1, 2)]
    try:
        for number, file in enumerate(files):
            os.dup2(file.fileno(), number)
        yield
    finally:
        for number, fd in enumerate(saved):
            os.dup2(fd, number)
            os.close(fd)


@contextlib.contextmanager
def _streams() -> Iterator[None]:
    """sys.stdin, stdout and stderr on descriptors 0, 1 and 2, as a process without a locale opens them."""
    saved = sys.stdin, sys.stdout, sys.stderr
    opened: list[io.TextIOWrapper] = [
        open(0, encoding="utf-8", errors="surrogateescape", closefd=False),  # noqa: SIM115
        open(1, "w", encoding="utf-8", errors="surrogateescape", closefd=False),  # noqa: SIM115
        open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1),  # noqa: SIM115
    ]
    sys.stdin, sys.stdout, sys.stderr = opened
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        for stream in opened:
            with contextlib.suppress(OSError, ValueError):
                stream.close()


@contextlib.contextmanager
def _fresh_logging() -> Iterator[None]:
    """Logging as a new process has it: no root handler (pytest's capture adds some), root at WARNING,
    our loggers at NOTSET with no handlers, nothing disabled."""
    root, manager = logging.getLogger(), logging.Logger.manager
    ours = [logging.getLogger(name) for name in list(manager.loggerDict) if name.split(".")[0] == "memlikehuman"]
    saved = [(logger, logger.handlers[:], logger.level, logger.propagate, logger.disabled) for logger in [root, *ours]]
    disabled = manager.disable
    logging.disable(logging.NOTSET)
    root.handlers.clear()
    root.setLevel(logging.WARNING)
    for logger in ours:
        logger.handlers.clear()
        logger.setLevel(logging.NOTSET)
        logger.propagate, logger.disabled = True, False
    try:
        yield
    finally:
        for logger, handlers, level, propagate, off in saved:
            logger.handlers[:] = handlers
            logger.setLevel(level)
            logger.propagate, logger.disabled = propagate, off
        logging.disable(disabled)
