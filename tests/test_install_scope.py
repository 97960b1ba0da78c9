"""The scope rule: the installed server and the hooks meet in one scope without naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import connected, make_settings
from hook_support import run_hook

from memlikehuman.server import build_server
from memlikehuman.text.projects import project_name


def test_tool_calls_without_a_scope_use_the_installed_one_and_meet_the_hooks(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite3"
    project = tmp_path / "app"
    project.mkdir()
    hook = {"session_id": "s1", "cwd": str(project), "hook_event_name": "UserPromptSubmit"}
    args = ("--persona", "ada", "--project", "billing")
    run_hook("claude-code", {**hook, "prompt": "Invoices are numbered per year"}, db, project, *args)
    # Answered (else memory_recall leaves it out as the prompt the agent is answering).
    run_hook("claude-code", {**hook, "hook_event_name": "Stop", "last_assistant_message": "Noted."}, db, project, *args)
    settings = make_settings(db, MEMLIKEHUMAN_PERSONA="ada", MEMLIKEHUMAN_PROJECT="billing")
    with connected(build_server(settings)) as client:
        found = client.ok("memory_recall", query="invoices numbered")
        assert "Invoices are numbered per year" in [hit["excerpt"] for hit in found["raw_fallback"]]
        recorded = client.ok("memory_record", event_id="e-1", text="Tax is 21%", role="user", source="ada")
        other = client.ok("memory_recall", query="tax", persona_id="default", project_id="default")
    assert recorded["duplicate"] is False
    assert other["raw_fallback"] == []  # it went to ada/billing, not default/default


def test_auto_project_is_the_stable_name_of_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "repo"
    (work / ".git").mkdir(parents=True)
    (work / "src").mkdir()
    monkeypatch.chdir(work / "src")
    settings = make_settings(tmp_path / "m.sqlite3", MEMLIKEHUMAN_PROJECT="auto")
    assert settings.project_id == project_name(work) == project_name(work / "src")
    assert settings.project_id.startswith("repo-")


def test_two_folders_with_one_name_get_different_projects(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "app", tmp_path / "b" / "app"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    assert project_name(first) != project_name(second)
    assert project_name(first) == project_name(first)


def test_a_null_scope_is_the_installed_one_as_an_absent_one_is(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "m.sqlite3", MEMLIKEHUMAN_PERSONA="ada", MEMLIKEHUMAN_PROJECT="billing")
    with connected(build_server(settings)) as client:
        nulls = {"persona_id": None, "project_id": None}
        client.ok("memory_record", event_id="n-1", text="Tax is 21%", role="user", source="ada", **nulls)
        here = client.ok("memory_read", record_id="n-1")  # no scope named: the installed one
        elsewhere = client.ok("memory_recall", query="tax", persona_id="default", project_id="default")
    assert here["event"]["event_id"] == "n-1"
    assert elsewhere["raw_fallback"] == []  # hosts send null for "not given": not default/default
