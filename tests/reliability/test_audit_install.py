"""What a cloned repository can make `install --project` and `uninstall --project` do: nothing outside it.

A repository is anyone's to write. It can ship symbolic links where install writes a backup
(`<config>.memlikehuman-backup`), where it reads a config, or in place of a config's folder, pointing at
a file of the user's (`~/.bash_aliases`, VS Code's settings with a token). Each test plants such links,
runs the command as a person would (the console script, HOME in a temp dir) and checks that the
command refuses, says which path, and that every file outside the project is byte for byte as before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import BASE_ENV
from hook_support import SCRIPT

# The files each host's --project install reads and writes (docs/hosts.md), and the folder they are in.
PROJECT_CONFIGS = {
    "claude-code": (".mcp.json", ".claude/settings.local.json"),
    "codex": (".codex/hooks.json", ".codex/config.toml"),
    "cursor": (".cursor/mcp.json", ".cursor/hooks.json"),
    "vscode": (".vscode/mcp.json",),
    "gemini": (".gemini/settings.json",),
}
FOLDER = {"claude-code": ".claude", "codex": ".codex", "cursor": ".cursor", "vscode": ".vscode", "gemini": ".gemini"}
HOSTS = sorted(PROJECT_CONFIGS)
# What the user keeps outside the project: a shell start-up file and a settings file with a token.
VICTIM_FILES = {".bash_aliases": b"alias ll='ls -l'\n", "settings.json": b'{"github.token": "ghp_secret"}\n'}


def _shipped(relative: str) -> str:
    """A valid config the repository ships (JSONC: a block comment that is shell to bash)."""
    return "# settings\n" if relative.endswith(".toml") else "/*\ntouch pwned\n*/\n{}\n"


def _run(home: Path, command: str, host: str, project: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MEMLIKEHUMAN_"))}
    env.update(BASE_ENV, HOME=str(home), MEMLIKEHUMAN_DB=str(home / "m.db"))
    return subprocess.run(
        [str(SCRIPT), command, host, "--project", str(project)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every entry under root: a file's bytes, a link's target, a directory's mark."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.is_symlink():
            found[name] = "-> " + os.readlink(path)
        elif path.is_dir():
            found[name] = "dir"
        else:
            found[name] = path.read_bytes()
    return found


@pytest.fixture
def home(tmp_path: Path) -> Path:
    directory = tmp_path / "home"
    directory.mkdir()
    for name, data in VICTIM_FILES.items():
        (directory / name).write_bytes(data)
    return directory


def _clone(tmp_path: Path, host: str) -> Path:
    """A project as a clone holds it: the host's configs, valid and without our entries."""
    project = tmp_path / "clone"
    for relative in PROJECT_CONFIGS[host]:
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(_shipped(relative))
    return project


def _plant_backup_links(project: Path, host: str, target: Path) -> Path:
    """A link to `target` where each config's backup goes; return the first config's."""
    for relative in PROJECT_CONFIGS[host]:
        (project / f"{relative}.memlikehuman-backup").symlink_to(target)
    return project / f"{PROJECT_CONFIGS[host][0]}.memlikehuman-backup"


def _refused(home: Path, command: str, host: str, project: Path, where: Path) -> str:
    """Run the command; check it refused, naming `where`, and changed nothing in HOME or the project."""
    outside, inside = _tree(home), _tree(project)
    done = _run(home, command, host, project)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "symbolic link" in done.stderr and str(where) in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert _tree(home) == outside
    assert _tree(project) == inside
    return done.stdout + done.stderr


@pytest.mark.parametrize("dangling", [True, False], ids=["dangling", "existing"])
@pytest.mark.parametrize("host", HOSTS)
def test_install_refuses_a_planted_backup_link_and_writes_nothing_outside_the_project(
    tmp_path: Path, home: Path, host: str, dangling: bool
) -> None:
    project = _clone(tmp_path, host)
    first = _plant_backup_links(project, host, home / (".profile_planted" if dangling else ".bash_aliases"))
    _refused(home, "install", host, project, first)


@pytest.mark.parametrize("host", HOSTS)
def test_install_refuses_a_config_folder_that_is_a_link_out_of_the_project(
    tmp_path: Path, home: Path, host: str
) -> None:
    project = tmp_path / "clone"
    project.mkdir()
    (project / FOLDER[host]).symlink_to(home)  # the configs land in (or are read from) HOME
    if host == "claude-code":
        (project / ".mcp.json").write_text("{}\n")
    _refused(home, "install", host, project, project / FOLDER[host])


@pytest.mark.parametrize("host", HOSTS)
def test_install_never_reads_a_config_through_a_link_into_the_project(tmp_path: Path, home: Path, host: str) -> None:
    project = tmp_path / "clone"
    for relative in PROJECT_CONFIGS[host]:
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).symlink_to(home / "settings.json")
    said = _refused(home, "install", host, project, project / PROJECT_CONFIGS[host][0])
    assert "ghp_secret" not in said


def _installed_configs(tmp_path: Path, host: str) -> dict[str, bytes]:
    """The host's project configs as an install of ours leaves them (made in a project of its own)."""
    other_home, project = tmp_path / "other-home", tmp_path / "installed"
    other_home.mkdir()
    project.mkdir()
    assert _run(other_home, "install", host, project).returncode == 0
    return {relative: (project / relative).read_bytes() for relative in PROJECT_CONFIGS[host]}


@pytest.mark.parametrize("host", HOSTS)
def test_uninstall_refuses_a_planted_backup_link_and_writes_nothing_outside_the_project(
    tmp_path: Path, home: Path, host: str
) -> None:
    project = tmp_path / "clone"
    for relative, data in _installed_configs(tmp_path, host).items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_bytes(data)
    first = _plant_backup_links(project, host, home / ".bash_aliases")
    _refused(home, "uninstall", host, project, first)


@pytest.mark.parametrize("host", HOSTS)
def test_uninstall_never_removes_or_rewrites_files_behind_a_folder_replaced_by_a_link(
    tmp_path: Path, home: Path, host: str
) -> None:
    # Installed for real (so the record says install created the files), then the folder became a link
    # to a folder of the user's that holds files of the same names.
    project = tmp_path / "project"
    project.mkdir()
    assert _run(home, "install", host, project).returncode == 0
    theirs = home / "elsewhere"
    shutil.move(project / FOLDER[host], theirs)
    (project / FOLDER[host]).symlink_to(theirs)
    _refused(home, "uninstall", host, project, project / FOLDER[host])


@pytest.mark.parametrize("host", HOSTS)
def test_install_in_a_project_without_links_still_round_trips(tmp_path: Path, home: Path, host: str) -> None:
    project = _clone(tmp_path, host)
    inside = _tree(project)
    assert _run(home, "install", host, project).returncode == 0
    backups = sorted(project.rglob("*.memlikehuman-backup"))
    assert len(backups) == len(PROJECT_CONFIGS[host])
    assert all(not path.is_symlink() and (path.stat().st_mode & 0o077) == 0 for path in backups)
    assert _run(home, "uninstall", host, project).returncode == 0
    assert _tree(project) == inside
