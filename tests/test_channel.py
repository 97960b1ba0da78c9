"""The hook-to-server channel (hosts/channel.py), on real Unix sockets in private temporary directories.

Fixtures and helpers: tests/channel_support.py. What another local user or a stuck server can do to
the channel: tests/reliability/test_audit_channel.py.
"""

from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from channel_support import OTHER, Dirs, Recorder, as_root, dirs, path_of, path_of_started, serve, stale_socket

from memlikehuman.hosts.channel import MAX_LINE, Listener, archive_key, ask, runtime_dir

__all__ = ["dirs", "serve"]  # fixtures


def raw_exchange(path: Path, data: bytes) -> bytes:
    """Send raw bytes, read until the server closes; a reset counts as no answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        sock.connect(str(path))
        try:
            sock.sendall(data)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except (ConnectionResetError, BrokenPipeError):
            return b""
    return b"".join(chunks)


def test_a_listener_answers_ask_with_what_answer_returned_and_close_removes_its_socket(dirs: Dirs) -> None:
    listener = Listener("/data/a.sqlite3", lambda request: {"got": request, "text": "café"})
    path = listener.start()
    assert path is not None and path == listener.path
    assert path.parent == dirs.xdg / "memlikehuman"
    # <key>-<pid>.sock, or <key>-<pid>-<n>.sock when this test process started listeners before
    assert re.fullmatch(rf"{archive_key('/data/a.sqlite3')}-{os.getpid()}(-\d+)?\.sock", path.name)
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600 and stat.S_ISSOCK(os.lstat(path).st_mode)
    assert stat.S_IMODE(os.lstat(path.parent).st_mode) == 0o700
    assert ask("/data/a.sqlite3", {"q": "x"}, timeout=2) == {"got": {"q": "x"}, "text": "café"}

    listener.close()
    listener.close()
    assert not path.exists() and listener.path is None
    assert ask("/data/a.sqlite3", {"q": "x"}, timeout=2) is None
    assert os.listdir(path.parent) == []


def test_the_archive_key_is_sixteen_hex_digits_of_the_targets_sha256() -> None:
    assert archive_key("/data/a.sqlite3") == "dcc455cac3898f52"  # hashlib.sha256(b"/data/a.sqlite3")
    assert archive_key("postgresql://h/db") != archive_key("postgresql://h/db2")


def test_listeners_of_two_archives_each_answer_only_for_their_own_archive(serve: Callable[..., Listener]) -> None:
    serve("/data/a.sqlite3")
    serve("postgresql://localhost/b")
    assert ask("/data/a.sqlite3", {}, timeout=2) == {"target": "/data/a.sqlite3", "request": {}}
    assert ask("postgresql://localhost/b", {}, timeout=2) == {"target": "postgresql://localhost/b", "request": {}}
    assert ask("/data/c.sqlite3", {}, timeout=2) is None


def test_two_listeners_on_one_archive_both_serve_and_the_older_outlives_the_newer(
    serve: Callable[..., Listener],
) -> None:
    older = serve("a", lambda request: {"who": "older"})
    newer = serve("a", lambda request: {"who": "newer"})
    assert path_of(older) != path_of(newer)
    assert ask("a", {}, timeout=2) in ({"who": "older"}, {"who": "newer"})
    newer.close()
    assert path_of(older).exists()
    assert ask("a", {}, timeout=2) == {"who": "older"}


def test_a_stale_socket_file_gives_none_quickly_and_a_live_listener_beside_it_still_answers(
    dirs: Dirs, serve: Callable[..., Listener]
) -> None:
    directory = runtime_dir()
    assert directory is not None
    stale = stale_socket(directory, f"{archive_key('a')}-999999999.sock")
    began = time.monotonic()
    assert ask("a", {}, timeout=5) is None
    assert time.monotonic() - began < 0.5
    assert not stale.exists()  # ours, passed the checks, refused: deleted

    serve("a", lambda request: {"live": True})
    stale_socket(directory, f"{archive_key('a')}-999999998.sock")
    assert ask("a", {}, timeout=2) == {"live": True}


def test_a_socket_file_that_is_a_symlink_or_has_loose_permissions_is_ignored(serve: Callable[..., Listener]) -> None:
    other = path_of(serve("b"))
    link = other.with_name(f"{archive_key('a')}-1.sock")
    link.symlink_to(other)
    assert ask("a", {}, timeout=2) is None
    assert link.is_symlink()  # not ours to delete

    loose = path_of(serve("c"))
    os.chmod(loose, 0o660)
    assert ask("c", {}, timeout=2) is None
    assert loose.exists()


@as_root
def test_a_socket_file_owned_by_another_user_is_ignored(serve: Callable[..., Listener]) -> None:
    path = path_of(serve("a"))
    os.chown(path, OTHER, OTHER)
    assert ask("a", {}, timeout=2) is None
    assert path.exists()


PEER = """
import socket, sys
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
    sock.settimeout(5)
    sock.connect(sys.argv[1])
    print("connected", flush=True)
    try:
        sock.sendall(b'{"q": 1}\\n')
        print(repr(sock.recv(65536)))
    except (ConnectionResetError, BrokenPipeError):  # dropped before or after the request arrived
        print(repr(b""))
"""


AS_OTHER: dict[str, Any] = {"user": OTHER, "group": OTHER, "extra_groups": [], "cwd": "/"}


def python_for_other() -> str:
    """A Python that uid OTHER can run: this one, or the system's when this one lives under /root."""
    for python in (sys.executable, "/usr/bin/python3"):
        try:
            subprocess.run([python, "-c", ""], check=True, **AS_OTHER)
            return python
        except (OSError, subprocess.CalledProcessError):
            continue
    pytest.skip(f"no Python can run as uid {OTHER}")


@as_root
def test_a_peer_of_another_user_is_dropped_without_an_answer(dirs: Dirs, serve: Callable[..., Listener]) -> None:
    answer = Recorder({"answered": True})
    path = path_of(serve("a", answer))
    for directory in (dirs.base, dirs.xdg, path.parent):
        os.chmod(directory, 0o711)
    os.chmod(path, 0o666)  # so that only the server's SO_PEERCRED check stands in the way
    run = subprocess.run([python_for_other(), "-I", "-c", PEER, str(path)], capture_output=True, text=True, **AS_OTHER)
    assert run.stdout.split() == ["connected", "b''"], run.stderr
    assert answer.calls == []
    for directory in (dirs.base, dirs.xdg, path.parent):
        os.chmod(directory, 0o700)
    os.chmod(path, 0o600)
    assert ask("a", {"q": 2}, timeout=2) == {"answered": True} and answer.calls == [{"q": 2}]


IMPOSTOR = """
import socket, sys
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
    sock.bind(sys.argv[1])
    sock.listen()
    print("ready", flush=True)
    while True:
        connection, _ = sock.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b'{"impostor": true}\\n')
"""


@as_root
def test_a_server_of_another_user_behind_a_socket_file_of_ours_is_not_trusted(dirs: Dirs) -> None:
    directory = runtime_dir()
    assert directory is not None
    theirs = dirs.base / "theirs"
    theirs.mkdir()
    os.chown(theirs, OTHER, OTHER)
    os.chmod(dirs.base, 0o711)
    code = [python_for_other(), "-I", "-c", IMPOSTOR, str(theirs / "s.sock")]
    with subprocess.Popen(code, stdout=subprocess.PIPE, text=True, **AS_OTHER) as impostor:
        try:
            assert impostor.stdout is not None and impostor.stdout.readline() == "ready\n"
            ours = directory / f"{archive_key('a')}-1.sock"
            os.rename(theirs / "s.sock", ours)
            os.chown(ours, os.getuid(), os.getgid())
            os.chmod(ours, 0o600)
            assert raw_exchange(ours, b"{}\n") == b'{"impostor": true}\n'  # it does answer
            assert ask("a", {}, timeout=2) is None
        finally:
            impostor.kill()


def test_a_loose_xdg_runtime_dir_is_not_used_and_the_fallback_is_a_private_dir_under_the_cache_dir(
    dirs: Dirs,
) -> None:
    os.chmod(dirs.xdg, 0o755)
    fallback = dirs.fallback
    assert runtime_dir() == fallback
    assert stat.S_IMODE(os.lstat(fallback).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(fallback.parent).st_mode) == 0o700  # created too: 0700 as well
    listener = Listener("a", lambda request: {"ok": True})
    try:
        assert path_of_started(listener).parent == fallback
        assert ask("a", {}, timeout=2) == {"ok": True}
    finally:
        listener.close()
    assert not (dirs.xdg / "memlikehuman").exists()


def test_an_untrusted_socket_directory_means_no_channel(dirs: Dirs) -> None:
    (dirs.xdg / "memlikehuman").mkdir(mode=0o700)
    os.chmod(dirs.xdg / "memlikehuman", 0o750)
    assert runtime_dir() is None
    listener = Listener("a", lambda request: {"ok": True})
    assert listener.start() is None and listener.path is None
    assert ask("a", {}, timeout=2) is None
    assert os.listdir(dirs.xdg / "memlikehuman") == []

    os.chmod(dirs.xdg, 0o755)  # so the fallback is chosen: a symlink, even to a private directory, is no better
    dirs.fallback.parent.mkdir(parents=True)
    dirs.fallback.symlink_to(dirs.xdg / "memlikehuman")
    os.chmod(dirs.xdg / "memlikehuman", 0o700)
    assert runtime_dir() is None


@as_root
def test_a_runtime_dir_owned_by_another_user_is_not_used(dirs: Dirs) -> None:
    os.chown(dirs.xdg, OTHER, OTHER)
    assert runtime_dir() == dirs.fallback
    dirs.fallback.rmdir()
    os.chown(dirs.xdg, os.getuid(), os.getgid())
    (dirs.xdg / "memlikehuman").mkdir(mode=0o700)
    os.chown(dirs.xdg / "memlikehuman", OTHER, OTHER)
    assert runtime_dir() is None


def test_an_answer_that_raises_gives_none_and_the_listener_keeps_serving(
    serve: Callable[..., Listener], caplog: pytest.LogCaptureFixture
) -> None:
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        if request.get("boom"):
            raise RuntimeError("boom")
        return {"ok": True} if request.get("ok") else {"not json": object()}

    serve("a", answer)
    assert ask("a", {"boom": True}, timeout=2) is None
    assert ask("a", {"unserializable": True}, timeout=2) is None
    assert ask("a", {"ok": True}, timeout=2) == {"ok": True}
    assert [r.getMessage() for r in caplog.records].count("channel: answering a request failed") == 2


def test_a_request_that_is_not_a_json_object_gets_bad_request_and_an_endless_line_is_closed_unanswered(
    serve: Callable[..., Listener],
) -> None:
    path = path_of(serve("a", lambda request: {"ok": True}))
    for junk in (b"not json\n", b"[1, 2]\n", b"\xff\xfe\n", b"[" * 100_000 + b"\n"):
        assert raw_exchange(path, junk) == b'{"error":"bad_request"}\n', junk[:10]
    assert raw_exchange(path, b" " * (MAX_LINE + 1)) == b""
    assert raw_exchange(path, b'{"q": 1}\n') == b'{"ok":true}\n'
    assert ask("a", {"q": 1}, timeout=2) == {"ok": True}


def test_a_silent_client_does_not_block_other_requests(serve: Callable[..., Listener]) -> None:
    path = path_of(serve("a", lambda request: {"ok": True}))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.connect(str(path))
        assert ask("a", {}, timeout=2) == {"ok": True}


def test_a_request_that_cannot_be_sent_gives_none_without_raising(serve: Callable[..., Listener]) -> None:
    answer = Recorder({"ok": True})
    serve("a", answer)
    assert ask("a", {"path": Path("/x")}, timeout=2) is None
    assert ask("a", {"text": "x" * MAX_LINE}, timeout=2) is None
    assert answer.calls == []
