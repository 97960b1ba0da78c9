"""The markers around everything a hook injects, so that it is never recorded back.

A host may copy injected context into the prompt it later hands to a hook (Codex appends hook
context to the user's message; a user may paste it), and transcripts keep it. Recording that text
would make memories re-ingest themselves, so every hook strips marked blocks before it records.
Stored text cannot forge or close a block: marker look-alikes inside injected text are defused.
"""

from __future__ import annotations

import re

OPEN = "<memlikehuman-context>"
CLOSE = "</memlikehuman-context>"
_BLOCK = re.compile(r"<memlikehuman-context>.*?(?:</memlikehuman-context>|\Z)", re.DOTALL)
_LOOKALIKE = re.compile(r"<(/?)memlikehuman-context", re.IGNORECASE)


def defuse(text: str) -> str:
    """Text with every marker look-alike broken (`<` becomes `‹`), safe to put inside a block."""
    return _LOOKALIKE.sub(lambda m: f"‹{m.group(1)}memlikehuman-context", text)


def wrap(text: str) -> str:
    """One injected block: the markers around the defused text."""
    return f"{OPEN}\n{defuse(text)}\n{CLOSE}"


def strip(text: str) -> str:
    """Text without any injected block (an unclosed block runs to the end), trimmed."""
    return _BLOCK.sub("", text).strip()
