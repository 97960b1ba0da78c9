"""Provider interfaces: one method each; capabilities are class attributes.

A provider raises ``errors.Unavailable`` when the service cannot be reached in time (connection
refused, timeout, HTTP 5xx/429): the caller keeps the event pending and may retry later. Any
answer it does get is returned as is; judging it is the caller's job.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np
else:
    from .lazy_numpy import np  # numpy stays unimported on the hooks' path


class Embedder(ABC):
    """Turns texts into L2-normalized float32 vectors."""

    #: stored with every vector; a different ID means the vectors must be rebuilt
    model_id: str = ""
    batch_size: int = 32
    needs_network: bool = False

    @abstractmethod
    def embed(self, texts: Sequence[str], kind: Literal["query", "passage"]) -> np.ndarray:
        """Return an array of shape (len(texts), dim), float32, rows of unit length."""

    def close(self) -> None:  # noqa: B027 (a remote embedder's call ends by its own timeout)
        """Stop a call still running as soon as the engine can, when the engine closes: that call and
        every later one raise Unavailable."""


class Extractor(ABC):
    """Asks a chat model for the extraction JSON (see tools.md, "Extraction response")."""

    model_id: str = ""
    #: the `extractor` label of the memories it makes ("openai:gpt-4o-mini", "sampling", "command:codex")
    label: str = ""
    needs_network: bool = True

    @abstractmethod
    def complete(self, system: str, user: str, schema: dict[str, Any]) -> str:
        """Return the model's raw answer text for the system and user messages."""

    def close(self) -> None:  # noqa: B027 (most providers hold nothing to release)
        """Release what a call still holds (a command's running process) when the engine closes."""


class Answered(Extractor):
    """An answer the model already gave (a client's answer inside an MCP 2026-07-28 call)."""

    needs_network = False

    def __init__(self, answer: str, label: str) -> None:
        self.answer, self.label, self.model_id = answer, label, label

    def complete(self, system: str, user: str, schema: dict[str, Any]) -> str:
        return self.answer
