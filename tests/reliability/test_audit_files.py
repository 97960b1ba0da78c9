"""What another local user can read: every file memlikehuman writes is 0600, every directory it creates 0700.

The hooks, the server and the command line run under the user's umask (usually 022, which makes new
files readable by everyone). Each test sets that umask for the processes it starts and reads the
modes back; the archive holds the user's own words, and so do its WAL and its side files.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_settings
from hook_support import SCRIPT, run_hook, spawn_hook

from memlikehuman.engine import Engine
from memlikehuman.hosts import warm
from memlikehuman.records import Scope


@pytest.fixture(autouse=True)
def permissive_umask() -> Iterator[None]:
    """The usual umask of a desktop session: group and others may read what is created."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def _modes(root: Path) -> dict[str, int]:
    """Every file and directory under root (root included), by relative name, with its permission bits."""
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def _readable_by_others(modes: dict[str, int]) -> dict[str, str]:
    return {name: oct(mode) for name, mode in modes.items() if mode & 0o077}


def _prompt(session: str, text: str) -> dict[str, str]:
    return {"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": text, "cwd": "/tmp"}


def test_a_new_archive_its_wal_and_the_hooks_side_files_are_owner_only(tmp_path: Path):
    data = tmp_path / "fresh" / "deeper"  # two directories the hook creates
    db = data / "memory.sqlite3"
    project = tmp_path / "project"
    project.mkdir()
    # Hook processes, as a host starts them: whatever they and SQLite create, under the process's own umask.
    assert spawn_hook("claude-code", _prompt("s1", "My PIN is 4711, keep it private"), db, project).returncode == 0
    spawn_hook("claude-code", {"session_id": "s1", "hook_event_name": "Stop", "last_assistant_message": "Noted."}, db,
               project)  # fmt: skip
    spawn_hook("claude-code", "not json", db, project)  # a failure: the hooks' log
    modes = _modes(tmp_path / "fresh")
    names = set(modes)
    assert {"deeper/memory.sqlite3", "deeper/memory.sqlite3.hooks.json", "deeper/memory.sqlite3.hooks.log"} <= names
    assert {"deeper/memory.sqlite3-wal", "deeper/memory.sqlite3.replies.json"} <= names
    assert _readable_by_others(modes) == {}
    assert modes["."] == modes["deeper"] == 0o700


def test_the_wal_of_an_archive_opened_in_process_is_owner_only(tmp_path: Path):
    db = tmp_path / "lib" / "memory.sqlite3"
    with Engine(make_settings(db)) as engine:
        engine.record(Scope(), "e1", "the safe code is 9931", "user", "test")
        modes = _modes(tmp_path / "lib")
    assert "memory.sqlite3-wal" in modes
    assert _readable_by_others(modes) == {}


def test_an_export_written_to_a_file_is_owner_only(tmp_path: Path):
    db = tmp_path / "memory.sqlite3"
    with Engine(make_settings(db)) as engine:
        engine.record(Scope(), "e1", "the safe code is 9931", "user", "test")
    out = tmp_path / "out" / "export.jsonl"
    out.parent.mkdir()
    done = subprocess.run(
        [str(SCRIPT), "--db", str(db), "export", "--all", "-o", str(out)], capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_an_archive_readable_by_others_is_tightened_when_opened_and_says_so(tmp_path: Path):
    db = tmp_path / "memory.sqlite3"
    with Engine(make_settings(db)) as engine:
        engine.record(Scope(), "e1", "the safe code is 9931", "user", "test")
    side = tmp_path / "memory.sqlite3.hooks.json"
    side.write_text(json.dumps({}))
    for path in (db, side):
        path.chmod(0o644)
    done = subprocess.run([str(SCRIPT), "--db", str(db), "stats"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert _readable_by_others(_modes(tmp_path)) == {}
    assert "owner-only" in done.stderr and str(db) in done.stderr
    again = subprocess.run([str(SCRIPT), "--db", str(db), "stats"], capture_output=True, text=True, check=False)
    assert "owner-only" not in again.stderr  # said once, when it changed something


def test_nothing_of_ours_or_of_our_libraries_writes_into_home_outside_our_own_directories(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MEMLIKEHUMAN_", "ORT_"))}
    env.update(HOME=str(home), MEMLIKEHUMAN_CONFIG="/nonexistent", MEMLIKEHUMAN_EMBEDDER="local")
    # The server with the local embedder (onnxruntime), a record, a semantic recall; then a hook.
    calls = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_record", "arguments": {
            "event_id": "e1", "text": "the boat is moored in Aarhus", "role": "user", "source": "t"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "memory_recall", "arguments": {
            "query": "where is the boat", "search_mode": "deep"}}},
    ]  # fmt: skip
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    try:
        with subprocess.Popen([str(SCRIPT), "serve"], text=True, env=env, **pipes) as served:
            assert served.stdin is not None and served.stdout is not None
            served.stdin.write("".join(json.dumps(call) + "\n" for call in calls))
            served.stdin.flush()
            answers = [json.loads(served.stdout.readline()) for _ in range(3)]  # stdin stays open until they came
            served.stdin.close()
            assert served.wait(timeout=60) == 0
        by_id = {a["id"]: a for a in answers}  # calls may be answered in any order (sync tools run in threads)
        assert sorted(by_id) == [1, 2, 3] and not by_id[3]["result"]["isError"]
        project = tmp_path / "project"
        project.mkdir()
        hook = subprocess.run(
            [str(SCRIPT), "hook", "claude-code"],
            input=json.dumps(_prompt("s1", "where is the boat moored")),
            capture_output=True,
            text=True,
            env=env,
            cwd=project,
            timeout=60,
            check=False,
        )
        assert hook.returncode == 0, hook.stderr
    finally:
        assert warm.stop(home / ".cache" / "memlikehuman" / "run")  # serve relayed to the warm process it started
    ours = (home / ".local" / "share" / "memlikehuman", home / ".cache" / "memlikehuman")
    written = [p for p in home.rglob("*") if p.is_file()]
    assert written, "the default archive was not created under HOME"
    assert [str(p.relative_to(home)) for p in written if not any(d in p.parents for d in ours)] == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_an_archive_another_user_created_first_is_refused(tmp_path: Path):
    # Another user created the archive (or its WAL) first, where ours was to be: what we wrote would be
    # theirs to read. Acted out by giving the file to `nobody`.
    planted = tmp_path / "memory.sqlite3"
    planted.write_bytes(b"")
    os.chown(planted, 65534, 65534)
    run = subprocess.run([str(SCRIPT), "--db", str(planted), "stats"], capture_output=True, text=True, check=False)
    assert run.returncode == 1 and "belongs to another user (uid 65534)" in run.stderr
    assert planted.read_bytes() == b""  # nothing was written into it
    wal = tmp_path / "memory.sqlite3-wal"
    os.chown(planted, 0, 0)
    wal.write_bytes(b"")
    os.chown(wal, 65534, 65534)
    run = subprocess.run([str(SCRIPT), "--db", str(planted), "stats"], capture_output=True, text=True, check=False)
    assert run.returncode == 1 and f"{wal} belongs to another user" in run.stderr


def _archive(directory: Path) -> Path:
    """An archive with one event, in `directory` (made here)."""
    directory.mkdir(exist_ok=True)
    db = directory / "memory.sqlite3"
    with Engine(make_settings(db)) as engine:
        engine.record(Scope(), "e1", "the safe code is 9931", "user", "test")
    return db


def _export(db: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "--db", str(db), "export", "--all", "-o", str(out)], capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("dangling", [True, False], ids=["dangling", "existing"])
def test_an_export_never_writes_through_a_link_planted_at_its_partial_name(tmp_path: Path, dangling: bool):
    db = _archive(tmp_path / "lib")
    victim = tmp_path / "victim"
    victim.mkdir()
    aliases = victim / ".bash_aliases"
    aliases.write_bytes(b"alias ll='ls -l'\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    out = shared / "export.jsonl"
    target = victim / ".profile" if dangling else aliases
    (shared / "export.jsonl.partial").symlink_to(target)
    done = _export(db, out)
    assert done.returncode == 1, done.stderr
    assert "symbolic link" in done.stderr and f"{out}.partial" in done.stderr
    assert sorted(p.name for p in victim.iterdir()) == [".bash_aliases"]
    assert aliases.read_bytes() == b"alias ll='ls -l'\n"
    assert sorted(p.name for p in shared.iterdir()) == ["export.jsonl.partial"]  # the link is left to its owner
    assert os.readlink(shared / "export.jsonl.partial") == str(target)


def test_an_export_replaces_its_own_partial_file_left_by_an_interrupted_run(tmp_path: Path):
    db = _archive(tmp_path / "lib")
    out = tmp_path / "export.jsonl"
    (tmp_path / "export.jsonl.partial").write_text("half of an older export")
    done = _export(db, out)
    assert done.returncode == 0, done.stderr
    assert "the safe code is 9931" in out.read_text()
    assert not (tmp_path / "export.jsonl.partial").exists()


def test_an_export_to_a_symbolic_link_replaces_the_link_and_leaves_its_target_alone(tmp_path: Path):
    db = _archive(tmp_path / "lib")
    target = tmp_path / "elsewhere.txt"
    target.write_bytes(b"not yours\n")
    out = tmp_path / "export.jsonl"
    out.symlink_to(target)
    done = _export(db, out)
    assert done.returncode == 0, done.stderr
    assert not out.is_symlink() and stat.S_IMODE(out.stat().st_mode) == 0o600
    assert "the safe code is 9931" in out.read_text()
    assert target.read_bytes() == b"not yours\n"


def _stats(db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), "--db", str(db), "stats"], capture_output=True, text=True, check=False)


def test_an_archive_in_a_directory_every_user_can_write_is_refused_and_left_alone(tmp_path: Path):
    # Anyone may delete or replace the WAL there (a lost commit), or plant its name first.
    db = _archive(tmp_path / "open")
    db.parent.chmod(0o777)
    before = sorted(p.name for p in db.parent.iterdir())
    done = _stats(db)
    assert done.returncode == 1
    assert f"unavailable: the archive's directory {db.parent} can be written by other users" in done.stderr
    assert f"chmod go-w {db.parent}" in done.stderr
    assert sorted(p.name for p in db.parent.iterdir()) == before
    db.parent.chmod(0o700)
    assert _stats(db).returncode == 0


def test_a_hook_on_an_archive_in_a_directory_every_user_can_write_answers_do_nothing_and_writes_nothing(
    tmp_path: Path,
):
    db = _archive(tmp_path / "open")
    db.parent.chmod(0o777)
    before = sorted(p.name for p in db.parent.iterdir())
    project = tmp_path / "project"
    project.mkdir()
    prompts = {"claude-code": "UserPromptSubmit", "cursor": "beforeSubmitPrompt", "gemini": "BeforeAgent"}
    for host, answer in (("claude-code", ""), ("cursor", '{"continue": true}\n'), ("gemini", "{}\n")):
        payload = {**_prompt("s1", "remember the gate code 1234"), "hook_event_name": prompts[host]}
        ran = run_hook(host, {**payload, "workspace_roots": [str(project)]}, db, project)
        assert (ran.returncode, ran.stdout) == (0, answer)
        assert "can be written by other users" in ran.stderr
    assert sorted(p.name for p in db.parent.iterdir()) == before


def test_an_archive_in_a_sticky_directory_of_the_user_is_opened(tmp_path: Path):
    # Sticky and ours: others may add names there, never remove or rename ours (a name planted first is
    # refused as another user's).
    db = _archive(tmp_path / "sticky")
    db.parent.chmod(0o1777)
    assert _stats(db).returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_an_archive_in_a_directory_of_another_user_or_group_is_refused(tmp_path: Path):
    db = _archive(tmp_path / "theirs")
    os.chown(db.parent, 65534, 65534)
    done = _stats(db)
    assert done.returncode == 1
    assert f"the archive's directory {db.parent} belongs to another user (uid 65534)" in done.stderr
    os.chown(db.parent, 0, 65534)
    db.parent.chmod(0o770)  # writable by a group whose members are not only us
    done = _stats(db)
    assert done.returncode == 1 and "can be written by other users" in done.stderr
    os.chown(db.parent, 0, 0)
    db.parent.chmod(0o700)
    assert _stats(db).returncode == 0
