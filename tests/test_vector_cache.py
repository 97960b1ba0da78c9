"""The in-memory vector matrices: loading them from the archive file, and rows streamed as tuples."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import make_settings

from memlikehuman.engine import Engine
from memlikehuman.index import vectors
from memlikehuman.records import Scope

HOME = Scope("ana", "home")
WORK = Scope("ana", "work")
MODEL = "test-model"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with Engine(make_settings(tmp_path / "a.db")) as engine:
        yield engine


def store(engine: Engine, scope: Scope, event_id: str, vector: np.ndarray | bytes, model: str = MODEL) -> int:
    engine.record(scope, event_id, f"text of {event_id}", "user", "Ana", session_id="s1")
    sequence = int(engine.db.scalar("SELECT sequence FROM events WHERE event_id = ?", (event_id,)))
    blob = vector if isinstance(vector, bytes) else vectors.encode(vector)
    dim = len(blob) // 4 if isinstance(vector, bytes) else len(vector)
    with engine.db.write() as conn:
        conn.execute(
            "INSERT INTO event_vectors (event_sequence, model, dim, vector) VALUES (?, ?, ?, ?)",
            (sequence, model, dim, blob),
        )
    return sequence


def unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_a_loaded_matrix_ranks_the_scopes_vectors_of_the_model_by_cosine(engine: Engine) -> None:
    near = store(engine, HOME, "near", unit(1, 0.1, 0))
    far = store(engine, HOME, "far", unit(0, 1, 0))
    middle = store(engine, HOME, "middle", unit(1, 1, 0))
    store(engine, WORK, "other-scope", unit(1, 0, 0))
    store(engine, HOME, "other-model", unit(1, 0, 0), model="another")
    hits = vectors.VectorCache().search(engine.db, "event", MODEL, HOME, unit(1, 0, 0), 10)
    assert hits.ids.tolist() == [near, middle, far]
    assert hits.scanned == 3
    assert hits.scores[0] == pytest.approx(float(unit(1, 0.1, 0)[0]), rel=1e-6)


def test_loading_keeps_the_most_common_dimension_and_skips_blobs_of_the_wrong_size(engine: Engine) -> None:
    kept = [store(engine, HOME, f"three-{i}", unit(1, i, 0)) for i in range(3)]
    store(engine, HOME, "two", unit(1, 0))
    sequence = store(engine, HOME, "short", unit(1, 0, 0))
    with engine.db.write() as conn:  # a damaged BLOB: 8 bytes where dim says 3 floats (12 bytes)
        conn.execute("UPDATE event_vectors SET vector = ? WHERE event_sequence = ?", (b"\0" * 8, sequence))
    hits = vectors.VectorCache().search(engine.db, "event", MODEL, HOME, unit(1, 0, 0), 10)
    assert sorted(hits.ids.tolist()) == kept


def test_a_scope_without_vectors_of_the_model_finds_nothing(engine: Engine) -> None:
    store(engine, HOME, "e1", unit(1, 0, 0), model="another")
    hits = vectors.VectorCache().search(engine.db, "event", MODEL, HOME, unit(1, 0, 0), 10)
    assert hits.ids.tolist() == [] and hits.scanned == 0


def test_one_scan_for_several_queries_ranks_each_as_its_own_search_would(engine: Engine) -> None:
    rng = np.random.default_rng(3)
    stored = {
        store(engine, HOME, f"e{i}", v): v for i, v in enumerate(unit(*rng.standard_normal(8)) for _ in range(40))
    }
    queries = np.stack([unit(*rng.standard_normal(8)) for _ in range(3)])
    cache, ks = vectors.VectorCache(), [5, 12, 40]
    allowed = np.asarray(list(stored)[::2], dtype=np.int64)
    for window, admitted in ((None, None), (25, None), (25, allowed)):
        many = cache.search_many(engine.db, "event", MODEL, HOME, queries, ks, window=window, allowed=admitted)
        for query, k, hits in zip(queries, ks, many, strict=True):
            alone = cache.search(engine.db, "event", MODEL, HOME, query, k, window=window, allowed=admitted)
            assert hits.ids.tolist() == alone.ids.tolist()
            assert (hits.scanned, hits.skipped) == (alone.scanned, alone.skipped)
            # The brute-force ranking of what the window and the filter admit.
            scanned = sorted(stored)[-window:] if window else sorted(stored)
            scanned = [s for s in scanned if admitted is None or s in admitted]
            best = sorted(scanned, key=lambda s, q=query: -float(stored[s] @ q))[:k]
            assert hits.ids.tolist() == best and hits.scanned == len(scanned)
            assert hits.scores == pytest.approx([float(stored[s] @ query) for s in best], abs=1e-5)


def test_streamed_rows_are_plain_tuples_and_queries_still_give_dicts(engine: Engine) -> None:
    for i in range(3):
        engine.record(HOME, f"e{i}", f"text {i}", "user", "Ana")
    streamed = list(engine.db.stream("SELECT event_id, text FROM events ORDER BY sequence"))
    assert streamed == [("e0", "text 0"), ("e1", "text 1"), ("e2", "text 2")]
    assert engine.db.query("SELECT event_id FROM events ORDER BY sequence LIMIT 1") == [{"event_id": "e0"}]
    assert engine.db.query("SELECT text, event_id FROM events ORDER BY sequence LIMIT 1") == [
        {"text": "text 0", "event_id": "e0"}
    ]


def test_cosines_of_chosen_rows_are_those_of_the_scope_and_model_and_skip_rows_without_one(engine: Engine) -> None:
    near = store(engine, HOME, "near", unit(1, 0.1, 0))
    far = store(engine, HOME, "far", unit(0, 1, 0))
    other_scope = store(engine, WORK, "other-scope", unit(1, 0, 0))
    other_model = store(engine, HOME, "other-model", unit(1, 0, 0), model="another")
    cache = vectors.VectorCache()
    found = cache.cosines(engine.db, "event", MODEL, HOME, unit(1, 0, 0), [far, other_scope, near, other_model, 10**9])
    assert set(found) == {near, far}
    assert found[near] == pytest.approx(float(unit(1, 0.1, 0)[0]), rel=1e-6)
    assert found[far] == pytest.approx(0.0, abs=1e-6)


def test_a_matrix_built_from_unsorted_ids_is_sorted_so_the_newest_stay_last() -> None:
    matrix = vectors._Matrix(np.asarray([5, 2, 9], dtype=np.int64), np.eye(3, dtype=np.float32))
    ids, rows = matrix.view(2)
    assert ids.tolist() == [5, 9]
    assert rows.tolist() == [[1, 0, 0], [0, 0, 1]]


def test_a_batch_added_newest_first_keeps_the_matrix_sorted(engine: Engine) -> None:
    first = store(engine, HOME, "first", unit(1, 0, 0))
    cache = vectors.VectorCache()
    cache.search(engine.db, "event", MODEL, HOME, unit(1, 0, 0), 10)
    # The indexer embeds a prompt and its reply together and hands them over newest first.
    later = [store(engine, HOME, f"later-{i}", unit(0, 1, i)) for i in range(3)]
    cache.add("event", MODEL, HOME, later[::-1], np.stack([unit(0, 1, i) for i in range(3)][::-1]))
    wanted = [first, *later]
    assert sorted(cache.cosines(engine.db, "event", MODEL, HOME, unit(0, 1, 0), wanted)) == wanted
    ids, _, _ = cache._snapshot(engine.db, "event", MODEL, HOME, 1)
    assert ids.tolist() == [later[-1]]  # the window holds the newest


# -- commits of another connection (a hook recording a prompt, a CLI forget) ----------------------------


@pytest.fixture
def other(tmp_path: Path, engine: Engine) -> Iterator[Engine]:
    """A second connection to the same archive file: its commits are another process's to `engine`."""
    with Engine(make_settings(tmp_path / "a.db")) as second:
        yield second


def cached(cache: vectors.VectorCache, engine: Engine) -> dict[int, list[float]]:
    hits = cache.search(engine.db, "event", MODEL, HOME, unit(1, 0, 0), 100)
    ids, rows, _ = cache._snapshot(engine.db, "event", MODEL, HOME, None)
    assert sorted(hits.ids.tolist()) == ids.tolist()
    return {int(i): [round(float(v), 6) for v in row] for i, row in zip(ids, rows, strict=True)}


def stored_rows(engine: Engine) -> dict[int, list[float]]:
    rows = engine.db.query(
        "SELECT v.event_sequence AS id, v.vector FROM event_vectors v JOIN events e ON e.sequence = v.event_sequence"
        " WHERE e.persona_id = ? AND e.project_id = ? AND v.model = ?",
        (HOME.persona_id, HOME.project_id, MODEL),
    )
    return {r["id"]: [round(float(v), 6) for v in vectors.decode(r["vector"], 3)] for r in rows}


def test_another_connections_new_events_are_appended_without_reloading(engine: Engine, other: Engine) -> None:
    store(engine, HOME, "first", unit(1, 0, 0))
    cache = vectors.VectorCache()
    cached(cache, engine)
    loaded = cache._matrices[("event", MODEL, HOME)]
    other.record(HOME, "prompt", "a prompt the hook recorded, no vector yet", "user", "Ana", session_id="s2")
    later = store(other, HOME, "second", unit(0, 1, 0))
    assert cached(cache, engine) == stored_rows(engine)
    assert later in cached(cache, engine)
    assert cache._matrices[("event", MODEL, HOME)] is loaded  # brought up to date, not read again


def test_after_another_connection_forgets_the_matrix_is_read_again(engine: Engine, other: Engine) -> None:
    keep = store(engine, HOME, "keep", unit(1, 0, 0))
    engine.record(HOME, "backlog", "embedded later by another process", "user", "Ana", session_id="s1")
    store(engine, HOME, "gone", unit(0, 1, 0))
    cache = vectors.VectorCache()
    cached(cache, engine)
    loaded = cache._matrices[("event", MODEL, HOME)]
    backlog = int(engine.db.scalar("SELECT sequence FROM events WHERE event_id = 'backlog'"))
    # The other connection forgets one event, writes another vector under an ID the matrix holds (as
    # the indexer does for the turns that carried a forgotten turn's text) and embeds an older event:
    # the vector counts alone agree, and nothing new is past the matrix's last row.
    other.forget(HOME, "gone")
    with other.db.write() as conn:
        rewritten = vectors.encode(unit(0, 0, 1))
        conn.execute("UPDATE event_vectors SET vector = ? WHERE event_sequence = ?", (rewritten, keep))
        conn.execute(
            "INSERT INTO event_vectors (event_sequence, model, dim, vector) VALUES (?, ?, 3, ?)",
            (backlog, MODEL, vectors.encode(unit(1, 1, 1))),
        )
    assert cached(cache, engine) == stored_rows(engine)
    assert cached(cache, engine)[keep] == [0.0, 0.0, 1.0]
    assert cache._matrices[("event", MODEL, HOME)] is not loaded


def test_vectors_of_older_events_written_elsewhere_are_not_missed(engine: Engine, other: Engine) -> None:
    store(engine, HOME, "first", unit(1, 0, 0))
    engine.record(HOME, "backlog", "embedded later by another process", "user", "Ana", session_id="s1")
    store(engine, HOME, "third", unit(0, 1, 0))
    cache = vectors.VectorCache()
    cached(cache, engine)
    backlog = int(engine.db.scalar("SELECT sequence FROM events WHERE event_id = 'backlog'"))
    with other.db.write() as conn:
        conn.execute(
            "INSERT INTO event_vectors (event_sequence, model, dim, vector) VALUES (?, ?, 3, ?)",
            (backlog, MODEL, vectors.encode(unit(1, 1, 1))),
        )
    assert cached(cache, engine) == stored_rows(engine)
    assert backlog in cached(cache, engine)
