"""`doctor`: healthy archives pass; damaged indexes and unreachable providers fail with exit 3."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import apsw
from cli_support import cli, closed_port, populate
from openai_stub import ScriptedOpenAI

from memlikehuman.archive import fulltext
from memlikehuman.archive.db import open_database


def run(db: Path, **env: str) -> tuple[int, dict[str, dict[str, str]]]:
    result = cli(db, "doctor", "--json", env=env)
    report = json.loads(result.stdout)
    assert report["ok"] is (result.exit_code == 0)
    return result.exit_code, {check["name"]: check for check in report["checks"]}


def damage(db: Path, sql: str) -> None:
    conn = apsw.Connection(str(db))
    try:
        conn.execute(sql)
    finally:
        conn.close()


def test_a_healthy_archive_passes_every_check(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    code, found = run(db)
    assert code == 0
    assert {name: c["status"] for name, c in found.items()} == {
        "configuration": "ok",
        "schema": "ok",
        "integrity": "ok",
        "full-text index": "ok",
        "forgotten": "ok",
        "vectors": "ok",
        "extractor": "ok",
        "embedder": "ok",
    }


def test_a_corrupted_full_text_index_is_detected_and_reindex_repairs_it(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    # Drop the index's segment pages (id 1 and 10 are its structure and averages records).
    damage(db, "DELETE FROM events_fts_data WHERE id > 10")
    code, found = run(db)
    assert code == 3
    assert found["full-text index"]["status"] == "fail"
    assert "events_fts is damaged" in found["full-text index"]["detail"]
    assert "reindex" in found["full-text index"]["detail"]
    assert cli(db, "reindex", "--only", "fulltext").exit_code == 0
    code, found = run(db)
    assert code == 0 and found["full-text index"]["status"] == "ok"


def test_a_corrupted_n_gram_index_is_detected_and_reindex_repairs_it(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    damage(db, "DELETE FROM events_ngrams_data WHERE id > 10")
    code, found = run(db)
    assert code == 3
    assert "events_ngrams is damaged" in found["full-text index"]["detail"]
    assert cli(db, "reindex", "--only", "fulltext").exit_code == 0
    code, found = run(db)
    assert code == 0 and found["full-text index"]["status"] == "ok"


def test_events_without_n_gram_rows_are_detected_and_the_next_open_adds_them(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    damage(db, "INSERT INTO events_ngrams(events_ngrams) VALUES ('delete-all')")
    code, found = run(db)
    assert code == 3
    assert found["full-text index"]["detail"].startswith("9 events and 0 memories have no full-text row")
    # Opening the archive (here for `reindex --missing`) writes the n-gram rows it lacks, as after m006.
    assert cli(db, "reindex", "--missing", "--only", "fulltext").exit_code == 0
    assert run(db)[0] == 0


def test_events_without_full_text_rows_are_detected(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    archive = open_database(db)
    with archive.write() as conn:
        for row in conn.execute("SELECT sequence FROM events WHERE event_id IN ('u1', 'w1')").fetchall():
            fulltext.unindex_event(conn, row["sequence"])
    archive.close()
    code, found = run(db)
    assert code == 3
    assert found["full-text index"]["detail"].startswith("2 events and 0 memories have no full-text row")
    assert cli(db, "reindex", "--missing", "--only", "fulltext").exit_code == 0
    assert run(db)[0] == 0


def test_an_unreachable_embedder_fails_within_the_timeout(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    code, found = run(db, MEMLIKEHUMAN_EMBEDDER="openai", MEMLIKEHUMAN_EMBEDDER_BASE_URL=url, MEMLIKEHUMAN_TIMEOUT="2")
    assert code == 3
    assert found["embedder"]["status"] == "fail"
    assert f"cannot reach {url}" in found["embedder"]["detail"]
    assert "MEMLIKEHUMAN_EMBEDDER_BASE_URL" in found["embedder"]["detail"]


def test_an_unreachable_extractor_fails(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    url = f"http://127.0.0.1:{closed_port()}/v1"
    code, found = run(db, MEMLIKEHUMAN_EXTRACTOR="openai", MEMLIKEHUMAN_EXTRACTOR_BASE_URL=url)
    assert code == 3 and found["extractor"]["status"] == "fail"


def test_a_reachable_openai_compatible_provider_passes(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    with ScriptedOpenAI() as api:
        env = {"MEMLIKEHUMAN_EMBEDDER": "openai", "MEMLIKEHUMAN_EMBEDDER_BASE_URL": api.base_url}
        code, found = run(db, **env)
    assert found["embedder"]["status"] == "ok" and api.base_url in found["embedder"]["detail"]
    # Nothing has a vector yet: a warning, not a failure.
    assert found["vectors"]["status"] == "warn" and code == 0


def test_a_missing_archive_is_a_warning_and_is_not_created(tmp_path: Path) -> None:
    db = tmp_path / "nowhere" / "a.sqlite3"
    code, found = run(db)
    assert code == 0 and found["archive"]["status"] == "warn"
    assert not db.exists()


def test_a_broken_configuration_fails(tmp_path: Path) -> None:
    code, found = run(tmp_path / "a.sqlite3", MEMLIKEHUMAN_EXTRACTOR="telepathy")
    assert code == 3
    assert found["configuration"]["detail"] == (
        "MEMLIKEHUMAN_EXTRACTOR must be one of 'none', 'openai', 'sampling', 'command'"
    )


def test_the_table_names_failed_checks_on_stderr(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    damage(db, "DELETE FROM events_fts_data WHERE id > 10")
    result = cli(db, "doctor")
    assert result.exit_code == 3
    assert any(line.split()[:3] == ["full-text", "index", "FAIL"] for line in result.stdout.splitlines())
    # SQLite's own integrity_check also runs FTS5's check, so it may fail too.
    assert "check(s) failed:" in result.stderr and "full-text index" in result.stderr


def test_a_file_that_is_not_an_archive_fails_doctor_and_every_command_says_so_without_a_traceback(
    tmp_path: Path,
) -> None:
    db = tmp_path / "notes.sqlite3"
    db.write_bytes(b"these are my notes, not a database\n" * 200)
    code, found = run(db)
    assert code == 3 and found["archive"]["status"] == "fail"
    assert "not a database" in found["archive"]["detail"]
    for command in (["stats"], ["export"], ["recall", "x"], ["persona", "show"], ["serve"]):
        result = cli(db, *command)
        assert result.exit_code == 1, command
        assert result.stderr.startswith("error: unavailable: cannot read the archive"), command
        assert "Traceback" not in result.stderr


def test_a_truncated_archive_fails_doctor_and_commands_end_with_a_coded_error(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    populate(db)
    for i in range(300):  # enough pages that half the file cuts through tables and indexes
        damage(
            db,
            f"INSERT INTO persona_versions (persona_id, version, text, created_at) VALUES ('p{i}', 1,"
            f" '{'x' * 3000}', '2026-01-01T00:00:00Z')",
        )
    damage(db, "PRAGMA wal_checkpoint(TRUNCATE)")
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    code, found = run(db)
    assert code == 3 and "fail" in {c["status"] for c in found.values()}
    result = cli(db, "stats")
    assert result.exit_code == 1 and result.stderr.startswith("error: unavailable: cannot read the archive")
    assert "Traceback" not in result.stderr


def test_a_provider_that_accepts_but_never_answers_fails_within_the_timeout(tmp_path: Path) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts connections, never reads or answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        code, found = run(
            tmp_path / "a.sqlite3",
            MEMLIKEHUMAN_EMBEDDER="openai",
            MEMLIKEHUMAN_EMBEDDER_BASE_URL=url,
            MEMLIKEHUMAN_TIMEOUT="1",
        )
    assert code == 3 and found["embedder"]["status"] == "fail"
    assert "did not answer within 1 s" in found["embedder"]["detail"]
