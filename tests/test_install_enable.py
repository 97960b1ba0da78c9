"""`install codex` / `install gemini` set what the host needs to run our hooks and tools; `uninstall` takes it back."""

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


def test_codex_install_writes_no_feature_line_and_leaves_a_feature_the_user_set(home: Path) -> None:
    # Codex 0.171 runs hooks by default and warns on every run about `codex_hooks` (deprecated).
    path = write(home / ".codex" / "config.toml", CODEX_WITH_FEATURES.replace("web_search_request", "hooks"))
    installed = round_trip(home, "codex", path)
    assert tomllib.loads(installed)["features"] == {"hooks": True}
    assert "codex_hooks" not in installed


def test_codex_install_gives_servers_time_to_start_before_the_first_table_and_uninstall_takes_it_back(home: Path):
    path = write(home / ".codex" / "config.toml", CODEX_WITH_FEATURES)
    installed = round_trip(home, "codex", path)
    assert tomllib.loads(installed)["mcp_optional_startup_grace_ms"] == 5000  # a top-level key
    assert installed.index("mcp_optional_startup_grace_ms") < installed.index("[features]")


def test_codex_install_leaves_a_start_up_grace_the_user_set(home: Path) -> None:
    path = write(home / ".codex" / "config.toml", "mcp_optional_startup_grace_ms = 200\n" + CODEX_WITH_FEATURES)
    installed = round_trip(home, "codex", path)
    assert tomllib.loads(installed)["mcp_optional_startup_grace_ms"] == 200


def test_codex_install_approves_our_tools_and_trusts_exactly_our_hooks_in_codex_home(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex_home = home / "elsewhere"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    write(codex_home / "hooks.json", (Path(__file__).parent / "host_configs" / "codex-hooks.json").read_text())
    assert cli(home, "install", "codex").exit_code == 0
    assert not (home / ".codex").exists()
    config = tomllib.loads((codex_home / "config.toml").read_text())
    assert config["mcp_servers"]["memlikehuman"]["default_tools_approval_mode"] == "approve"
    trusted = config["hooks"]["state"]
    hooks = str((codex_home / "hooks.json").resolve())
    events = ("session_start", "user_prompt_submit", "stop", "pre_compact", "session_end")
    # The user's PreToolUse hook is theirs to trust; ours are the first group of each of our events.
    assert sorted(trusted) == sorted(f"{hooks}:{event}:0:0" for event in events)
    first = dict(trusted)
    assert cli(home, "install", "codex", "--db", str(home / "other.sqlite3")).exit_code == 0
    again = tomllib.loads((codex_home / "config.toml").read_text())["hooks"]["state"]
    assert set(again) == set(first) and all(again[k] != first[k] for k in first)  # another command, another hash
    assert cli(home, "uninstall", "codex").exit_code == 0
    assert not (codex_home / "config.toml").exists()  # install made it: uninstall takes it, trust and all


def test_codex_reinstall_keeps_what_the_user_added_to_our_block(home: Path) -> None:
    path = home / ".codex" / "config.toml"
    assert cli(home, "install", "codex").exit_code == 0
    text = path.read_text()
    text = text.replace(
        'default_tools_approval_mode = "approve"\n',
        'default_tools_approval_mode = "prompt"\nstartup_timeout_sec = 20\n',
    )
    text = text.replace(
        "# <<< memlikehuman",
        '[mcp_servers.memlikehuman.tools.memory_forget]\napproval_mode = "prompt"\n# <<< memlikehuman',
    )
    path.write_text(text)
    assert cli(home, "install", "codex", "--db", str(home / "other.sqlite3")).exit_code == 0
    server = tomllib.loads(path.read_text())["mcp_servers"]["memlikehuman"]
    assert (server["default_tools_approval_mode"], server["startup_timeout_sec"]) == ("prompt", 20)
    assert server["tools"]["memory_forget"] == {"approval_mode": "prompt"}
    assert server["env"]["MEMLIKEHUMAN_DB"] == str(home / "other.sqlite3")


def test_codex_uninstall_never_leaves_a_config_codex_cannot_read(home: Path) -> None:
    path = home / ".codex" / "config.toml"
    assert cli(home, "install", "codex").exit_code == 0
    # A user's per-tool table outside our block: without our server Codex refuses the whole file.
    path.write_text(path.read_text() + '\n[mcp_servers.memlikehuman.tools.memory_record]\napproval_mode = "approve"\n')
    assert cli(home, "uninstall", "codex").exit_code == 0
    left = tomllib.loads(path.read_text()) if path.exists() else {}
    assert "memlikehuman" not in left.get("mcp_servers", {})


def test_codex_reinstall_over_a_block_an_older_release_wrote_takes_none_of_its_values(home: Path) -> None:
    path = write(home / ".codex" / "config.toml", 'model = "m"\n')
    assert cli(home, "install", "codex").exit_code == 0
    records = home / ".local" / "share" / "memlikehuman" / "installs.json"
    noted = json.loads(records.read_text())
    noted[str(path)].pop("block")  # what an older release noted: nothing of the block it wrote
    records.write_text(json.dumps(noted))
    path.write_text(path.read_text().replace(str(home / "m.db"), "/old/archive.db"))
    assert cli(home, "install", "codex").exit_code == 0
    server = tomllib.loads(path.read_text())["mcp_servers"]["memlikehuman"]
    assert server["env"]["MEMLIKEHUMAN_DB"] == str(home / "m.db")


def test_codex_install_writes_no_second_table_for_a_trust_the_file_holds(home: Path) -> None:
    assert cli(home, "install", "codex").exit_code == 0
    path = home / ".codex" / "config.toml"
    trusted = tomllib.loads(path.read_text())["hooks"]["state"]
    key = sorted(trusted)[0]
    uninstalled = cli(home, "uninstall", "codex")
    assert uninstalled.exit_code == 0
    # Trust Codex wrote itself, outside our block (the user approved the hook in the interactive UI).
    write(path, f'model = "m"\n\n[hooks.state."{key}"]\ntrusted_hash = "{trusted[key]["trusted_hash"]}"\n')
    assert cli(home, "install", "codex").exit_code == 0
    assert tomllib.loads(path.read_text())["hooks"]["state"][key] == trusted[key]


@pytest.mark.parametrize(
    "text",
    ['order = [\n  ["a", "b"],\n  ["c"],\n]\n', 'note = """\n[important]\ntext\n"""\n\n[profiles.x]\nmodel = "m"\n'],
    ids=["array-of-arrays", "string-with-a-bracket-line"],
)
def test_codex_install_never_puts_the_grace_inside_a_value(home: Path, text: str) -> None:
    path = write(home / ".codex" / "config.toml", text)
    installed = round_trip(home, "codex", path)
    parsed = tomllib.loads(installed)
    assert parsed["mcp_optional_startup_grace_ms"] == 5000 and "mcp_optional" not in json.dumps(parsed.get("note"))


def test_codex_install_and_uninstall_keep_a_crlf_file_crlf(home: Path) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    original = b'model = "m"\r\n\r\n[profiles.x]\r\nmodel = "n"\r\n'
    path.write_bytes(original)
    for _ in range(2):  # a re-install finds its own block in a CRLF file: no "table install did not write"
        assert cli(home, "install", "codex").exit_code == 0
    installed = path.read_bytes()
    assert b"\n" not in installed.replace(b"\r\n", b"") and tomllib.loads(installed.decode())["mcp_servers"]
    assert cli(home, "uninstall", "codex").exit_code == 0
    assert path.read_bytes() == original


def test_codex_install_with_no_hooks_writes_no_trust(home: Path) -> None:
    path = write(home / ".codex" / "config.toml", CODEX_WITH_FEATURES)
    assert cli(home, "install", "codex", "--no-hooks").exit_code == 0
    assert "hooks" not in tomllib.loads(path.read_text())


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
    assert result.exit_code == 2  # wrong usage: the command line names it
    assert "--record: MEMLIKEHUMAN_HOOK_RECORD names everything" in result.output
    assert not (home / ".claude.json").exists()
