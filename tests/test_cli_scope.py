"""The scope of a command without --project: the project the installed hooks record into in this folder."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from cli_support import cli, json_out
from click.testing import CliRunner
from conftest import BASE_ENV, make_settings

from memlikehuman.cli import main
from memlikehuman.engine import Engine
from memlikehuman.records import Scope
from memlikehuman.text.projects import project_name


def install_and_prompt(tmp_path: Path, folder: Path, prompt: str) -> Path:
    """`install claude-code` with its defaults into a new HOME, then the installed prompt hook run in
    `folder` as Claude Code runs it; returns the archive."""
    home, db = tmp_path / "home", tmp_path / "data" / "memory.sqlite3"
    home.mkdir()
    env = {**BASE_ENV, "HOME": str(home), "XDG_DATA_HOME": "", "XDG_CONFIG_HOME": "", "MEMLIKEHUMAN_DB": str(db)}
    assert CliRunner().invoke(main, ["install", "claude-code"], env=env).exit_code == 0
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert "--project auto" in command  # what a user-level install writes
    payload = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "cwd": str(folder), "prompt": prompt}
    done = subprocess.run(
        command,
        shell=True,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=folder,
        env={"PATH": os.environ["PATH"], **env},
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    return db


def excerpts(found: dict) -> list[str]:
    return [hit["excerpt"] for hit in found["raw_fallback"]]


def test_recall_in_a_project_folder_finds_what_the_hooks_recorded_there_without_project(tmp_path: Path) -> None:
    repo = tmp_path / "myrepo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    db = install_and_prompt(tmp_path, repo / "src", "We always use pnpm here, never npm")
    found = cli(db, "recall", "pnpm", "--json", cwd=repo / "src")
    assert excerpts(json_out(found)) == ["We always use pnpm here, never npm"]
    name = project_name(repo)
    assert name.startswith("myrepo-")
    assert found.stderr.count(f"memlikehuman: project {name!r} (this folder;") == 1
    assert "--project default for the default scope" in found.stderr


def test_a_command_that_fails_in_a_project_folder_prints_only_its_one_coded_error_line(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    db = install_and_prompt(tmp_path, folder, "The plumber comes on Tuesday")
    refused = cli(db, "recall", "plumber", "--persona", "no such persona!", cwd=folder)
    assert refused.exit_code == 2 and refused.stderr.startswith("error: invalid_argument: persona_id")
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr


def test_project_on_the_command_line_wins_over_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    db = install_and_prompt(tmp_path, folder, "The plumber comes on Tuesday")
    elsewhere = cli(db, "recall", "plumber", "--project", "default", "--json", cwd=folder)
    assert excerpts(json_out(elsewhere)) == []
    assert "memlikehuman: project" not in elsewhere.stderr
    assert f"events are in: --persona default --project {project_name(folder)} (1)" in elsewhere.stderr
    named = cli(db, "recall", "plumber", "--project", project_name(folder), "--json")  # from outside any project
    assert excerpts(json_out(named)) == ["The plumber comes on Tuesday"]


def test_outside_a_project_folder_recall_searches_the_default_scope_and_says_nothing(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    with Engine(make_settings(db)) as engine:
        engine.record(Scope(), "d1", "The default scope holds the boiler code", "user", "chat")
    for outside in (Path("/"), Path.home()):
        found = cli(db, "recall", "boiler", "--json", cwd=outside)
        assert excerpts(json_out(found)) == ["The default scope holds the boiler code"], outside
        assert "memlikehuman: project" not in found.stderr


def two_projects(tmp_path: Path) -> tuple[Path, Path]:
    """An archive with one event in this folder's project and one in the default scope; the folder."""
    folder, db = tmp_path / "garden", tmp_path / "a.sqlite3"
    folder.mkdir()
    with Engine(make_settings(db)) as engine:
        engine.record(Scope("default", project_name(folder)), "g1", "Roses need full sun", "user", "chat")
        engine.record(Scope(), "d1", "The boiler is serviced in May", "user", "chat")
    return db, folder


def test_stats_and_export_in_a_project_folder_cover_that_project_and_all_covers_every_scope(tmp_path: Path) -> None:
    db, folder = two_projects(tmp_path)
    here = json_out(cli(db, "stats", "--json", cwd=folder))
    assert [s["project_id"] for s in here["scopes"]] == [project_name(folder)]
    every = json_out(cli(db, "stats", "--all", "--json", cwd=folder))
    assert sorted(s["project_id"] for s in every["scopes"]) == sorted(["default", project_name(folder)])
    outside = json_out(cli(db, "stats", "--json"))
    assert len(outside["scopes"]) == 2  # no project folder: every scope, as before
    exported = cli(db, "export", cwd=folder)
    assert exported.exit_code == 0 and "Roses need full sun" in exported.stdout
    assert "boiler" not in exported.stdout and "--all for every scope" in exported.stderr
    assert "boiler" in cli(db, "export", "--all", cwd=folder).stdout


def test_all_together_with_a_scope_is_wrong_usage(tmp_path: Path) -> None:
    db, folder = two_projects(tmp_path)
    for command in ("stats", "export"):
        refused = cli(db, command, "--all", "--project", "x", cwd=folder)
        assert refused.exit_code == 2 and "either --all or --persona/--project" in refused.stderr, command


def test_environment_project_is_the_default_before_the_folder(tmp_path: Path) -> None:
    db, folder = two_projects(tmp_path)
    found = cli(db, "recall", "boiler", "--json", cwd=folder, env={"MEMLIKEHUMAN_PROJECT": "default"})
    assert excerpts(json_out(found)) == []  # `default` names no project: the folder's, as the hooks read it
    with Engine(make_settings(db)) as engine:
        engine.record(Scope("default", "work"), "w1", "The boiler report is due", "user", "chat")
    named = cli(db, "recall", "boiler", "--json", cwd=folder, env={"MEMLIKEHUMAN_PROJECT": "work"})
    assert excerpts(json_out(named)) == ["The boiler report is due"]
    assert "memlikehuman: project" not in named.stderr


def test_recall_in_a_repository_finds_what_the_hooks_recorded_there_as_in_its_subfolders(
    tmp_path: Path, monkeypatch
) -> None:
    from hook_support import run_hook

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    db = tmp_path / "data" / "memory.sqlite3"
    prompt = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "cwd": str(repo / "src"),
              "prompt": "We always use pnpm here, never npm"}  # fmt: skip
    assert run_hook("claude-code", prompt, db, repo, "--project", "auto").returncode == 0
    monkeypatch.chdir(repo)
    assert excerpts(json_out(cli(db, "recall", "pnpm", "--json"))) == ["We always use pnpm here, never npm"]
    default = cli(db, "recall", "pnpm", "--project", "default")
    assert "no events in persona 'default', project 'default'" in default.stderr
    assert "this folder's project (--project auto) is repo-" in default.stderr
