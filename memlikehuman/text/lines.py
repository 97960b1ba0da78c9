"""A text as one short line: what the hooks quote in injected context and extractive checkpoints."""

from __future__ import annotations

LINE_CHARS = 400


def one_line(text: str, limit: int = LINE_CHARS) -> str:
    """The text's whitespace runs as single spaces, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
