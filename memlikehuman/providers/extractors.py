"""The extractor factory: MEMLIKEHUMAN_EXTRACTOR -> the provider that asks a model for memories."""

from __future__ import annotations

from ..config import Settings
from .base import Extractor


def build_extractor(settings: Settings) -> Extractor | None:
    """The configured extractor; None for `none`, and for `sampling`, whose provider only the MCP edge
    can build (it needs the connected client: server/sampling.py). Raises InvalidArgument."""
    if settings.extractor == "openai":
        from .openai_chat import OpenAIChatExtractor  # the openai SDK is slow to import

        return OpenAIChatExtractor(
            model=settings.extractor_model,
            base_url=settings.extractor_base_url,
            api_key=settings.extractor_api_key,
            timeout=settings.timeout,
        )
    if settings.extractor == "command":
        from .command import CommandExtractor, parse_command

        preset, label = parse_command(settings.extractor_command)
        env = dict(settings.extractor_env)
        return CommandExtractor(preset, label, settings.timeout, env, settings.extractor_env_names)
    return None
