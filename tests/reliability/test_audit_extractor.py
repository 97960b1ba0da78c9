"""The command extractor, audited as a hostile or broken CLI would test it, over a real `serve`.

What a run of the CLI may get is an allow-list of the server's environment; what it prints is capped
while it is read; what it starts is killed with it, also a grandchild that left its process group.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import connected, serving, stdio_params
from fake_clis import ENVELOPES, FAILURES, install, runs

TEXT = "I prefer pnpm over npm for this repo. Lodash is fine."
SECRETS = {
    "GITHUB_TOKEN": "ghp_secret",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "DATABASE_URL": "postgresql://app:hunter2@db/app",
    "OPENAI_API_KEY": "sk-ours",
}


def _env(tmp_path: Path, **env: str) -> dict[str, str]:
    """The server's environment: the claude-code preset, its CLI on PATH with tmp_path/bin first."""
    path = f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    return {"MEMLIKEHUMAN_EXTRACTOR": "command", "MEMLIKEHUMAN_EXTRACTOR_COMMAND": "claude-code", "PATH": path,
            "HOME": str(tmp_path / "home"), **env}  # fmt: skip


def _serving(tmp_path: Path, **env: str) -> Any:
    return serving(tmp_path / "a.sqlite3", **_env(tmp_path, **env))


def _server() -> psutil.Process:
    """The `memlikehuman serve` process the MCP client started."""
    (server,) = [p for p in psutil.Process().children(recursive=True) if "serve" in p.cmdline()]
    return server


def _peak_rss(process: psutil.Process) -> int:
    """The process's peak resident set size so far, in bytes (VmHWM)."""
    status = Path(f"/proc/{process.pid}/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(line.split()[1]) * 1024


def test_the_cli_sees_no_secret_of_the_servers_environment_only_what_it_needs_and_what_the_user_named(tmp_path):
    install(tmp_path / "bin", "claude", ENVELOPES["claude"], sys.executable)
    env = {**SECRETS, "ANTHROPIC_API_KEY": "sk-ant-its-own", "AWS_REGION": "eu-west-1", "KEPT_VARIABLE": "kept"}
    named = {"MEMLIKEHUMAN_EXTRACTOR_ENV": "AWS_REGION, KEPT_VARIABLE", "MEMLIKEHUMAN_EXTRACTION_WAIT": "20"}
    with connected(_serving(tmp_path, **env, **named)) as client:
        out = client.ok("memory_record", event_id="c-1", text=TEXT, role="user", source="user")
    assert out["extraction_state"] == "complete", out
    (run,) = runs(tmp_path / "bin")
    seen = {k: v for k, v in run["env"].items() if v is not None and not k.startswith("LC_")}  # locale: below
    assert seen == {
        "MEMLIKEHUMAN_EXTRACTING": "1",
        "ANTHROPIC_API_KEY": "sk-ant-its-own",  # the preset's CLI reads its own key
        "AWS_REGION": "eu-west-1",  # named by the user
        "KEPT_VARIABLE": "kept",
    }


def test_only_the_standard_locale_variables_reach_the_cli_not_any_name_that_starts_with_lc(tmp_path):
    install(tmp_path / "bin", "claude", ENVELOPES["claude"], sys.executable)
    env = {"LC_ALL": "C.UTF-8", "LC_TIME": "C", "LC_SECRET_TOKEN": "stolen", "MEMLIKEHUMAN_EXTRACTION_WAIT": "20"}
    with connected(_serving(tmp_path, **env)) as client:
        out = client.ok("memory_record", event_id="c-1", text=TEXT, role="user", source="user")
    assert out["extraction_state"] == "complete", out
    (run,) = runs(tmp_path / "bin")
    assert (run["env"]["LC_ALL"], run["env"]["LC_TIME"], run["env"]["LC_SECRET_TOKEN"]) == ("C.UTF-8", "C", None)


@pytest.mark.parametrize("flood", ["flood", "flood-stderr"])
def test_a_cli_printing_300_mb_is_stopped_at_the_cap_and_the_server_stays_small(tmp_path, flood):
    install(tmp_path / "bin", "claude", FAILURES[flood], sys.executable)
    params = stdio_params(tmp_path / "a.sqlite3", **_env(tmp_path, MEMLIKEHUMAN_EXTRACTION_WAIT="60"))
    with connected(params) as client:  # the server's own RSS: a process of its own
        before = _peak_rss(_server())
        out = client.ok("memory_record", event_id="c-2", text=TEXT, role="user", source="user")
        after = _peak_rss(_server())
    stream = "stderr" if flood == "flood-stderr" else "stdout"
    assert out["extraction_state"] == "pending" and "printed more than" in out["error"] and stream in out["error"]
    assert after - before < 100 * 2**20, f"peak RSS grew by {(after - before) / 2**20:.0f} MB"


def test_a_grandchild_that_left_the_process_group_is_killed_with_the_run(tmp_path):
    install(tmp_path / "bin", "claude", FAILURES["escape"], sys.executable)
    env = {"MEMLIKEHUMAN_EXTRACTION_WAIT": "0", "MEMLIKEHUMAN_TIMEOUT": "2"}
    note = tmp_path / "bin" / "grandchild.pid"
    with connected(_serving(tmp_path, **env)) as client:
        client.ok("memory_record", event_id="c-3", text=TEXT, role="user", source="user")
        deadline = time.monotonic() + 30
        while not (note.exists() and note.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)  # the file is created before its pid is written
        grandchild = psutil.Process(int(note.read_text()))
        time.sleep(0.5)
        assert grandchild.is_running() and os.getsid(grandchild.pid) == grandchild.pid  # a session of its own
        (run,) = runs(tmp_path / "bin")
        try:
            grandchild.wait(timeout=20)  # the run's timeout (2 s) kills the tree
        finally:
            if grandchild.is_running():
                grandchild.kill()
        assert not psutil.pid_exists(run["pid"])
        deadline = time.monotonic() + 20
        while "did not answer" not in (
            error := str(client.ok("memory_read", record_id="c-3")["event"]["extraction_error"])
        ):
            assert time.monotonic() < deadline, error
            time.sleep(0.1)
    assert "did not answer within 2 s" in error


PARENT = """
import sys
from memlikehuman.providers import run
process = run.start((sys.executable, "-c", "import time; print('started', flush=True); time.sleep(600)"), {}, "/")
print(process.pid, flush=True)
print(process.stdout.readline().decode().strip(), flush=True)
import time; time.sleep(600)
"""


def test_a_run_dies_with_a_server_that_is_killed(tmp_path):
    # The host may SIGKILL the server: its extraction run must not go on alone (and cost) without it.
    with subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True) as parent:
        assert parent.stdout is not None
        reaper = psutil.Process(int(parent.stdout.readline()))
        assert parent.stdout.readline().strip() == "started"
        command = reaper.children()[0]
        parent.kill()
        parent.wait()
        gone, alive = psutil.wait_procs([reaper, command], timeout=20)
        for process in alive:
            process.kill()
    assert alive == []
