"""`install codex` / `install gemini` turn the host's hooks on; `uninstall` takes back exactly that."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest
from conftest import BASE_ENV
from hook_support import stored
from test_install import cli, values

from memlikehuman.hosts import jsonedit
from memlikehuman.hosts.edits import FEATURE_LINE

CODEX_WITH_FEATURES = """\
model = "gpt-5.3-codex"  # the default model

[features]
web_search_request = true

[profiles.fast]
model = "gpt-5.3-codex-mini"
"""

GEMINI_DISABLED = """{
  // hooks switched off on purpose
  "hooksConfig": {"enabled": false, "notifications": true},
  "theme": "GitHub"
}
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    directory = tmp_path / "home"
    directory.mkdir()
    return directory


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def values_of(text: str) -> dict:
    return jsonedit.parse(text, "settings.json").value


def round_trip(home: Path, host: str, path: Path) -> str:
    """Install (twice: idempotent), return the installed text, uninstall, check the file is as it was."""
    before = path.read_bytes() if path.exists() else None
    assert cli(home, "install", host).exit_code == 0
    installed = path.read_text()
    assert cli(home, "install", host).exit_code == 0
    assert path.read_text() == installed
    done = cli(home, "uninstall", host)
    assert done.exit_code == 0, done.output
    assert (path.read_bytes() if path.exists() else None) == before
    return installed


def test_codex_install_turns_the_hooks_feature_on_under_the_files_own_features_table(home: Path) -> None:
    path = write(home / ".codex" / "config.toml", CODEX_WITH_FEATURES)
    installed = round_trip(home, "codex", path)
    features = tomllib.loads(installed)["features"]
    assert features == {"web_search_request": True, "codex_hooks": True}
    assert installed.count("[features]") == 1
    assert installed.index(FEATURE_LINE) < installed.index("[profiles.fast]")  # inside the user's table


def test_codex_install_adds_a_features_table_to_a_file_without_one(home: Path) -> None:
    path = write(home / ".codex" / "config.toml", 'model = "gpt-5.3-codex"\n')
    installed = round_trip(home, "codex", path)
    assert tomllib.loads(installed)["features"] == {"codex_hooks": True}


def test_codex_install_into_no_config_file_creates_one_with_the_feature_and_uninstall_deletes_it(home: Path) -> None:
    path = home / ".codex" / "config.toml"
    installed = round_trip(home, "codex", path)
    assert tomllib.loads(installed)["features"] == {"codex_hooks": True}
    assert not path.exists()


@pytest.mark.parametrize("setting", ["hooks = false", "codex_hooks = false", "hooks = true"])
def test_codex_install_leaves_a_hooks_feature_the_user_set(home: Path, setting: str) -> None:
    path = write(home / ".codex" / "config.toml", f"[features]\n{setting}\n")
    installed = round_trip(home, "codex", path)
    assert installed.startswith(f"[features]\n{setting}\n\n")
    assert FEATURE_LINE not in installed


def test_codex_install_with_no_hooks_writes_no_feature(home: Path) -> None:
    path = write(home / ".codex" / "config.toml", CODEX_WITH_FEATURES)
    assert cli(home, "install", "codex", "--no-hooks").exit_code == 0
    assert "codex_hooks" not in path.read_text()


def test_codex_config_that_is_not_toml_is_refused_with_its_name(home: Path) -> None:
    path = write(home / ".codex" / "config.toml", "[features\nhooks = true\n")
    result = cli(home, "install", "codex")
    assert result.exit_code == 1
    assert f"{path} is not valid TOML" in result.output
    assert path.read_text() == "[features\nhooks = true\n"


def test_gemini_install_enables_hooks_and_uninstall_removes_the_setting_it_added(home: Path) -> None:
    path = write(home / ".gemini" / "settings.json", '{\n  "theme": "GitHub"\n}\n')
    installed = round_trip(home, "gemini", path)
    assert values_of(installed)["hooksConfig"] == {"enabled": True}


def test_gemini_install_over_a_disabled_setting_enables_it_and_uninstall_restores_false(home: Path) -> None:
    path = write(home / ".gemini" / "settings.json", GEMINI_DISABLED)
    installed = round_trip(home, "gemini", path)
    assert values_of(installed)["hooksConfig"] == {"enabled": True, "notifications": True}
    assert "// hooks switched off on purpose" in installed


def test_gemini_uninstall_keeps_an_enabled_setting_the_user_wrote(home: Path) -> None:
    path = write(home / ".gemini" / "settings.json", '{"hooksConfig": {"enabled": true}}\n')
    round_trip(home, "gemini", path)
    assert values(path)["hooksConfig"] == {"enabled": True}


def test_gemini_install_with_no_hooks_writes_no_setting(home: Path) -> None:
    path = write(home / ".gemini" / "settings.json", '{\n  "theme": "GitHub"\n}\n')
    assert cli(home, "install", "gemini", "--no-hooks").exit_code == 0
    assert "hooksConfig" not in values(path)


def test_reinstalling_with_another_archive_then_uninstalling_leaves_no_entry_of_ours(home: Path) -> None:
    path = write(home / ".gemini" / "settings.json", '{\n  "theme": "GitHub"\n}\n')
    assert cli(home, "install", "gemini", "--db", str(home / "one.db")).exit_code == 0
    assert cli(home, "install", "gemini", "--db", str(home / "two.db")).exit_code == 0
    assert values(path)["mcpServers"]["memlikehuman"]["env"]["MEMLIKEHUMAN_DB"] == str(home / "two.db")
    assert cli(home, "uninstall", "gemini").exit_code == 0
    assert path.read_text() == '{\n  "theme": "GitHub"\n}\n'


def test_install_record_tools_wires_gemini_after_tool_and_uninstall_removes_it(home: Path) -> None:
    fixture = Path(__file__).parent / "host_configs" / "gemini-settings.json"
    path = write(home / ".gemini" / "settings.json", fixture.read_text())
    before = path.read_bytes()
    assert cli(home, "install", "gemini", "--record", "tools,assistant").exit_code == 0
    hooks = values(path)["hooks"]
    [group] = hooks["AfterTool"]
    assert shlex.split(group["hooks"][0]["command"])[-2:] == ["--record", "assistant,tools"]
    assert "SessionStart" in hooks and "BeforeTool" in hooks  # the user's own BeforeTool hook stays
    assert cli(home, "uninstall", "gemini").exit_code == 0
    assert path.read_bytes() == before


def test_install_without_record_wires_no_per_call_hook(home: Path) -> None:
    assert cli(home, "install", "cursor").exit_code == 0
    hooks = values(home / ".cursor" / "hooks.json")["hooks"]
    assert "postToolUse" not in hooks
    assert all("--record" not in entry["command"] for entries in hooks.values() for entry in entries)


def test_installed_subagent_stop_hook_records_the_subagent_as_claude_code_runs_it(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    assert cli(home, "install", "claude-code", "--record", "assistant,subagents").exit_code == 0
    [group] = values(home / ".claude" / "settings.json")["hooks"]["SubagentStop"]
    fixture = Path(__file__).parent / "hook_payloads" / "claude-code" / "SubagentStop.json"
    payload = {**json.loads(fixture.read_text()), "cwd": str(project)}
    env = {"PATH": os.environ["PATH"], "HOME": str(home), **BASE_ENV}
    done = subprocess.run(
        group["hooks"][0]["command"], shell=True, input=json.dumps(payload), capture_output=True, text=True,
        cwd=project, env=env, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    [event] = stored(home / "m.db")
    assert (event["role"], event["source"]) == ("assistant", "claude-code/subagent")


def test_install_refuses_an_unknown_record_part_and_writes_nothing(home: Path) -> None:
    result = cli(home, "install", "claude-code", "--record", "tools,everything")
    assert result.exit_code == 1
    assert "--record: MEMLIKEHUMAN_HOOK_RECORD names everything" in result.output
    assert not (home / ".claude.json").exists()
