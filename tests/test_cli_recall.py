"""`recall`: the memory_recall search at a terminal; --json gives the tool's own fields."""

from __future__ import annotations

from pathlib import Path

from cli_support import cli, json_out, populate
from conftest import connected, make_settings

from memlikehuman.server import build_server

AS_OF = "2030-01-01T00:00:00Z"


def test_json_output_equals_the_memory_recall_tool_output(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    args = {"query": "where does Alice live", "persona_id": "alice", "project_id": "garden", "as_of": AS_OF}
    with connected(build_server(make_settings(db))) as client:
        tool = client.ok("memory_recall", **args, include_history=True, limit=5)
    printed = json_out(
        cli(
            db,
            "recall",
            args["query"],
            "--persona",
            "alice",
            "--project",
            "garden",
            "--as-of",
            AS_OF,
            "--history",
            "-n",
            "5",
            "--json",
        )  # fmt: skip
    )
    assert printed == tool
    assert printed["memories"], "the populated archive has memories about Alice's home"


def test_the_table_shows_memories_raw_excerpts_coverage_and_warnings(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    result = cli(db, "recall", "Porto Portugal", "--persona", "alice", "--project", "garden", "--as-of", AS_OF)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("memories (")
    assert "Alice lives in Porto, Portugal" in out and "current" in out
    assert "raw excerpts (" in out
    assert "fast search as of 2030-01-01T00:00:00.000000Z: 8 events in scope" in out
    assert "warning:" in result.stderr  # pending extraction is reported


def test_a_cue_search_with_an_empty_query_finds_the_cued_event(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    found = json_out(cli(db, "recall", "--cue", "IMG_0042.jpg", "--persona", "alice", "--project", "garden", "--json"))
    assert [hit["event_id"] for hit in found["raw_fallback"]] == ["u0"]


def test_nothing_found_prints_empty_lists(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    result = cli(db, "recall", "zeppelin")
    assert result.exit_code == 0
    assert result.stdout.count("(none)") == 2


def test_bad_input_exits_with_a_coded_error_as_wrong_usage(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    result = cli(db, "recall", "x", "--as-of", "2026-01-01T00:00:00")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: invalid_argument: as_of has no timezone offset")
    assert cli(db, "recall", "x", "-n", "0").exit_code == 2
