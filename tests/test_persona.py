"""The core persona: CLI editing with versions, the read-only resource, the start_session prompt."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BASE_ENV, connected, make_settings, serving
from mcp.shared.exceptions import MCPError

from memlikehuman.archive import memories, personas
from memlikehuman.cli import main
from memlikehuman.engine import Engine
from memlikehuman.records import Candidate, Scope
from memlikehuman.server.persona import HOST_INSTRUCTIONS


def run(db_path: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None):
    result = CliRunner().invoke(
        main, ["--db", str(db_path), "persona", *args], input=stdin, env={**BASE_ENV, **(env or {})}
    )
    return result


def editor_script(tmp_path: Path, new_text: str) -> str:
    """An $EDITOR that replaces the file with new_text."""
    script = tmp_path / "editor.py"
    script.write_text(f"import sys\nopen(sys.argv[1], 'w').write({new_text!r})\n", encoding="utf-8")
    launcher = tmp_path / "editor.sh"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$1"\n', encoding="utf-8")
    launcher.chmod(launcher.stat().st_mode | stat.S_IEXEC)
    return str(launcher)


# -- CLI ------------------------------------------------------------------------------------------


def test_set_from_stdin_then_show_prints_the_current_version(db_path):
    assert run(db_path, "set", "--persona", "ada", stdin="You are Ada.\n").exit_code == 0
    shown = run(db_path, "show", "--persona", "ada")
    assert shown.exit_code == 0
    assert shown.stdout.splitlines()[0].startswith("# persona ada, version 1, set ")
    assert shown.stdout.splitlines()[1:] == ["You are Ada."]


def test_set_from_a_file_adds_a_version_and_history_lists_every_version(db_path, tmp_path):
    run(db_path, "set", "--persona", "ada", stdin="First text.")
    source = tmp_path / "persona.md"
    source.write_text("Second text,\nwith two lines.\n", encoding="utf-8")
    assert run(db_path, "set", "--persona", "ada", str(source)).exit_code == 0
    history = run(db_path, "show", "--persona", "ada", "--history").stdout
    assert history.index("version 2") < history.index("Second text,\nwith two lines.") < history.index("version 1")
    assert "First text." in history


def test_setting_the_same_text_again_stores_no_new_version(db_path):
    run(db_path, "set", stdin="Same.")
    result = run(db_path, "set", stdin="Same.\n")
    assert result.exit_code == 0 and "unchanged" in result.stderr
    with Engine(make_settings(db_path)) as engine:
        assert [v.version for v in personas.history(engine.db, "default")] == [1]


def test_edit_opens_the_editor_and_versions_the_change(db_path, tmp_path):
    run(db_path, "set", "--persona", "ada", stdin="Old persona.")
    result = run(db_path, "edit", "--persona", "ada", env={"EDITOR": editor_script(tmp_path, "New persona.\n")})
    assert result.exit_code == 0, result.output
    with Engine(make_settings(db_path)) as engine:
        assert [(v.version, v.text) for v in personas.history(engine.db, "ada")] == [
            (2, "New persona."),
            (1, "Old persona."),
        ]


def test_invalid_persona_ids_and_empty_text_are_refused_without_storing(db_path):
    assert run(db_path, "set", "--persona", "bob", stdin="You are Bob.").exit_code == 0
    bad_id = run(db_path, "set", "--persona", "no spaces", stdin="text")
    empty = run(db_path, "set", "--persona", "ada", stdin="  \n")
    assert bad_id.exit_code == 2 and "invalid_argument" in bad_id.stderr  # the command line is wrong
    assert empty.exit_code == 1 and "invalid_argument" in empty.stderr  # what it read is refused
    assert "no core persona" in run(db_path, "show", "--persona", "ada").stderr


@pytest.mark.sqlite_only
def test_a_refused_text_creates_no_archive(db_path):
    for text in (b"  \n", b"caf\xe9 au lait\n"):
        refused = CliRunner().invoke(main, ["--db", str(db_path), "persona", "set"], input=text, env=BASE_ENV)
        assert refused.exit_code == 1
        assert refused.stderr.startswith("error: invalid_argument: ") and not db_path.exists()
    assert "not UTF-8 (byte 3)" in refused.stderr


def test_text_that_is_not_utf8_is_refused_with_the_byte_and_changes_nothing(db_path):
    assert run(db_path, "set", stdin="You are Ada.").exit_code == 0
    refused = CliRunner().invoke(main, ["--db", str(db_path), "persona", "set"], input=b"caf\xe9", env=BASE_ENV)
    assert refused.exit_code == 1 and "invalid_argument: the persona text is not UTF-8 (byte 3)" in refused.stderr
    assert run(db_path, "show").stdout.endswith("\nYou are Ada.\n")


def test_show_without_a_persona_explains_how_to_set_one(db_path):
    assert run(db_path, "set", "--persona", "bob", stdin="You are Bob.").exit_code == 0
    result = run(db_path, "show", "--persona", "ada")
    assert result.exit_code == 0 and result.stdout == ""
    assert "memlikehuman persona set" in result.stderr


# -- resource and prompt over stdio ----------------------------------------------------------------


def seed_persona_memory(db_path: Path) -> None:
    with Engine(make_settings(db_path)) as engine:
        personas.set_text(engine.db, "ada", "You are Ada, a careful analyst.")
        recorded = engine.record(
            Scope("ada", "p1"), "role-1", "Ada always answers in British English.", "user", "operator",
            category="persona",
        )  # fmt: skip
        event = engine.read(Scope("ada", "p1"), recorded.event_id).event
        item = Candidate("Ada answers in British English.", "Ada always answers in British English.", "persona",
                         "stated", None, event.occurred_at)  # fmt: skip
        memories.store(engine.db, event, [item], event.recorded_at)
        engine.record(Scope("bob", "p1"), "role-2", "Bob is terse.", "user", "operator", category="persona")


def test_the_persona_resource_holds_the_core_persona_and_persona_memories(db_path):
    seed_persona_memory(db_path)
    with connected(serving(db_path)) as client:
        templates = client.list_resource_templates().resource_templates
        assert [t.uri_template for t in templates] == ["persona://{persona_id}/current"]
        text = client.read_resource("persona://ada/current").contents[0].text
    lines = text.splitlines()
    assert lines[0].startswith('Core persona of "ada" (version 1, set ')
    assert lines[1] == "You are Ada, a careful analyst."
    record = json.loads(lines[-1])
    assert record["content"] == "Ada answers in British English."
    assert (record["basis"], record["project_id"], record["from"]["role"]) == ("stated", "p1", "user")
    assert "Bob" not in text


def test_the_persona_resource_of_an_unset_persona_says_how_to_set_it(client):
    text = client.read_resource("persona://nobody/current").contents[0].text
    assert "No core persona is set" in text and "memlikehuman persona set --persona nobody" in text
    assert text.endswith("none.")


def test_no_tool_can_change_the_core_persona(client):
    names = {tool.name for tool in client.list_tools().tools}
    assert {"session_checkpoint", "session_resume"} <= names
    assert not [name for name in names if "persona" in name]


def test_the_start_session_prompt_is_the_contracts_instructions_for_the_scope(client):
    prompts = client.list_prompts().prompts
    assert [(p.name, sorted(a.name for a in p.arguments or [])) for p in prompts] == [
        ("start_session", ["persona_id", "project_id"])
    ]
    result = client.get_prompt("start_session", {"persona_id": "ada", "project_id": "tax-2026"})
    text = result.messages[0].content.text
    assert text.startswith('Use MemLikeHuman for persona "ada" and project "tax-2026" only')
    assert HOST_INSTRUCTIONS.split("\n", 1)[1] in text
    default = client.get_prompt("start_session", {}).messages[0].content.text
    assert default.startswith('Use MemLikeHuman for persona "default" and project "default" only')


def test_the_prompt_and_the_resource_refuse_an_invalid_persona_id(client):
    with pytest.raises(MCPError, match="invalid_argument: persona_id may contain only"):
        client.get_prompt("start_session", {"persona_id": "a b"})
    with pytest.raises(MCPError, match="invalid_argument: persona_id may contain only"):
        client.read_resource("persona://a!b/current")


def test_session_resume_returns_the_core_persona_too(db_path):
    seed_persona_memory(db_path)
    with connected(serving(db_path)) as client:
        out = client.ok("session_resume", persona_id="ada", project_id="p1", target_model="gpt-4o")
    assert "You are Ada, a careful analyst." in out["context"]
    assert out["token_method"] == "quicktok:o200k_base"
