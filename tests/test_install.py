"""`install` / `uninstall` round trips on realistic config files, with HOME pointed at a temp dir."""

from __future__ import annotations

import json
import shlex
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import BASE_ENV
from hook_support import run_command, stored

from memlikehuman.cli import main
from memlikehuman.hosts import jsonedit

CONFIGS = Path(__file__).parent / "host_configs"

# host -> {path under HOME (or the project with --project): fixture file, or None: absent before install}
USER_FILES: dict[str, dict[str, str | None]] = {
    "claude-code": {".claude.json": "claude.json", ".claude/settings.json": "claude-settings.json"},
    "claude-desktop": {".config/Claude/claude_desktop_config.json": "claude_desktop_config.json"},
    "codex": {".codex/config.toml": "codex-config.toml", ".codex/hooks.json": "codex-hooks.json"},
    "cursor": {".cursor/mcp.json": "cursor-mcp.json", ".cursor/hooks.json": "cursor-hooks.json"},
    "vscode": {".config/Code/User/mcp.json": "vscode-mcp.json"},
    "gemini": {".gemini/settings.json": "gemini-settings.json"},
}
PROJECT_FILES: dict[str, dict[str, str | None]] = {
    "claude-code": {".mcp.json": None, ".claude/settings.local.json": None},
    "cursor": {".cursor/mcp.json": "cursor-mcp.json", ".cursor/hooks.json": None},
    "vscode": {".vscode/mcp.json": "vscode-mcp.json"},
    "codex": {".codex/config.toml": None, ".codex/hooks.json": None},
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    directory = tmp_path / "home"
    directory.mkdir()
    return directory


def cli(home: Path, *args: str, **more: str) -> Result:
    env = {
        **BASE_ENV,
        "HOME": str(home),
        "XDG_DATA_HOME": "",
        "XDG_CONFIG_HOME": "",
        "MEMLIKEHUMAN_DB": str(home / "m.db"),
        **more,
    }
    return CliRunner().invoke(main, list(args), env=env)


def lay_out(base: Path, files: dict[str, str | None]) -> dict[Path, bytes | None]:
    """Write the fixture files under base; return what each path held (None: absent)."""
    before: dict[Path, bytes | None] = {}
    for relative, fixture in files.items():
        path = base / relative
        if fixture is None:
            before[path] = None
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((CONFIGS / fixture).read_bytes())
        before[path] = path.read_bytes()
    return before


def snapshot(paths: dict[Path, bytes | None]) -> dict[Path, bytes | None]:
    return {path: path.read_bytes() if path.exists() else None for path in paths}


def values(path: Path) -> dict:
    text = path.read_text()
    return tomllib.loads(text) if path.suffix == ".toml" else jsonedit.parse(text, str(path)).value


@pytest.mark.parametrize("host", sorted(USER_FILES))
def test_install_twice_then_uninstall_leaves_the_user_files_byte_identical(home: Path, host: str) -> None:
    original = lay_out(home, USER_FILES[host])
    first = cli(home, "install", host)
    assert first.exit_code == 0, first.output
    installed = snapshot(original)
    assert installed != original
    assert cli(home, "install", host).exit_code == 0
    assert snapshot(original) == installed  # idempotent: twice = once
    done = cli(home, "uninstall", host)
    assert done.exit_code == 0, done.output
    assert snapshot(original) == original


@pytest.mark.parametrize("host", sorted(PROJECT_FILES))
def test_project_install_round_trip_removes_the_files_it_created(home: Path, tmp_path: Path, host: str) -> None:
    project = tmp_path / "work" / "app"
    project.mkdir(parents=True)
    original = lay_out(project, PROJECT_FILES[host])
    assert cli(home, "install", host, "--project", str(project)).exit_code == 0
    assert all(path.exists() for path in original)
    assert cli(home, "uninstall", host, "--project", str(project)).exit_code == 0
    assert snapshot(original) == original


def test_install_keeps_other_servers_and_settings_and_adds_ours(home: Path) -> None:
    lay_out(home, USER_FILES["claude-code"])
    assert cli(home, "install", "claude-code").exit_code == 0
    servers = values(home / ".claude.json")["mcpServers"]
    assert set(servers) == {"github", "memlikehuman"}
    ours = servers["memlikehuman"]
    assert Path(ours["command"]).is_absolute() and ours["args"] == ["serve"]
    assert ours["env"] == {
        "MEMLIKEHUMAN_DB": str(home / "m.db"),
        "MEMLIKEHUMAN_PERSONA": "default",
        "MEMLIKEHUMAN_PROJECT": "auto",
    }
    settings = values(home / ".claude" / "settings.json")
    assert settings["model"] == "opus" and settings["env"] == {"DISABLE_TELEMETRY": "1"}
    assert len(settings["hooks"]["Stop"]) == 2  # the user's notify-send stays, ours follows it
    assert set(settings["hooks"]) == {
        "PostToolUse",
        "Stop",
        "SessionStart",
        "UserPromptSubmit",
        "PreCompact",
        "SessionEnd",
    }


def test_codex_install_keeps_the_comments_and_tables_of_config_toml(home: Path) -> None:
    lay_out(home, USER_FILES["codex"])
    assert cli(home, "install", "codex").exit_code == 0
    text = (home / ".codex" / "config.toml").read_text()
    original = (CONFIGS / "codex-config.toml").read_text()
    # The one line outside our block: the start-up grace, a top-level key, on the first line.
    grace = "mcp_optional_startup_grace_ms = 5000  # added by `memlikehuman install codex`; uninstall removes it\n"
    assert text.replace(grace, "", 1).startswith(original)
    assert "# ask before running commands" in text
    parsed = tomllib.loads(text)
    assert set(parsed["mcp_servers"]) == {"github", "memlikehuman"}
    assert parsed["mcp_servers"]["memlikehuman"]["env"]["MEMLIKEHUMAN_PROJECT"] == "auto"
    assert parsed["profiles"]["fast"]["model"] == "gpt-5.3-codex-mini"


def test_a_project_install_names_the_project_in_both_the_server_and_the_hooks(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "billing"
    project.mkdir()
    assert cli(home, "install", "claude-code", "--project", str(project)).exit_code == 0
    env = values(project / ".mcp.json")["mcpServers"]["memlikehuman"]["env"]
    assert env["MEMLIKEHUMAN_PROJECT"].startswith("billing-")
    hooks = values(project / ".claude" / "settings.local.json")["hooks"]
    command = hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert shlex.split(command)[-2:] == ["--project", env["MEMLIKEHUMAN_PROJECT"]]


def test_the_installed_hook_command_runs_as_claude_code_runs_it(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    assert cli(home, "install", "claude-code").exit_code == 0
    group = values(home / ".claude" / "settings.json")["hooks"]["UserPromptSubmit"][0]
    command = group["hooks"][0]["command"]
    payload = {"session_id": "s1", "transcript_path": "", "cwd": str(project), "hook_event_name": "UserPromptSubmit"}
    payload["prompt"] = "Remember that the release is on Monday"
    done = run_command(command, payload, project, home)
    assert (done.returncode, done.stderr) == (0, "")
    [event] = stored(home / "m.db")
    assert event["text"] == "Remember that the release is on Monday"
    assert event["project_id"].startswith("app-")


def test_dry_run_prints_a_diff_and_writes_nothing(home: Path) -> None:
    original = lay_out(home, USER_FILES["cursor"])
    result = cli(home, "install", "cursor", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "+++ " in result.stdout
    assert '+\t\t"memlikehuman": {' in result.stdout  # in the file's own (tab) indentation
    assert snapshot(original) == original
    assert not (home / ".local" / "share" / "memlikehuman").exists()


def test_an_invalid_persona_is_refused_before_any_config_is_written(home: Path) -> None:
    original = lay_out(home, USER_FILES["claude-code"])
    result = cli(home, "install", "claude-code", "--persona", "bad/x")
    assert result.exit_code == 2 and result.stderr.startswith("error: invalid_argument: --persona: persona_id")
    assert snapshot(original) == original
    # uninstall only takes our entries out, whatever the persona
    assert cli(home, "uninstall", "claude-code", "--dry-run", MEMLIKEHUMAN_PERSONA="bad id").exit_code == 0


def test_install_backs_up_each_existing_file_first(home: Path) -> None:
    original = lay_out(home, USER_FILES["gemini"])
    assert cli(home, "install", "gemini").exit_code == 0
    [path] = original
    [backup] = path.parent.glob("settings.json.memlikehuman-backup*")
    assert backup.read_bytes() == original[path]


def _backups(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*memlikehuman-backup*"))


def test_one_backup_per_file_that_was_there_none_of_a_file_install_made_none_left_after_uninstall(home: Path):
    # ~/.claude.json exists; ~/.claude/settings.json is created by install.
    claude_json = home / ".claude.json"
    claude_json.write_text('{"theme": "dark"}\n')
    for _ in range(2):
        assert cli(home, "install", "claude-code").exit_code == 0
    assert cli(home, "install", "claude-code", "--no-hooks").exit_code == 0
    assert _backups(home) == [".claude.json.memlikehuman-backup"]
    assert (home / ".claude.json.memlikehuman-backup").read_text() == '{"theme": "dark"}\n'
    assert cli(home, "uninstall", "claude-code").exit_code == 0
    assert claude_json.read_text() == '{"theme": "dark"}\n'
    assert not (home / ".claude" / "settings.json").exists()
    assert _backups(home) == []


def test_no_hooks_installs_the_server_entry_and_its_tool_permissions_without_hooks(home: Path) -> None:
    assert cli(home, "install", "claude-code", "--no-hooks").exit_code == 0
    assert (home / ".claude.json").exists()
    settings = values(home / ".claude" / "settings.json")
    assert set(settings) == {"permissions"} and settings["permissions"]["allow"] == list(ALLOWED)
    assert cli(home, "uninstall", "claude-code").exit_code == 0
    assert not (home / ".claude" / "settings.json").exists()


ALLOWED = (
    "mcp__memlikehuman__memory_record", "mcp__memlikehuman__memory_recall", "mcp__memlikehuman__memory_read",
    "mcp__memlikehuman__session_checkpoint", "mcp__memlikehuman__session_resume",
)  # fmt: skip


@pytest.mark.parametrize("project", [False, True], ids=["user", "project"])
def test_claude_code_is_allowed_the_tools_that_delete_nothing_and_uninstall_takes_back_only_those(
    home: Path, tmp_path: Path, project: bool
) -> None:
    # `claude -p` refuses an MCP tool no allow rule covers: forget and correct keep asking.
    base = tmp_path / "app" if project else home
    settings = base / ".claude" / ("settings.local.json" if project else "settings.json")
    settings.parent.mkdir(parents=True)
    users = ["Bash(npm test)", "mcp__memlikehuman__memory_recall", "mcp__github__get_issue"]
    settings.write_text(json.dumps({"permissions": {"allow": users, "deny": ["Read(./.env)"]}}, indent=2) + "\n")
    before = settings.read_bytes()
    where = ["--project", str(base)] if project else []
    assert cli(home, "install", "claude-code", *where).exit_code == 0
    allow = values(settings)["permissions"]["allow"]
    assert allow == [*users, *(tool for tool in ALLOWED if tool not in users)]
    assert not [tool for tool in allow if tool.endswith(("memory_forget", "memory_correct"))]
    installed = settings.read_bytes()
    assert cli(home, "install", "claude-code", *where).exit_code == 0
    assert settings.read_bytes() == installed  # idempotent
    assert cli(home, "uninstall", "claude-code", *where).exit_code == 0
    assert settings.read_bytes() == before  # the user's own memory_recall rule stays theirs


def test_a_file_that_is_not_json_is_refused_with_its_name_and_line(home: Path) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{\n  "mcpServers": {\n    oops\n}\n')
    result = cli(home, "install", "cursor")
    assert result.exit_code == 1
    assert f"{path}, line 3" in result.output
    assert path.read_text() == '{\n  "mcpServers": {\n    oops\n}\n'


def test_a_hand_written_memlikehuman_table_in_codex_config_is_a_conflict(home: Path) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('[mcp_servers.memlikehuman]\ncommand = "/old/memlikehuman"\n')
    result = cli(home, "install", "codex")
    assert result.exit_code == 1 and "conflict:" in result.output


HOOKS_FILE = {"codex": ".codex/hooks.json", "cursor": ".cursor/hooks.json", "gemini": ".gemini/settings.json"}
PROMPT_EVENT = {"codex": "UserPromptSubmit", "cursor": "beforeSubmitPrompt", "gemini": "BeforeAgent"}


@pytest.mark.parametrize("host", sorted(HOOKS_FILE))
def test_each_hosts_installed_prompt_hook_runs_from_its_config(home: Path, tmp_path: Path, host: str) -> None:
    project = tmp_path / "app"
    project.mkdir()
    assert cli(home, "install", host).exit_code == 0
    hooks = values(home / HOOKS_FILE[host])["hooks"][PROMPT_EVENT[host]]
    entry = hooks[0] if host == "cursor" else hooks[0]["hooks"][0]
    fixture = Path(__file__).parent / "hook_payloads" / host / f"{PROMPT_EVENT[host]}.json"
    payload = json.loads(fixture.read_text())
    payload.update({"workspace_roots": [str(project)]} if host == "cursor" else {"cwd": str(project)})
    done = run_command(entry["command"], payload, project, home)
    assert (done.returncode, done.stderr) == (0, "")
    if host == "cursor":
        assert done.stdout == '{"continue": true}\n'  # Cursor has no prompt-time context channel
    else:  # nothing to recall yet: only the line that names the turn just recorded
        context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "This prompt is recorded as" in context and "«DATA" not in context
    [event] = stored(home / "m.db")
    assert (event["source"], event["text"]) == (host, "Which database does this project use?")


def test_an_empty_config_file_comes_back_empty_after_uninstall(home: Path) -> None:
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text("\n")
    assert cli(home, "install", "gemini").exit_code == 0
    assert "memlikehuman" in values(path)["mcpServers"]
    assert cli(home, "uninstall", "gemini").exit_code == 0
    assert path.read_text() == "\n"


def test_a_user_config_that_is_a_symbolic_link_is_refused_and_its_target_left_as_it_was(home: Path) -> None:
    # Install replaces a file by renaming a new one into place: through a link it would either write
    # where the link points or silently turn the link into a file. It says so instead.
    dotfiles = home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "settings.json").write_text('{"theme": "dark"}\n')
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").symlink_to(dotfiles / "settings.json")
    result = cli(home, "install", "gemini")
    assert result.exit_code == 1
    assert f"{home / '.gemini' / 'settings.json'} is a symbolic link" in result.stderr
    assert (dotfiles / "settings.json").read_text() == '{"theme": "dark"}\n'
    assert (home / ".gemini" / "settings.json").is_symlink()
    assert sorted(p.name for p in (home / ".gemini").iterdir()) == ["settings.json"]
