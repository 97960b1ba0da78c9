"""The archive's warm process (hosts/warm.py, hosts/relay.py, server/warm.py), through the real commands:
hooks start it and never wait for it, `serve` relays to it, it embeds what headless hooks record, and it
ends when idle, orphaned or stopped. Every test stops the warm processes it started (`runtime`)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import BASE_ENV, make_settings
from hook_support import SCRIPT, Ran, home_of, missing_vectors, spawn_hook, stored
from hook_support import hook_archive as hook_archive  # noqa: F401  # the `db` fixture, both backends

from memlikehuman.archive.db import is_url
from memlikehuman.engine import Engine
from memlikehuman.hosts import channel, relay, warm
from memlikehuman.records import Scope
from memlikehuman.server import warm as server_warm
from memlikehuman.text.projects import project_name

LOCAL = {"MEMLIKEHUMAN_EMBEDDER": "local"}
CLIENT = {"name": "t", "version": "0"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT}}  # fmt: skip


def runtime_of(db: Path | str) -> Path:
    """Where the hooks and servers of this archive keep the warm process's files (no XDG_RUNTIME_DIR: the cache's)."""
    return home_of(db) / ".cache" / "memlikehuman" / "run"


@pytest.fixture
def runtime(db: Path | str) -> Iterator[Path]:
    """The archive's runtime directory; the warm processes started there are stopped after the test."""
    yield runtime_of(db)
    warm.stop(runtime_of(db))


def wait_for(condition: Callable[[], Any], seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        assert time.monotonic() < deadline, f"{what} within {seconds} s"
        time.sleep(0.05)
    return found


def holders(runtime: Path) -> list[int]:
    """The process IDs of the warm processes whose locks are held in `runtime`."""
    locks = sorted(runtime.glob("*.lock")) if runtime.is_dir() else []
    return [pid for lock in locks if (pid := warm.holder(lock))]


def ready(runtime: Path) -> bool:
    """Whether a warm process answers the hooks (its channel socket appears once the embedder is warm)."""
    return runtime.is_dir() and any(p.name.count("-") == 1 for p in runtime.glob("[!.]*.sock"))


def hook(event: str, session: str, project: Path, **fields: str) -> dict[str, Any]:
    return {"session_id": session, "cwd": str(project), "hook_event_name": event, **fields}


def search_of(ran: Ran) -> str:
    context = ran.json()["hookSpecificOutput"]["additionalContext"] if ran.stdout.strip() else ""
    return "semantic" if "by semantic search" in context else "fast" if "by fast (lexical) search" in context else "-"


@contextmanager
def serve(db: Path | str, cwd: Path, **env: str) -> Iterator[subprocess.Popen[bytes]]:
    """`memlikehuman serve` as a host starts it (the installed console script, the archive in the
    environment); killed, if still running, on the way out."""
    home = home_of(db)
    environment = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), **BASE_ENV, "MEMLIKEHUMAN_DB": str(db)}
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.DEVNULL}
    with subprocess.Popen([str(SCRIPT), "serve"], cwd=cwd, env={**environment, **env}, **pipes) as server:  # type: ignore[call-overload]
        try:
            yield server
        finally:
            server.kill()


def call(server: subprocess.Popen[bytes], message: dict[str, Any]) -> dict[str, Any]:
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write((json.dumps(message) + "\n").encode())
    server.stdin.flush()
    answer: dict[str, Any] = json.loads(server.stdout.readline())
    return answer


def tool(n: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


# -- hooks alone ---------------------------------------------------------------------------------


@pytest.mark.lifecycle
def test_five_headless_hook_only_sessions_leave_no_event_without_a_vector(
    db: Path | str, project: Path, runtime: Path
) -> None:
    for n in range(5):
        session = f"headless-{n}"
        said = f"Note {n}: the invoices for client {n} go out on day {n + 1} of each month."
        reply = f"Noted: day {n + 1} for client {n}."
        for event, fields in (("SessionStart", {"source": "startup"}), ("UserPromptSubmit", {"prompt": said}),
                              ("Stop", {"last_assistant_message": reply})):  # fmt: skip
            assert (
                spawn_hook("claude-code", hook(event, session, project, **fields), db, project, **LOCAL).returncode == 0
            )
    assert len(stored(db)) == 10
    wait_for(lambda: missing_vectors(db) == 0, 120, "every event had its vector")


def test_after_a_headless_session_the_prompt_hook_answers_by_semantic_search(
    db: Path | str, project: Path, runtime: Path
) -> None:
    told = "The staging server is staging.example.internal on port 8443"
    # Three earlier notes: an item passes by meaning alone only when it leads the next nearest.
    notes = ("I prefer pnpm over npm for this repo", "Please always run ruff before committing", told)
    for n, said in enumerate(notes):
        spawn_hook("claude-code", hook("UserPromptSubmit", f"earlier-{n}", project, prompt=said), db, project, **LOCAL)
    wait_for(lambda: ready(runtime), 60, "the warm process listened for the hooks")
    # The note is found by meaning alone, so only once the warm process has embedded it (under load it
    # can still be embedding when the next prompt comes).
    wait_for(lambda: missing_vectors(db) == 0, 60, "the warm process embedded the notes")
    asked = hook("UserPromptSubmit", "now", project, prompt="what address does the test environment live at?")
    ran = spawn_hook("claude-code", asked, db, project, MEMLIKEHUMAN_INJECT_WAIT="10", **LOCAL)
    assert search_of(ran) == "semantic"
    assert told in ran.stdout


def test_every_hook_of_an_archive_shares_one_warm_process(db: Path | str, project: Path, runtime: Path) -> None:
    for n in range(3):
        spawn_hook("claude-code", hook("SessionStart", f"s{n}", project, source="startup"), db, project, **LOCAL)
    assert len(wait_for(lambda: holders(runtime), 30, "a warm process held its lock")) == 1
    wait_for(lambda: ready(runtime), 60, "the warm process listened for the hooks")
    spawn_hook("claude-code", hook("SessionStart", "s3", project, source="startup"), db, project, **LOCAL)
    assert len(holders(runtime)) == 1


def test_without_an_embedder_hooks_start_no_warm_process(db: Path | str, project: Path, runtime: Path) -> None:
    ran = spawn_hook("claude-code", hook("UserPromptSubmit", "s", project, prompt="deploy it"), db, project)
    assert ran.returncode == 0 and len(stored(db)) == 1
    assert not runtime.exists()


def test_a_hook_neither_waits_for_nor_fails_on_a_warm_process_that_cannot_start(
    db: Path | str, project: Path, tmp_path: Path
) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")  # XDG_CACHE_HOME a file: no private runtime directory can be made
    env = {**LOCAL, "XDG_CACHE_HOME": str(blocked)}
    asked = hook("UserPromptSubmit", "s", project, prompt="deploy it")
    started = time.monotonic()
    ran = spawn_hook("claude-code", asked, db, project, MEMLIKEHUMAN_INJECT_WAIT="30", **env)
    assert time.monotonic() - started < 10
    assert ran.returncode == 0 and ran.stderr == "" and "This prompt is recorded as" in ran.stdout
    assert len(stored(db)) == 1


@pytest.mark.lifecycle
def test_a_suspended_warm_process_costs_a_hook_only_its_wait(db: Path | str, project: Path, runtime: Path) -> None:
    spawn_hook("claude-code", hook("SessionStart", "s", project, source="startup"), db, project, **LOCAL)
    wait_for(lambda: ready(runtime), 60, "the warm process listened for the hooks")
    (pid,) = holders(runtime)
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        asked = hook("UserPromptSubmit", "s", project, prompt="deploy it")
        ran = spawn_hook("claude-code", asked, db, project, MEMLIKEHUMAN_INJECT_WAIT="0.5", **LOCAL)
        assert time.monotonic() - started < 5
    finally:
        os.kill(pid, signal.SIGCONT)
    assert ran.returncode == 0 and len(stored(db)) == 1


def test_a_memlikehuman_folder_in_the_project_is_never_run_by_the_warm_process(
    db: Path | str, project: Path, runtime: Path
) -> None:
    planted = project / "memlikehuman" / "hosts"
    planted.mkdir(parents=True)
    marker = project.parent / "planted-code-ran"
    (planted.parent / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (planted / "__init__.py").write_text("")
    (planted / "warm.py").write_text("def main() -> None:\n    pass\n")
    spawn_hook("claude-code", hook("SessionStart", "s", project, source="startup"), db, project, **LOCAL)
    wait_for(lambda: holders(runtime), 30, "the installed warm process held its lock")
    assert not marker.exists()


# -- hooks handed to the hook forker --------------------------------------------------------------


def forker_socket(runtime: Path) -> Path | None:
    # not the hidden name a socket is bound under before its rename (pathlib's glob matches it)
    found = sorted(runtime.glob("[!.]*.hooks.*.sock")) if runtime.is_dir() else []
    return found[0] if found else None


def forker_pid(runtime: Path) -> int:
    """The process ID of the hook forker listening in `runtime` (its command line names its socket)."""
    path = forker_socket(runtime)
    assert path is not None
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            line = (entry / "cmdline").read_bytes()
            if entry.name.isdigit() and b"hosts.zygote" in line and str(path).encode() in line:
                return int(entry.name)
    raise AssertionError("no hook forker runs")


def warmed(db: Path | str, project: Path, runtime: Path) -> None:
    """The archive's warm process started by a hook, its hook forker listening."""
    spawn_hook("claude-code", hook("SessionStart", "warm", project, source="startup"), db, project, **LOCAL)
    wait_for(lambda: forker_socket(runtime), 60, "the hook forker listened")


IMPORTS_PROBE = """import io, json, os, sys
sys.argv = ["memlikehuman", "hook", "claude-code"]
sys.stdin = io.TextIOWrapper(io.BytesIO(os.environ["PAYLOAD"].encode()))
from memlikehuman.hosts.entry import main
def stay(status):
    raise SystemExit(status)
os._exit = stay
try:
    main()
except SystemExit:
    pass
sys.stderr.write(json.dumps(sorted(m for m in ("memlikehuman.engine", "memlikehuman.hosts.hook") if m in sys.modules)))
"""


@pytest.mark.lifecycle
def test_while_the_warm_process_runs_a_hook_process_imports_none_of_the_hook_and_answers_all_the_same(
    db: Path | str, project: Path, runtime: Path
) -> None:
    warmed(db, project, runtime)
    payload = json.dumps(hook("UserPromptSubmit", "s", project, prompt="we deploy on Fridays"))
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home_of(db)),
        **BASE_ENV,
        **LOCAL,
        "MEMLIKEHUMAN_DB": str(db),
    }
    done = subprocess.run([sys.executable, "-c", IMPORTS_PROBE], env={**env, "PAYLOAD": payload}, cwd=project,
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert json.loads(done.stderr) == []  # the forker's child ran it
    assert "This prompt is recorded as" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert [e["text"] for e in stored(db)] == ["we deploy on Fridays"]


@pytest.mark.lifecycle
def test_a_hook_handed_on_runs_in_its_own_environment_and_working_directory(
    db: Path | str, project: Path, runtime: Path
) -> None:
    warmed(db, project, runtime)
    asked = {"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": "we deploy on Fridays"}  # no cwd
    env = {**LOCAL, "MEMLIKEHUMAN_PERSONA": "alice", "MEMLIKEHUMAN_PROJECT": "auto"}
    assert spawn_hook("claude-code", asked, db, project, **env).returncode == 0
    (event,) = stored(db)
    assert (event["persona_id"], event["project_id"]) == ("alice", project_name(project))


@pytest.mark.lifecycle
def test_a_hook_without_a_session_runs_in_its_own_process(db: Path | str, project: Path, runtime: Path) -> None:
    warmed(db, project, runtime)
    asked = {"cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": "we deploy on Fridays"}
    assert spawn_hook("claude-code", asked, db, project, **LOCAL).returncode == 0
    (event,) = stored(db)
    assert event["session_id"].startswith(f"process-{os.getpid()}-")  # keyed by the host: this test


@pytest.mark.lifecycle
def test_a_suspended_hook_forker_costs_a_hook_at_most_a_second_and_runs_it_once(
    db: Path | str, project: Path, runtime: Path
) -> None:
    warmed(db, project, runtime)
    pid = forker_pid(runtime)
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        asked = hook("UserPromptSubmit", "s", project, prompt="we deploy on Fridays")
        ran = spawn_hook("claude-code", asked, db, project, MEMLIKEHUMAN_INJECT_WAIT="0.5", **LOCAL)
        took = time.monotonic() - started
    finally:
        os.kill(pid, signal.SIGCONT)
    assert took < 5 and len(ran.stdout.splitlines()) == 1 and "This prompt is recorded as" in ran.stdout
    again = spawn_hook(
        "claude-code", hook("UserPromptSubmit", "s", project, prompt="and on Mondays"), db, project, **LOCAL
    )
    assert again.returncode == 0 and [e["text"] for e in stored(db)] == ["we deploy on Fridays", "and on Mondays"]


@pytest.mark.lifecycle
def test_the_hook_forker_ends_with_its_warm_process(db: Path | str, project: Path, runtime: Path) -> None:
    warmed(db, project, runtime)
    pid = forker_pid(runtime)
    assert warm.stop(runtime)
    wait_for(lambda: forker_socket(runtime) is None and not Path(f"/proc/{pid}").exists(), 30, "the forker ended")


# -- what others record --------------------------------------------------------------------------


def test_catch_up_embeds_what_another_process_recorded_before_its_first_look(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite3"
    with Engine(make_settings(db)) as writer:  # a hook: no embedder, the event left without a vector
        writer.record(Scope(), "e1", "The invoices go out on the first of each month", "user", "claude-code")
    with Engine(make_settings(db, **LOCAL)) as engine:
        assert engine.catch_up()  # its first look: the event is new to it
        assert engine.indexer.wait_idle(120)
        assert missing_vectors(db) == 0
        with Engine(make_settings(db)) as writer:
            writer.record(Scope(), "e2", "Staging runs on port 8443", "user", "claude-code")
        assert engine.catch_up() and engine.indexer.wait_idle(120)
        assert missing_vectors(db) == 0
        assert not engine.catch_up()  # nothing new since


# -- its end -------------------------------------------------------------------------------------


@pytest.mark.lifecycle
def test_the_warm_process_ends_after_its_idle_timeout_and_leaves_no_file(
    db: Path | str, project: Path, runtime: Path
) -> None:
    env = {**LOCAL, "MEMLIKEHUMAN_WARM_IDLE": "2"}
    spawn_hook("claude-code", hook("UserPromptSubmit", "s", project, prompt="deploy it"), db, project, **env)
    wait_for(lambda: holders(runtime), 30, "a warm process held its lock")
    wait_for(lambda: not holders(runtime), 60, "the warm process ended once idle")
    wait_for(lambda: not list(runtime.iterdir()), 10, "its sockets and its forker's were removed")


@pytest.mark.lifecycle
@pytest.mark.sqlite_only
def test_the_warm_process_ends_when_its_archive_file_is_removed(db: Path, project: Path, runtime: Path) -> None:
    spawn_hook("claude-code", hook("UserPromptSubmit", "s", project, prompt="deploy it"), db, project, **LOCAL)
    wait_for(lambda: ready(runtime), 60, "the warm process listened for the hooks")
    for path in db.parent.glob(db.name + "*"):
        path.unlink()
    wait_for(lambda: not holders(runtime), 30, "the warm process ended without its archive")


def test_its_files_are_owner_only_and_in_the_private_runtime_directory(
    db: Path | str, project: Path, runtime: Path
) -> None:
    spawn_hook("claude-code", hook("UserPromptSubmit", "s", project, prompt="deploy it"), db, project, **LOCAL)
    wait_for(lambda: ready(runtime), 60, "the warm process listened for the hooks")
    assert runtime.stat().st_mode & 0o777 == 0o700
    # the lock; the sockets for MCP, the hooks' channel and the hook forker
    assert sorted(p.suffix for p in runtime.iterdir()) == [".lock", ".sock", ".sock", ".sock"]
    for path in runtime.iterdir():
        assert path.lstat().st_mode & 0o777 == 0o600, path
    if not is_url(db):
        log = Path(f"{db}{warm.LOG_SUFFIX}")
        assert log.stat().st_mode & 0o777 == 0o600


# -- serve as a relay ----------------------------------------------------------------------------


def test_two_serves_relay_to_one_warm_process_that_answers_each_call(
    db: Path | str, project: Path, runtime: Path
) -> None:
    with serve(db, project, **LOCAL) as first, serve(db, project, **LOCAL) as second:
        assert call(first, INIT)["result"]["serverInfo"]["name"] == "memlikehuman"
        assert call(second, INIT)["result"]["serverInfo"]["name"] == "memlikehuman"
        said = tool(2, "memory_record", event_id="e1", text="I drink green tea", role="user", source="test")
        assert not call(first, said)["result"].get("isError")
        read = call(second, tool(3, "memory_read", record_id="e1"))["result"]
        assert "I drink green tea" in json.dumps(read)
        assert len(holders(runtime)) == 1
        assert second.stdin is not None and second.stdout is not None
        # A call written right before stdin ends is answered, then the relay exits (as serve did alone).
        second.stdin.write((json.dumps(tool(4, "memory_read", record_id="e1")) + "\n").encode())
        second.stdin.close()
        assert "I drink green tea" in second.stdout.read().decode()
        assert second.wait(30) == 0
    assert len(holders(runtime)) == 1  # the warm process outlives the relays until it is idle


@pytest.mark.lifecycle
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_relay_ends_at_once_on_the_hosts_signal(db: Path | str, project: Path, runtime: Path, stop: int) -> None:
    with serve(db, project, **LOCAL) as server:
        call(server, INIT)
        server.send_signal(stop)  # Claude Code: SIGINT, then SIGTERM 100 ms later, stdin still open
        assert server.wait(5) == 0
    assert len(holders(runtime)) == 1


@pytest.mark.lifecycle
def test_a_serve_beyond_the_sessions_the_warm_process_takes_serves_by_itself_at_once(
    db: Path | str, project: Path, runtime: Path
) -> None:
    with serve(db, project, **LOCAL) as first:
        call(first, INIT)
    (path,) = [lock.with_suffix(".sock") for lock in runtime.glob("*.lock")]  # the MCP socket
    hello = json.dumps({"op": "mcp", "persona_id": "default", "project_id": "default"}).encode() + b"\n"
    with ExitStack() as held:
        for _ in range(server_warm.MAX_SESSIONS):
            sock = held.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
            with channel.address(path) as where:
                sock.connect(where)
            sock.sendall(hello)
            assert sock.recv(100) == b'{"ok":true}\n'
        started = time.monotonic()
        with serve(db, project, **LOCAL) as beyond:
            assert call(beyond, INIT)["result"]["serverInfo"]["name"] == "memlikehuman"
        assert time.monotonic() - started < relay.START_SECONDS / 2  # not after waiting for a free session


def test_serve_serves_by_itself_when_no_warm_process_can_start(db: Path | str, project: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    with serve(db, project, XDG_CACHE_HOME=str(blocked), **LOCAL) as server:
        assert call(server, INIT)["result"]["serverInfo"]["name"] == "memlikehuman"


PROBE = """import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
try:
    s.sendall(b'{"op": "mcp", "persona_id": "a", "project_id": "b"}\\n')
    print(repr(s.recv(100)))
except (BrokenPipeError, ConnectionResetError):  # closed before the line was sent, or with it unread
    print(repr(b""))
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"), reason="needs root and /usr/bin/python3"
)
@pytest.mark.lifecycle
def test_the_warm_process_closes_a_connection_from_another_user(db: Path | str, project: Path, tmp_path: Path) -> None:
    xdg = Path(tempfile.mkdtemp(prefix="mlh-", dir="/tmp"))  # short: another user's probe connects by path
    runtime = xdg / "memlikehuman"
    try:
        with serve(db, project, XDG_RUNTIME_DIR=str(xdg), **LOCAL) as server:
            call(server, INIT)
        (sock,) = [lock.with_suffix(".sock") for lock in runtime.glob("*.lock")]  # the MCP socket
        for path, mode in ((xdg, 0o711), (runtime, 0o711), (sock, 0o666)):
            os.chmod(path, mode)  # even where another user can reach the socket, the peer's uid is checked
        args = ["/usr/bin/python3", "-I", "-c", PROBE, str(sock)]  # a Python the other user can run
        done = subprocess.run(args, user=65534, capture_output=True, text=True, timeout=30, check=False)
    finally:
        os.chmod(runtime, 0o700)
        warm.stop(runtime)
        shutil.rmtree(xdg, ignore_errors=True)
    assert done.stdout.strip() == "b''", done.stderr
