"""Choosing the embedder from the settings."""

from __future__ import annotations

from ..config import Settings
from .base import Embedder


def build_embedder(settings: Settings) -> Embedder | None:
    """The configured embedder, or None for MEMLIKEHUMAN_EMBEDDER=none.

    Raises InvalidArgument when the configuration names an unknown model or a missing package.
    """
    if settings.embedder == "local":
        from .local import LocalEmbedder

        return LocalEmbedder(settings.embedder_model)
    if settings.embedder == "openai":
        from .openai_embed import build

        return build(settings.embedder_model, settings.embedder_base_url, settings.embedder_api_key, settings.timeout)
    return None
