"""Semantic and deep recall with real embedders, background indexing, model changes, degrading, stdio."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import connected, make_settings, serving
from openai_stub import Reply, ScriptedOpenAI, closed_port_url, embeddings_reply

from memlikehuman.engine import Engine
from memlikehuman.index import indexer
from memlikehuman.lifecycle import forget
from memlikehuman.providers import priority
from memlikehuman.records import Scope
from memlikehuman.retrieval.recall import recall

# The tests on `db_path` run on SQLite, PostgreSQL without pgvector and with it (tests/pg_support.py).
pytestmark = pytest.mark.vectors

HOME = Scope("ana", "home")
WORK = Scope("ana", "work")
CAR = "I finally bought a new car yesterday, a small red hatchback."
OTHERS = ["The soup at lunch was far too salty.", "My sister is learning the violin.", "It rained all weekend."]


def raw_ids(result: Any) -> list[str]:
    return [hit.event.event_id for hit in result.raw_fallback]


@pytest.fixture
def local(db_path: Path | str) -> Iterator[Engine]:
    with Engine(make_settings(db_path, MEMLIKEHUMAN_EMBEDDER="local")) as engine:
        yield engine


def fill(engine: Engine, scope: Scope = HOME, prefix: str = "") -> None:
    engine.record(scope, f"{prefix}car", CAR, "user", "Ana", session_id="s1")
    for i, text in enumerate(OTHERS):
        engine.record(scope, f"{prefix}o{i}", text, "user", "Ana", session_id=f"s{i + 2}")


def test_semantic_recall_finds_by_meaning_what_fast_recall_cannot(local: Engine) -> None:
    fill(local)
    assert local.indexer.wait_idle(60)
    query = "vehicle purchase"
    assert raw_ids(recall(local, HOME, query, search_mode="fast")) == []
    for mode in ("semantic", "deep"):
        result = recall(local, HOME, query, search_mode=mode)
        assert result.search_mode == mode and raw_ids(result)[0] == "car"
        assert result.coverage.events_without_vectors == 0
        assert not any("vector" in w for w in result.warnings)


def test_a_passage_carries_the_turn_before_only_when_another_speaker_said_it(local: Engine) -> None:
    notes = ["I prefer pnpm over npm for this repo", "Please always run ruff before committing"]
    notes.append("The staging server is staging.example.internal on port 8443")
    for i, text in enumerate(notes):
        local.record(HOME, f"n{i}", text, "user", "Ana", session_id="s")
    local.record(HOME, "q", "Where did you go on holiday?", "user", "Bob", session_id="t")
    local.record(HOME, "a", "Lisbon, it was lovely.", "user", "Ana", session_id="t")
    rows = indexer._select(local.db, "event", "", 0, 10**9, 10, any_model=False).rows  # every event, any vector
    previous = {row["text"]: row["previous"] for row in rows}
    assert previous["Lisbon, it was lovely."] == "Bob: Where did you go on holiday?"
    assert previous[notes[1]] is None and previous[notes[2]] is None
    local.embed_missing()
    # With the pnpm note's text in its passage, the ruff note outranked it for this question.
    result = recall(local, HOME, "which package manager should I use to add lodash?", search_mode="semantic")
    assert raw_ids(result)[0] == "n0"


def test_semantic_scans_only_the_most_recent_window_and_deep_scans_everything(db_path: Path | str) -> None:
    settings = make_settings(db_path, MEMLIKEHUMAN_EMBEDDER="local", MEMLIKEHUMAN_SEMANTIC_WINDOW="2")
    with Engine(settings) as engine:
        fill(engine)  # the car event is the oldest of four
        engine.embed_missing()
        semantic = recall(engine, HOME, "vehicle purchase", search_mode="semantic")
        assert "car" not in raw_ids(semantic)
        window_warnings = [w for w in semantic.warnings if "scanned the 2 most recent" in w]
        assert any("skipped 2 older" in w and "deep" in w for w in window_warnings)
        deep = recall(engine, HOME, "vehicle purchase", search_mode="deep")
        assert raw_ids(deep)[0] == "car"


def test_dense_results_stay_within_the_scope(local: Engine) -> None:
    fill(local, WORK, prefix="w-")
    local.record(HOME, "h1", "Grocery list: eggs, flour.", "user", "Ana")
    local.embed_missing()
    result = recall(local, HOME, "vehicle purchase", search_mode="deep")
    assert raw_ids(result) in ([], ["h1"])
    assert result.coverage.events_in_scope == 1


def test_semantic_respects_session_and_as_of_filters(local: Engine) -> None:
    fill(local)
    local.record(
        HOME, "late", "We sold the old car.", "user", "Ana", session_id="s9", occurred_at="2030-01-01T00:00:00Z"
    )
    local.embed_missing()
    in_session = raw_ids(recall(local, HOME, "vehicle purchase", search_mode="deep", session_id="s2"))
    assert set(in_session) <= {"o0"}
    before = raw_ids(recall(local, HOME, "car", search_mode="deep", as_of="2029-01-01T00:00:00Z"))
    assert "late" not in before and "car" in before


def test_forgotten_events_disappear_from_dense_results(local: Engine) -> None:
    fill(local)
    local.embed_missing()
    assert raw_ids(recall(local, HOME, "vehicle purchase", search_mode="deep"))[0] == "car"
    forget.forget(local.db, HOME, "car")
    assert "car" not in raw_ids(recall(local, HOME, "vehicle purchase", search_mode="deep"))


def test_an_unreachable_embedder_degrades_to_fast_with_a_warning(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path / "a.db",
        MEMLIKEHUMAN_EMBEDDER="openai",
        MEMLIKEHUMAN_EMBEDDER_BASE_URL=closed_port_url(),
        MEMLIKEHUMAN_TIMEOUT="2",
    )
    with Engine(settings) as engine:
        engine.record(HOME, "e1", CAR, "user", "Ana")
        result = recall(engine, HOME, "red hatchback", search_mode="semantic")
        assert result.search_mode == "fast" and raw_ids(result) == ["e1"]
        assert any("the embedder failed" in w and "used fast" in w for w in result.warnings)
        assert result.coverage.events_without_vectors == 1


def openai_settings(db: Path | str, base_url: str, model: str) -> Any:
    return make_settings(
        db, MEMLIKEHUMAN_EMBEDDER="openai", MEMLIKEHUMAN_EMBEDDER_BASE_URL=base_url, MEMLIKEHUMAN_EMBEDDER_MODEL=model
    )


def test_vectors_of_another_model_count_as_missing_until_reindexed(db_path: Path | str) -> None:
    db = db_path
    with ScriptedOpenAI() as api:
        with Engine(openai_settings(db, api.base_url, "model-a")) as engine:
            fill(engine)
            engine.embed_missing()
            assert recall(engine, HOME, "car", search_mode="deep").coverage.events_without_vectors == 0
        with Engine(openai_settings(db, api.base_url, "model-b")) as engine:
            result = recall(engine, HOME, "red car", search_mode="deep")
            assert result.search_mode == "deep" and result.coverage.events_without_vectors == 4
            assert any("4 events in scope have no vector of openai:model-b" in w for w in result.warnings)
            assert engine.embed_missing() == 4
            assert recall(engine, HOME, "red car", search_mode="deep").coverage.events_without_vectors == 0
            models = engine.db.query("SELECT DISTINCT model FROM event_vectors")
            assert models == [{"model": "openai:model-b"}]


class GatedEmbeddings(ScriptedOpenAI):
    """Embedding requests wait until the test opens the gate."""

    gate: threading.Event = threading.Event()

    def _answer(self, path: str, body: dict[str, Any]) -> Reply:
        if path.endswith("/embeddings"):
            self.gate.wait(30)
            return embeddings_reply(body, self.dim)
        return super()._answer(path, body)


def test_recording_never_waits_for_the_embedder_and_vectors_follow_in_the_background(tmp_path: Path) -> None:
    with GatedEmbeddings() as api:
        api.gate = threading.Event()
        with Engine(openai_settings(tmp_path / "a.db", api.base_url, "m")) as engine:
            first = engine.record(HOME, "e1", CAR, "user", "Ana")  # returns while the embedder is blocked
            second = engine.record(HOME, "e2", OTHERS[0], "user", "Ana")
            assert (first.sequence, second.sequence) == (1, 2)
            assert recall(engine, HOME, "car").coverage.events_without_vectors in (1, 2)
            api.gate.set()
            assert engine.indexer.wait_idle(30)
            engine.indexer.notify()  # a last pass picks up anything recorded during the first batch
            assert engine.indexer.wait_idle(30)
            assert recall(engine, HOME, "car").coverage.events_without_vectors == 0


def test_memories_get_vectors_in_the_background_too(db_path: Path | str) -> None:
    from memlikehuman.archive import events, memories
    from memlikehuman.records import Candidate

    with ScriptedOpenAI() as api, Engine(openai_settings(db_path, api.base_url, "m")) as engine:
        sequence = engine.record(HOME, "e1", CAR, "user", "Ana").sequence
        memories.store(
            engine.db,
            events.load(engine.db, sequence),
            [
                Candidate(
                    "Ana bought a red hatchback",
                    "a small red hatchback",
                    "event",
                    "stated",
                    None,
                    "2024-01-01T00:00:00.000000Z",
                )
            ],
            "2024-01-01T00:00:00.000000Z",
        )
        engine.indexer.notify()
        assert engine.indexer.wait_idle(30)
        assert engine.db.scalar("SELECT count(*) FROM memory_vectors WHERE model = 'openai:m'") == 1
        hit = recall(engine, HOME, "hatchback", search_mode="deep").memories[0]
        assert hit.memory.content == "Ana bought a red hatchback"


# -- over the real stdio server ----------------------------------------------------------------------


def test_recall_over_stdio_in_each_mode_with_an_openai_compatible_embedder(tmp_path: Path) -> None:
    with ScriptedOpenAI() as api:
        params = serving(
            tmp_path / "a.db",
            MEMLIKEHUMAN_EMBEDDER="openai",
            MEMLIKEHUMAN_EMBEDDER_BASE_URL=api.base_url,
            MEMLIKEHUMAN_EMBEDDER_MODEL="m",
        )
        with connected(params) as client:
            client.ok("memory_record", event_id="e1", text=CAR, role="user", source="Ana")
            client.ok("memory_record", event_id="e2", text=OTHERS[0], role="user", source="Ana")
            for mode in ("fast", "semantic", "deep"):
                out = client.ok("memory_recall", query="red hatchback car", search_mode=mode)
                assert out["search_mode"] == mode
                assert "e1" in [hit["event_id"] for hit in out["raw_fallback"]]
            assert client.error("memory_recall", query='NEAR("a" b) OR', limit=0).startswith("invalid_argument")
            out = client.ok("memory_recall", query='"hatchback" NEAR( * ^ ; DROP TABLE events', search_mode="fast")
            assert out["raw_fallback"][0]["event_id"] == "e1"
    queries = [
        body for path, body in api.requests if path.endswith("/embeddings") and body["input"] == ["red hatchback car"]
    ]
    assert queries and all(body["encoding_format"] == "base64" for body in queries)


def test_recall_over_stdio_degrades_without_an_embedder(tmp_path: Path) -> None:
    with connected(serving(tmp_path / "a.db")) as client:
        client.ok("memory_record", event_id="e1", text=CAR, role="user", source="Ana")
        out = client.ok("memory_recall", query="hatchback", search_mode="deep")
        assert out["search_mode"] == "fast" and out["raw_fallback"][0]["event_id"] == "e1"
        assert any("MEMLIKEHUMAN_EMBEDDER=none" in w for w in out["warnings"])
        assert client.error("memory_recall", query="").startswith("invalid_argument: query is empty")


def brute_force_coverage(engine: Engine, scope: Scope, model: str) -> tuple[int, int, int, int]:
    row = engine.db.one(
        "SELECT count(*) AS n, count(CASE WHEN extraction_state = 'pending' THEN 1 END) AS p,"
        " count(CASE WHEN extraction_state = 'failed' THEN 1 END) AS f"
        " FROM events WHERE persona_id = ? AND project_id = ?",
        (scope.persona_id, scope.project_id),
    )
    assert row is not None
    missing = engine.db.scalar(
        "SELECT count(*) FROM events e WHERE persona_id = ? AND project_id = ? AND NOT EXISTS"
        " (SELECT 1 FROM event_vectors v WHERE v.event_sequence = e.sequence AND v.model = ?)",
        (scope.persona_id, scope.project_id, model),
    )
    return int(row["n"]), int(row["p"]), int(row["f"]), int(missing)


def test_coverage_counts_stay_exact_through_recording_forgetting_state_changes_and_model_changes(
    db_path: Path | str,
) -> None:
    from memlikehuman.archive import events

    db = db_path
    with ScriptedOpenAI() as api:
        for model in ("model-a", "model-b"):
            with Engine(openai_settings(db, api.base_url, model)) as engine:
                fill(engine, HOME, prefix=model)
                fill(engine, WORK, prefix=f"work-{model}")
                engine.embed_missing()
                forget.forget(engine.db, HOME, f"{model}o1")
                events.set_state(engine.db, events.find(engine.db, HOME, f"{model}o2").sequence, "failed", "test")
                engine.record(HOME, f"{model}-new", "recorded after indexing", "user", "Ana")
                assert engine.indexer.wait_idle(30)
                for scope in (HOME, WORK):
                    c = recall(engine, scope, "car", search_mode="deep").coverage
                    counts = (c.events_in_scope, c.events_pending, c.events_failed, c.events_without_vectors)
                    assert counts == brute_force_coverage(engine, scope, f"openai:{model}")
            assert counts[0] > 0
        with Engine(openai_settings(db, api.base_url, "model-b")) as engine:
            with engine.db.write() as conn:
                conn.execute("DELETE FROM event_vectors")
            c = recall(engine, HOME, "car", search_mode="deep").coverage
            assert (
                c.events_without_vectors == c.events_in_scope == brute_force_coverage(engine, HOME, "openai:model-b")[3]
            )


def test_memories_over_stdio_with_a_real_extractor_as_of_history_correction_and_detail(tmp_path: Path) -> None:
    from openai_stub import extraction_reply, memory_item

    porto = memory_item(
        "Ana lives in Porto", "I live in Porto", subject="ana.home_city", valid_from="2023-01-01T00:00:00Z"
    )
    berlin = memory_item(
        "Ana lives in Berlin", "moved to Berlin", subject="ana.home_city", valid_from="2024-03-01T00:00:00Z"
    )
    hike = memory_item(
        "Ana hiked up Pico on 3 May 2024",
        "We hiked up Pico",
        kind="event",
        valid_from="2024-05-03T00:00:00Z",
        gist="a mountain hike in the Azores",
    )
    with ScriptedOpenAI(chat=[extraction_reply(porto), extraction_reply(berlin), extraction_reply(hike)]) as api:
        params = serving(
            tmp_path / "a.db",
            MEMLIKEHUMAN_EXTRACTOR="openai",
            MEMLIKEHUMAN_EXTRACTOR_BASE_URL=api.base_url,
            MEMLIKEHUMAN_EXTRACTOR_API_KEY="k",
            MEMLIKEHUMAN_EXTRACTION_WAIT="60",
        )
        with connected(params) as client:
            for event_id, text, when in [
                ("m1", "I live in Porto.", "2023-01-01T00:00:00Z"),
                ("m2", "I moved to Berlin!", "2024-03-01T00:00:00Z"),
                ("m3", "We hiked up Pico today.", "2024-05-03T00:00:00Z"),
            ]:
                out = client.ok(
                    "memory_record", event_id=event_id, text=text, role="user", source="Ana", occurred_at=when
                )
                assert out["extraction_state"] == "complete" and len(out["memory_ids"]) == 1

            def contents(**arguments: Any) -> list[tuple[str, str]]:
                out = client.ok("memory_recall", **arguments)
                assert out["raw_fallback"] == []  # every event is covered by its memory
                return [(m["content"], m["status"]) for m in out["memories"]]

            assert contents(query="where does she live") == [("Ana lives in Berlin", "current")]
            assert contents(query="where does she live", as_of="2023-06-01T00:00:00+02:00") == [
                ("Ana lives in Porto", "current")
            ]
            assert sorted(contents(query="where does she live", include_history=True)) == [
                ("Ana lives in Berlin", "current"),
                ("Ana lives in Porto", "superseded"),
            ]
            berlin_id = client.ok("memory_recall", query="Berlin")["memories"][0]["memory_id"]
            client.ok("memory_correct", memory_id=berlin_id, content="Ana lives in Hamburg", reason="misheard")
            assert contents(query="where does she live Berlin Hamburg", include_history=True) == [
                ("Ana lives in Hamburg", "current"),
                ("Ana lives in Porto", "superseded"),
            ]
            hike_out = client.ok("memory_recall", query="Pico hike", as_of="2024-12-01T00:00:00Z")["memories"][0]
            assert hike_out["detail"] == "overview" and "memory_read" in hike_out["content"]
            assert "a mountain hike in the Azores" in hike_out["content"] and "3 May" not in hike_out["content"]
            detailed = client.ok("memory_recall", query="Pico hike", detail="detailed")["memories"][0]
            assert detailed["content"] == "Ana hiked up Pico on 3 May 2024" and detailed["detail"] == "full"


def test_the_background_indexer_finds_missing_vectors_anywhere_walking_the_archive_in_slices(tmp_path: Path) -> None:
    with ScriptedOpenAI() as api, Engine(openai_settings(tmp_path / "a.db", api.base_url, "m")) as engine:
        for i in range(12):
            engine.record(HOME, f"e{i}", f"Note {i} about the garden.", "user", "Ana", session_id=f"s{i}")
        engine.indexer.notify()
        assert engine.indexer.wait_idle(30)
        assert indexer.count_missing(engine.db, "openai:m") == 0
        # Old vectors go missing, as when forgetting an event changes its successor's passage.
        with engine.db.write() as conn:
            conn.execute("DELETE FROM event_vectors WHERE event_sequence IN (2, 7)")
        # A new indexer scans from the top down, here 3 ids at a time: 12 events, four slices.
        walker = indexer.Indexer(
            engine.db, engine.indexer.cache, engine.settings, engine.indexer.embedder, scan_chunk=3
        )
        try:
            walker.notify()
            assert walker.wait_idle(30)
        finally:
            walker.close()
        assert indexer.count_missing(engine.db, "openai:m") == 0
        assert engine.db.scalar("SELECT count(*) FROM event_vectors WHERE event_sequence IN (2, 7)") == 2


@pytest.mark.skipif(sys.platform != "linux", reason="thread priorities are per thread only on Linux")
def test_the_background_indexer_embeds_at_a_lower_cpu_priority_than_the_callers(tmp_path: Path) -> None:
    with ScriptedOpenAI() as api, Engine(openai_settings(tmp_path / "a.db", api.base_url, "m")) as engine:
        engine.record(HOME, "e1", CAR, "user", "Ana")
        assert engine.indexer.wait_idle(30)
        (thread,) = [t for t in threading.enumerate() if t.name == "memlikehuman-indexer"]
        assert thread.native_id is not None
        ours = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        assert os.getpriority(os.PRIO_PROCESS, thread.native_id) == min(19, ours + priority.BACKGROUND_NICE)
