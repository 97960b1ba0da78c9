"""What keeps `memlikehuman hook` quick to start: modules it never imports, and the shortcuts it takes.

The latency itself is measured by bench/hooks.py (docs/benchmarks.md, "hooks"), not asserted here.
SQLite only: these are the start-up shortcuts of the default archive. A hook on a PostgreSQL archive
imports psycopg to connect (a server round trip costs more than any module here), and the hook
tests that record, inject, dedupe and fail open run on both backends (hook_support's `db`).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import apsw
import platformdirs
import pytest
from hook_support import run_hook, spawn_hook, stored

from memlikehuman import config
from memlikehuman.archive import claims
from memlikehuman.text import dates, digest

# Imported by none of the hook steps below: each costs milliseconds of every prompt's start-up.
NEVER = ("mcp", "click", "numpy", "pydantic", "openai", "quicktok", "tiktoken", "tokenizers", "platformdirs")
NEVER += ("socket", "tomllib", "uuid", "memlikehuman.lifecycle.forget", "memlikehuman.lifecycle.correct")
NEVER += ("hashlib", "_hashlib", "logging", "secrets", "random")  # OpenSSL, handlers, hmac: ~15 ms together
# Built on first use by the engine, or loaded by records.py on first use: never on a hook's path.
NEVER += ("memlikehuman.lifecycle.extract", "memlikehuman.lifecycle.worker", "memlikehuman.index.indexer")
NEVER += ("memlikehuman.index.vectors", "memlikehuman.providers.embedders", "memlikehuman.records.reports")


def imported_by_one_hook_run(event: dict[str, object], db: Path) -> list[str]:
    code = (
        "import io, json, os, sys\n"
        "sys.argv = ['memlikehuman', 'hook', 'claude-code', '--project', 'app']\n"
        f"sys.stdin = io.StringIO({json.dumps(json.dumps(event))})\n"
        "from memlikehuman.hosts.entry import main\n"
        "def stay(status):\n    raise SystemExit(status)\n"
        "os._exit = stay\n"  # the console script ends with os._exit: keep this process to look at
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"sys.stderr.write(json.dumps(sorted(m for m in {NEVER!r} if m in sys.modules)))\n"
    )
    env = {"MEMLIKEHUMAN_DB": str(db), "MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
    env["HOME"] = str(db.parent)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return list(json.loads(done.stderr.splitlines()[-1]))


@pytest.mark.parametrize(
    "event",
    [
        {"hook_event_name": "UserPromptSubmit", "prompt": "where do we deploy?"},
        {"hook_event_name": "SessionStart", "source": "startup"},
    ],
)
def test_the_prompt_and_start_hooks_import_no_slow_module(db: Path, project: Path, event: dict[str, object]) -> None:
    seed = {"session_id": "s0", "cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": "we deploy"}
    assert imported_by_one_hook_run(seed, db) == []
    assert imported_by_one_hook_run({"session_id": "s1", "cwd": str(project), **event}, db) == []
    assert len(stored(db)) == 1 + (event["hook_event_name"] == "UserPromptSubmit")


def test_a_start_hook_reads_an_up_to_date_archive_while_another_process_holds_the_write_lock(
    db: Path, project: Path
) -> None:
    seed = {"session_id": "s0", "cwd": str(project), "hook_event_name": "UserPromptSubmit"}
    assert run_hook("claude-code", {**seed, "prompt": "we deploy from the blue branch"}, db, project).returncode == 0
    writer = apsw.Connection(str(db))
    writer.execute("BEGIN IMMEDIATE")  # a long import or forget in another process
    try:
        start = {"session_id": "s1", "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}
        # A process of its own: the write lock is held by another process (SQLite's POSIX locks are per
        # process; two connections of one process meet in SQLite's own bookkeeping instead).
        ran = spawn_hook("claude-code", start, db, project)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert ran.returncode == 0 and ran.stderr == ""
    assert "we deploy from the blue branch" in ran.json()["hookSpecificOutput"]["additionalContext"]


def test_a_hook_leaves_the_write_ahead_log_to_the_next_writer_and_its_event_stays_readable(
    db: Path, project: Path
) -> None:
    prompt = {"session_id": "s0", "cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": "tea at five"}
    assert run_hook("claude-code", prompt, db, project).returncode == 0
    wal = db.with_name(db.name + "-wal")
    assert wal.exists() and wal.stat().st_size > 0  # not copied into the file by the hook's close
    assert [row["text"] for row in stored(db)] == ["tea at five"]
    assert not wal.exists()  # the last connection to close without that option checkpoints it


def test_the_sha256_helper_gives_the_digests_hashlib_gives() -> None:
    for data in (b"", b"we deploy on Friday", "Zoë 🚀".encode(), bytes(range(256)) * 300):
        assert digest.sha256_hex(data) == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("xdg", [None, "/srv/conf", "relative/conf", ""])
def test_the_config_file_path_is_the_one_platformdirs_gives(monkeypatch: pytest.MonkeyPatch, xdg: str | None) -> None:
    if xdg is None:
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
    expected = Path(platformdirs.user_config_dir("memlikehuman")) / "config.toml"
    assert config.default_config_path() == expected


@pytest.mark.parametrize("home", ["/home/ada", "relative/home", None])
@pytest.mark.parametrize("xdg", [None, "/srv/data", "relative/data", ""])
def test_the_default_archive_is_where_platformdirs_puts_user_data_and_a_handed_environment_names_it(
    monkeypatch: pytest.MonkeyPatch, xdg: str | None, home: str | None
) -> None:
    for name, value in (("XDG_DATA_HOME", xdg), ("HOME", home)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    expected = Path(platformdirs.user_data_dir("memlikehuman", appauthor=False)) / "memory.sqlite3"
    assert config.default_db_path() == expected
    handed = dict(os.environ)
    monkeypatch.setenv("XDG_DATA_HOME", "/elsewhere")  # this process's, which a handed environment overrules
    monkeypatch.setenv("HOME", "/elsewhere")
    assert config.default_db_path(handed) == expected


def test_a_workers_host_in_its_claims_is_the_socket_host_name() -> None:
    host, pid, token = claims.owner_id().rsplit(":", 2)
    assert host == socket.gethostname()
    assert pid.isdigit() and len(token) == 8


def test_text_that_names_no_date_compiles_no_date_pattern() -> None:
    code = (
        "from memlikehuman.text import dates\n"
        "assert dates.relative_spans('we deploy on the staging box', '2024-05-08T10:00:00Z') == []\n"
        "assert dates.date_windows('which staging database does release 5 use?') == []\n"
        "assert dates._compiled.cache_info().currsize == 0, dates._compiled.cache_info()\n"
        "assert dates.relative_spans('we shipped yesterday', '2024-05-08') == [('2024-05-07', '2024-05-08')]\n"
        "assert dates._compiled.cache_info().currsize == 1\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    "text", ["Yesterday we shipped", "yeſterday we shipped", "two WEEKS AGO", "Xmas 2023", "on 12.01.2024"]
)
def test_a_date_in_any_case_or_with_a_non_ascii_look_alike_is_still_found(text: str) -> None:
    found = dates.relative_spans(text, "2024-05-08T10:00:00Z") or dates.date_windows(text)
    assert found, text
