"""`stats`: per-scope counts checked against archives with known contents."""

from __future__ import annotations

from pathlib import Path

from cli_support import cli, json_out, populate
from click.testing import CliRunner
from conftest import BASE_ENV, make_settings
from openai_stub import ScriptedOpenAI

from memlikehuman.archive import events
from memlikehuman.cli import main
from memlikehuman.engine import Engine
from memlikehuman.records import Scope


def scopes(report: dict[str, object]) -> dict[tuple[str, str], dict[str, object]]:
    return {(s["persona_id"], s["project_id"]): s for s in report["scopes"]}  # type: ignore[index,union-attr]


def test_stats_counts_every_kind_of_record_per_scope(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    with Engine(make_settings(db)) as engine:
        events.set_state(engine.db, events.find(engine.db, Scope("alice", "garden"), "u3").sequence, "failed", "bad")
    report = json_out(cli(db, "stats", "--json"))
    alice, bob = scopes(report)[("alice", "garden")], scopes(report)[("bob", "work")]
    # 4 unicode events + big + home1 + home2 + the correction event (complete); the forgotten one is gone.
    assert alice["events"] == 8
    assert (alice["extraction_pending"], alice["extraction_failed"]) == (6, 1)
    # Lisbon superseded by Porto; Porto revoked by the correction; its replacement is current.
    assert (alice["memories_current"], alice["memories_superseded"], alice["memories_revoked"]) == (1, 1, 1)
    # The checkpoint saved before the correction was invalidated by it; the later one is valid.
    assert (alice["checkpoints_valid"], alice["checkpoints_invalidated"]) == (1, 1)
    assert alice["vectors_missing"] is None  # no embedder configured
    assert (bob["events"], bob["extraction_pending"], bob["memories_current"], bob["checkpoints_valid"]) == (1, 1, 0, 1)
    assert report["totals"]["events"] == 9
    assert report["file_bytes"] > 0 and report["path"] == str(db)


def test_stats_of_one_persona_lists_only_its_scopes(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    report = json_out(cli(db, "stats", "--persona", "bob", "--json"))
    assert list(scopes(report)) == [("bob", "work")]
    assert report["totals"]["events"] == 1


def test_stats_counts_vectors_missing_for_the_configured_embedder(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    with ScriptedOpenAI() as api:
        env = {"MEMLIKEHUMAN_EMBEDDER": "openai", "MEMLIKEHUMAN_EMBEDDER_BASE_URL": api.base_url}
        with Engine(make_settings(db)) as engine:
            for i in range(5):
                engine.record(Scope("p", "q"), f"e{i}", f"event number {i}", "user", "chat")
        before = scopes(json_out(cli(db, "stats", "--json", env=env)))[("p", "q")]
        assert cli(db, "reindex", "--missing", "--only", "vectors", env=env).exit_code == 0
        after = scopes(json_out(cli(db, "stats", "--json", env=env)))[("p", "q")]
    assert (before["vectors_missing"], after["vectors_missing"]) == (5, 0)


def test_stats_says_each_scopes_counts_in_words_with_the_totals_and_the_archive_size(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    result = cli(db, "stats")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "alice/garden: 8 events, extraction 7 pending (0 in flight), 0 failed"
    assert lines[1] == "  memories 1 current, 1 superseded, 1 revoked; checkpoints 1 valid, 1 invalidated"
    assert lines[2].startswith("bob/work: 1 event, ") and lines[4].startswith("all 2 scopes: 9 events, ")
    assert f"archive {db}:" in result.stdout and "KB" in result.stdout


def test_stats_wide_prints_a_table_with_a_total_row_and_the_archive_size(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    result = cli(db, "stats", "--wide")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split()[:5] == ["persona", "project", "events", "pending", "failed"]
    assert lines[2].split()[:3] == ["alice", "garden", "8"] and lines[3].split()[:3] == ["bob", "work", "1"]
    assert lines[4].split()[:3] == ["*", "*", "9"]
    assert f"archive {db}:" in result.stdout and "KB" in result.stdout


def test_stats_of_an_empty_archive_says_so(tmp_path: Path) -> None:
    db = tmp_path / "new.sqlite3"
    Engine(make_settings(db)).close()
    result = cli(db, "stats")
    assert result.exit_code == 0 and "(no records)" in result.stdout


def test_a_mistyped_archive_path_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "typo.sqlite3"
    extractor = {"MEMLIKEHUMAN_EXTRACTOR": "openai"}
    for command in (["stats"], ["export"], ["reindex"], ["recall", "x"], ["retry", "--all"], ["persona", "show"]):
        result = cli(db, *command, env=extractor)
        assert result.exit_code == 1, command
        assert result.stderr.startswith(f"error: not_found: no archive at {db}"), command
    assert not db.exists()


def test_an_import_of_a_missing_file_or_a_dry_run_creates_no_archive(tmp_path: Path) -> None:
    db = tmp_path / "new.sqlite3"
    result = cli(db, "import", str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 1 and result.stderr.startswith("error: invalid_argument: cannot read")
    source = tmp_path / "export.jsonl"
    populate(tmp_path / "full.sqlite3")
    assert cli(tmp_path / "full.sqlite3", "export", "-o", str(source)).exit_code == 0
    dry = cli(db, "import", str(source), "--dry-run", "--json")
    report = json_out(dry)
    assert report["dry_run"] is True and report["added"]["event"] > 0
    assert not db.exists()


def test_an_empty_db_option_is_refused_and_never_means_the_users_own_archive(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"XDG_DATA_HOME": str(data), "HOME": str(tmp_path)}
    for args in (["--db", "", "stats"], ["stats", "--db", ""], ["doctor", "--db", ""]):
        result = CliRunner().invoke(main, args, env={**BASE_ENV, **env})
        assert result.exit_code != 0, args
        assert "the archive (--db) is empty" in result.output + result.stderr, args
    assert not data.exists()
