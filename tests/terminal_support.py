"""Running `memlikehuman` at a terminal: a real process with stdin, stdout and stderr on a pseudo-terminal."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from conftest import BASE_ENV

SCRIPT = Path(sys.executable).with_name("memlikehuman")
QUESTION = b"[y/N]"
CTRL_C = "\x03"
AGAIN = 2.0  # seconds after which an unanswered Ctrl-C is pressed again


@dataclass(frozen=True)
class Typed:
    returncode: int
    screen: str  # everything the terminal showed, stdout and stderr as one, with "\r\n" as "\n"


def at_terminal(
    *args: str, answer: str | None = None, new_session: bool = False, cwd: Path = Path("/"), timeout: float = 60
) -> Typed:
    """`memlikehuman ARGS` on a new pseudo-terminal; `answer` is typed once it asks a y/N question (CTRL_C:
    it gets SIGINT then, as Ctrl-C at a terminal sends it).

    By default the process stays in this test's session, as commands typed into one terminal share their
    shell's; `new_session` starts it in a session of its own (another terminal)."""
    leader, follower = pty.openpty()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/"), **BASE_ENV}
    proc = subprocess.Popen(
        [str(SCRIPT), *args], stdin=follower, stdout=follower, stderr=follower, cwd=cwd, env=env,
        start_new_session=new_session,
        # A suite started in the background inherits "ignore SIGINT" (and a Python started so installs no
        # KeyboardInterrupt); a terminal's Ctrl-C reaches a command typed there.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    os.close(follower)
    shown, deadline, interrupting = b"", time.monotonic() + timeout, False
    try:
        while time.monotonic() < deadline:
            wait = deadline - time.monotonic()
            ready, _, _ = select.select([leader], [], [], min(wait, AGAIN) if interrupting else wait)
            if not ready and interrupting and proc.poll() is None:
                # A SIGINT that lands just before Python's readline blocks in select() waits for the next
                # key; a person presses Ctrl-C again, and so does this.
                proc.send_signal(signal.SIGINT)
                continue
            try:
                chunk = os.read(leader, 65536) if ready else b""
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            shown += chunk
            if answer is not None and QUESTION in shown:
                if answer == CTRL_C:
                    proc.send_signal(signal.SIGINT)
                    interrupting = True
                else:
                    os.write(leader, answer.encode() + b"\r")
                answer = None
        try:
            returncode = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"memlikehuman {' '.join(args)} still ran after {timeout} s; the terminal showed:\n"
                + shown.decode("utf-8", "replace")
            ) from None
    finally:
        proc.kill()
        proc.wait()
        os.close(leader)
    return Typed(returncode, shown.decode("utf-8", "replace").replace("\r\n", "\n"))
