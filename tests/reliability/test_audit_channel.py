"""The channel from the hooks to a running server, audited: a stuck server, a flood of connections,
dead servers' sockets and a directory planted by another user cost a prompt at most one wait and never
turn the channel off. Fixtures: tests/channel_support.py."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from channel_support import OTHER, Dirs, as_root, dirs, path_of, path_of_started, serve, stale_socket
from conftest import BASE_ENV

from memlikehuman.hosts.channel import MAX_CONNECTIONS, REST_SECONDS, Listener, archive_key, ask, runtime_dir

__all__ = ["dirs", "serve"]  # fixtures


def test_ask_gives_up_within_its_timeout_while_an_answer_hangs(serve: Callable[..., Listener]) -> None:
    entered, release = threading.Event(), threading.Event()

    def hang(request: dict[str, Any]) -> dict[str, Any]:
        entered.set()
        release.wait(5)
        return {"late": True}

    path = path_of(serve("a", hang))
    began = time.monotonic()
    assert ask("a", {}, timeout=0.2) is None
    elapsed = time.monotonic() - began
    assert entered.is_set() and not release.is_set()
    assert 0.2 <= elapsed < 0.7
    release.set()
    # It let the time run out: the next prompts do not wait for it again, until its rest is over.
    began = time.monotonic()
    assert ask("a", {}, timeout=2) is None
    assert time.monotonic() - began < 0.1
    resting = path.with_name(path.name + ".resting")
    assert resting.exists() and stat.S_IMODE(resting.stat().st_mode) == 0o600
    os.utime(resting, (time.time() - REST_SECONDS - 1,) * 2)
    assert ask("a", {}, timeout=2) == {"late": True}


SUSPENDED = """
import sys, time
from memlikehuman.hosts.channel import Listener
listener = Listener(sys.argv[1], lambda request: {"who": "suspended"})
print(listener.start(), flush=True)
time.sleep(120)
"""


def test_a_suspended_server_does_not_hold_the_hook_and_a_live_older_one_answers_within_the_budget(
    serve: Callable[..., Listener],
) -> None:
    serve("a", lambda request: {"who": "live"})
    with subprocess.Popen([sys.executable, "-c", SUSPENDED, "a"], stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None and child.stdout.readline().strip().endswith(".sock")
            os.kill(child.pid, signal.SIGSTOP)  # the newest server: it accepts (the kernel does) but never answers
            began = time.monotonic()
            assert ask("a", {}, timeout=0.5) == {"who": "live"}
            assert time.monotonic() - began < 0.3
        finally:
            child.kill()


def test_a_suspended_server_alone_costs_one_wait_then_is_skipped(dirs: Dirs) -> None:
    with subprocess.Popen([sys.executable, "-c", SUSPENDED, "a"], stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None and child.stdout.readline().strip().endswith(".sock")
            os.kill(child.pid, signal.SIGSTOP)
            began = time.monotonic()
            assert ask("a", {}, timeout=0.3) is None
            assert time.monotonic() - began >= 0.3
            began = time.monotonic()
            assert ask("a", {}, timeout=0.3) is None
            assert time.monotonic() - began < 0.1
        finally:
            child.kill()


def test_a_listener_answers_a_bounded_number_of_connections_at_once(serve: Callable[..., Listener]) -> None:
    path = path_of(serve("a", lambda request: {"ok": True}))
    before = threading.active_count()
    idle = []
    try:
        for _ in range(3 * MAX_CONNECTIONS):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(path))
            idle.append(sock)  # connected, never sending: each would hold a thread for CONNECTION_SECONDS
        time.sleep(0.3)
        assert threading.active_count() - before <= MAX_CONNECTIONS
    finally:
        for sock in idle:
            sock.close()


def test_a_new_listener_removes_the_socket_files_and_rest_marks_of_servers_that_no_longer_run(
    dirs: Dirs, serve: Callable[..., Listener]
) -> None:
    directory = runtime_dir()
    assert directory is not None
    dead = stale_socket(directory, f"{archive_key('x')}-999999999.sock")
    dead_mark = directory / f"{dead.name}.resting"
    dead_mark.write_text("")
    dead_mark.chmod(0o600)
    orphan_mark = directory / f"{archive_key('x')}-1.sock.resting"  # of a live process, its socket gone
    orphan_mark.write_text("")
    orphan_mark.chmod(0o600)
    live = serve("a")
    assert not dead.exists() and not dead_mark.exists() and not orphan_mark.exists()
    assert path_of(live).exists()


def test_hooks_reach_a_server_whose_socket_path_is_longer_than_a_unix_socket_address_holds(
    dirs: Dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = dirs.xdg / ("a-long-home-directory-name-" * 4)
    deep.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))
    listener = Listener("a", lambda request: {"ok": True})
    try:
        path = path_of_started(listener)
        assert len(os.fsencode(path)) > 108 and stat.S_ISSOCK(path.lstat().st_mode)
        assert ask("a", {}, timeout=2) == {"ok": True}
    finally:
        listener.close()
    assert os.listdir(deep / "memlikehuman") == []


@as_root
def test_a_directory_another_user_made_in_tmp_first_does_not_turn_the_channel_off(dirs: Dirs) -> None:
    os.chmod(dirs.xdg, 0o755)  # no usable XDG_RUNTIME_DIR: the fallback is chosen
    planted = dirs.tmp / f"memlikehuman-{os.getuid()}"
    planted.mkdir(mode=0o777)
    os.chown(planted, OTHER, OTHER)
    listener = Listener("a", lambda request: {"ok": True})
    try:
        assert path_of_started(listener).parent == dirs.fallback
        assert ask("a", {}, timeout=2) == {"ok": True}
        assert os.listdir(planted) == []
    finally:
        listener.close()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, None], ids=["SIGINT", "SIGTERM", "end-of-stdin"])
def test_serve_stops_on_the_hosts_signal_and_removes_its_socket_and_rest_mark(
    dirs: Dirs, tmp_path: Path, stop: int | None
) -> None:
    # Claude Code ends its MCP servers with SIGINT, then SIGTERM 100 ms later, with stdin still open.
    env = {**os.environ, **BASE_ENV, "MEMLIKEHUMAN_EMBEDDER": "local", "XDG_RUNTIME_DIR": str(dirs.xdg)}
    command = [sys.executable, "-m", "memlikehuman", "serve", "--db", str(tmp_path / "m.sqlite3")]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as served:
        try:
            deadline = time.monotonic() + 60
            # listening once warm; pathlib's glob also matches the hidden name a socket is bound under
            while not (found := list((dirs.xdg / "memlikehuman").glob("[!.]*.sock"))):
                assert served.poll() is None and time.monotonic() < deadline, "no socket appeared"
                time.sleep(0.05)
            mark = found[0].with_name(found[0].name + ".resting")  # as a hook marks a server that was slow
            mark.touch(mode=0o600)
            if stop is None:
                assert served.stdin is not None
                served.stdin.close()
            else:
                served.send_signal(stop)
            assert served.wait(timeout=10) == 0
        finally:
            served.kill()
    assert list((dirs.xdg / "memlikehuman").iterdir()) == []


def test_a_hook_finds_a_server_that_was_started_without_xdg_runtime_dir(
    dirs: Dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Codex starts MCP servers with a few variables only (no XDG_RUNTIME_DIR): such a server listens
    # under the cache directory, while the hook, with the whole environment, has XDG_RUNTIME_DIR.
    home = dirs.base / "home"
    monkeypatch.setenv("HOME", str(home))
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "XDG_CACHE_HOME")}
    with subprocess.Popen([sys.executable, "-c", SUSPENDED, "a"], stdout=subprocess.PIPE, text=True, env=env) as child:
        try:
            assert child.stdout is not None
            path = Path(child.stdout.readline().strip())
            assert path.parent == home / ".cache" / "memlikehuman" / "run"
            assert ask("a", {}, timeout=2) == {"who": "suspended"}  # (not suspended here: it answers)
        finally:
            child.kill()


def test_a_server_that_answers_an_error_costs_the_hook_no_busy_loop(serve: Callable[..., Listener]) -> None:
    entered, release = threading.Event(), threading.Event()

    def hang(request: dict[str, Any]) -> dict[str, Any]:
        entered.set()
        release.wait(5)
        return {"late": True}

    def fail(request: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("broken")

    serve("a", fail)  # answers {"error": "internal"} at once
    serve("a", hang)
    started = time.process_time()
    try:
        assert ask("a", {}, timeout=0.6) is None
    finally:
        release.set()
    assert time.process_time() - started < 0.3  # the finished exchange is no longer polled
