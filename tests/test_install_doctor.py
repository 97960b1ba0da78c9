"""`doctor` lists the wired hosts and when each hook last ran."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import BASE_ENV
from hook_support import run_hook

from memlikehuman.cli import main


def invoke(home: Path, *args: str) -> tuple[int, dict]:
    env = {
        **BASE_ENV,
        "HOME": str(home),
        "XDG_DATA_HOME": "",
        "XDG_CONFIG_HOME": "",
        "MEMLIKEHUMAN_DB": str(home / "m.db"),
    }
    result = CliRunner().invoke(main, list(args), env=env)
    return result.exit_code, json.loads(result.stdout) if "--json" in args else {}


def host_checks(home: Path) -> dict[str, dict]:
    _, report = invoke(home, "doctor", "--json")
    return {c["name"]: c for c in report["checks"] if c["name"].startswith("host ")}


def test_doctor_lists_wired_hosts_and_when_their_hooks_last_ran(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert host_checks(home) == {}
    invoke(home, "install", "claude-code")
    invoke(home, "install", "claude-desktop")
    checks = host_checks(home)
    assert set(checks) == {"host claude-code", "host claude-desktop"}
    assert "have not run yet" in checks["host claude-code"]["detail"]
    assert "no hooks" in checks["host claude-desktop"]["detail"]
    hook = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit", "prompt": "hi"}
    run_hook("claude-code", hook, home / "m.db", tmp_path)
    detail = host_checks(home)["host claude-code"]["detail"]
    assert "hooks last ran: UserPromptSubmit 20" in detail
    invoke(home, "uninstall", "claude-code")
    assert set(host_checks(home)) == {"host claude-desktop"}


def test_doctor_warns_with_the_last_hook_failure(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    invoke(home, "install", "codex")
    run_hook("codex", "not json", home / "m.db", tmp_path)
    check = host_checks(home)["host codex"]
    assert check["status"] == "warn" and "JSONDecodeError" in check["detail"]


def test_doctor_says_when_codex_does_not_trust_our_hooks_as_they_are(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    invoke(home, "install", "codex")
    assert host_checks(home)["host codex"]["status"] == "ok"  # install wrote their trust
    hooks = home / ".codex" / "hooks.json"
    hooks.write_text(hooks.read_text().replace(" hook codex ", " hook codex --record none "))
    check = host_checks(home)["host codex"]
    assert check["status"] == "warn" and "until they are trusted" in check["detail"]
    assert "memlikehuman install codex" in check["detail"]
