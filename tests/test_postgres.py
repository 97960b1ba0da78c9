"""The PostgreSQL backend's own promises: the same export as SQLite, many servers on one database.

The rest of the suite runs on both backends through the `backend` fixture (tests/pg_support.py);
these tests are about what only a server database has: several processes creating the schema at
once, another process's writes being seen, and moving an archive between the backends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cli_support import body, cli, export_text, populate
from conftest import BASE_ENV, make_settings

from memlikehuman.archive.db import open_database
from memlikehuman.archive.postgres import pg_schema
from memlikehuman.engine import Engine
from memlikehuman.errors import Conflict
from memlikehuman.records import Scope

SCOPE = Scope("alice", "garden")


def test_an_archive_exported_from_sqlite_and_imported_into_postgres_exports_byte_identical(
    tmp_path: Path, pg_url: str
) -> None:
    source = tmp_path / "source.sqlite3"
    populate(source)
    exported = export_text(source)
    (tmp_path / "a.jsonl").write_bytes(exported.encode())
    imported = cli(pg_url, "import", str(tmp_path / "a.jsonl"))  # type: ignore[arg-type]
    assert imported.exit_code == 0, imported.output
    from_postgres = export_text(pg_url)  # type: ignore[arg-type]
    assert body(from_postgres) == body(exported)
    back = tmp_path / "back.sqlite3"
    (tmp_path / "b.jsonl").write_bytes(from_postgres.encode())
    assert cli(back, "import", str(tmp_path / "b.jsonl")).exit_code == 0
    assert body(export_text(back)) == body(exported)


def test_eight_servers_starting_at_once_on_an_empty_database_create_the_schema_once(pg_url: str) -> None:
    code = (
        "import sys; from memlikehuman import config; from memlikehuman.engine import Engine;"
        "e = Engine(config.load(sys.argv[1], env={'MEMLIKEHUMAN_EMBEDDER': 'none', 'MEMLIKEHUMAN_CONFIG': '/x'}));"
        "print(e.schema_version); e.close()"
    )
    starts = [
        subprocess.Popen([sys.executable, "-c", code, pg_url], stdout=subprocess.PIPE, text=True) for _ in range(8)
    ]
    versions = [process.communicate(timeout=120)[0].strip() for process in starts]
    assert [process.returncode for process in starts] == [0] * 8
    assert versions == [str(len(pg_schema.MIGRATIONS))] * 8
    db = open_database(pg_url)
    try:
        assert db.scalar("SELECT count(*) FROM schema_migrations") == len(pg_schema.MIGRATIONS)
    finally:
        db.close()


def test_the_same_event_id_recorded_by_many_connections_at_once_is_stored_once(pg_url: str) -> None:
    engines = [Engine(make_settings(pg_url)) for _ in range(6)]
    try:

        def record(engine: Engine) -> str:
            return (
                "duplicate" if engine.record(SCOPE, "e-1", "We planted tomatoes.", "user", "alice").duplicate else "new"
            )

        with ThreadPoolExecutor(6) as pool:
            outcomes = list(pool.map(record, engines))
        assert outcomes.count("new") == 1
        with pytest.raises(Conflict):
            engines[0].record(SCOPE, "e-1", "Another text under the same ID.", "user", "alice")
        assert engines[0].db.scalar("SELECT count(*) FROM events") == 1
    finally:
        for engine in engines:
            engine.close()


def test_sequences_increase_in_commit_order_under_concurrent_writers(pg_url: str) -> None:
    engines = [Engine(make_settings(pg_url)) for _ in range(4)]
    try:

        def record_many(index: int) -> None:
            for i in range(25):
                engines[index].record(SCOPE, f"w{index}-{i}", f"turn {i} of writer {index}", "user", "alice")

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(record_many, range(4)))
        # Commit order is the order xmin (the inserting transaction) was assigned under the write lock.
        rows = engines[0].db.query("SELECT sequence, xmin::text::bigint AS tx FROM events ORDER BY sequence")
        assert len(rows) == 100
        assert [row["tx"] for row in rows] == sorted(row["tx"] for row in rows)
    finally:
        for engine in engines:
            engine.close()


def test_a_vector_written_by_another_process_is_seen_by_semantic_recall(pg_url: str) -> None:
    env = {**BASE_ENV, "MEMLIKEHUMAN_EMBEDDER": "local"}
    with Engine(make_settings(pg_url, MEMLIKEHUMAN_EMBEDDER="local")) as reader:
        reader.record(SCOPE, "first", "The greenhouse needs new glass panes.", "user", "alice")
        reader.embed_missing()
        assert reader.recall(SCOPE, "greenhouse glass", search_mode="semantic").coverage.events_without_vectors == 0
        writer = (
            "import sys; from memlikehuman import config; from memlikehuman.engine import Engine;"
            " from memlikehuman.records import Scope; e = Engine(config.load(sys.argv[1]));"
            " e.record(Scope('alice', 'garden'), 'second', 'My violin teacher moved to Porto.', 'user', 'alice');"
            " e.embed_missing(); e.close()"
        )
        subprocess.run([sys.executable, "-c", writer, pg_url], env={**os.environ, **env}, check=True, timeout=300)
        found = reader.recall(SCOPE, "music tutor relocation", search_mode="semantic")
        assert "second" in [hit.event.event_id for hit in found.raw_fallback]
        assert found.coverage.events_without_vectors == 0


def test_stats_report_the_database_and_its_size(pg_url: str) -> None:
    with Engine(make_settings(pg_url)) as engine:
        engine.record(SCOPE, "e-1", "We planted tomatoes.", "user", "alice")
    result = cli(pg_url, "stats", "--json")  # type: ignore[arg-type]
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert stats["path"].startswith("postgresql:///") and stats["file_bytes"] > 0


def test_text_and_a_cue_label_holding_nul_are_read_and_exported_whole(tmp_path: Path, pg_url: str) -> None:
    with Engine(make_settings(pg_url)) as engine:
        engine.record(
            SCOPE, "nul", "before\x00after", "user", "alice", cues=[{"kind": "text", "key": "k", "label": "a\x00b"}]
        )
        event = engine.read(SCOPE, "nul").event
        assert event.text == "before\x00after" and event.cues[0].label == "a\x00b"
    exported = export_text(pg_url)  # type: ignore[arg-type]
    (tmp_path / "nul.jsonl").write_bytes(exported.encode())
    target = tmp_path / "nul.sqlite3"
    assert cli(target, "import", str(tmp_path / "nul.jsonl")).exit_code == 0
    assert body(export_text(target)) == body(exported)
