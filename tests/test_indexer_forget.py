"""A forget that commits while the indexer embeds a batch (read before, written after): no vector is
written from a passage that carried the forgotten text, nor for the forgotten event itself."""

from __future__ import annotations

from pathlib import Path

from conftest import make_settings

from memlikehuman.engine import Engine
from memlikehuman.index import indexer, vectors
from memlikehuman.providers.local import LocalEmbedder
from memlikehuman.records import Scope

HOME = Scope("ana", "home")
SECRET = "my secret password is hunter2"


def test_a_forget_during_embedding_leaves_no_vector_made_from_the_forgotten_text(tmp_path: Path) -> None:
    embedder = LocalEmbedder()
    cache = vectors.VectorCache()
    with Engine(make_settings(tmp_path / "a.db", MEMLIKEHUMAN_EMBEDDER="none")) as engine:
        engine.record(HOME, "x", SECRET, "user", "alice", session_id="s1")
        engine.record(HOME, "d", "ok, noted", "assistant", "bob", session_id="s1")
        top = int(engine.db.scalar("SELECT max(sequence) FROM events"))
        batch = indexer._select(engine.db, "event", embedder.model_id, 0, top, 64, any_model=True)
        # The reply's passage carries the turn before it: the secret.
        assert any(SECRET in (row["previous"] or "") for row in batch.rows)
        engine.forget(HOME, "x")  # commits while the batch is being embedded
        assert indexer._store(engine.db, cache, embedder, batch) == 0
        assert engine.db.scalar("SELECT count(*) FROM event_vectors") == 0
        # The next walk makes the reply's vector from what is there now.
        again = indexer._select(engine.db, "event", embedder.model_id, 0, top, 64, any_model=True)
        assert [row["previous"] for row in again.rows] == [None]
        assert indexer._store(engine.db, cache, embedder, again) == 1
