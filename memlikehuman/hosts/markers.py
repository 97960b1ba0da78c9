"""The markers around everything a hook injects, so that it is never recorded back.

A host may copy injected context into the prompt it later hands to a hook (Codex appends hook
context to the user's message; Gemini CLI puts it in front, inside <hook_context> and HTML-escaped;
a user may paste it), and transcripts keep it. Recording that text
would make memories re-ingest themselves, so every hook strips marked blocks before it records.
Stored text cannot forge or close a block: marker look-alikes inside injected text are defused.
"""

from __future__ import annotations

import re

OPEN = "<memlikehuman-context>"
CLOSE = "</memlikehuman-context>"
# "<" and ">" as a host may echo them: raw, HTML-escaped (Gemini CLI), as character references, JSON-escaped.
_LT = r"(?:<|&lt;|&#0*60;|&#x0*3c;|\\u003c)"
_GT = r"(?:>|&gt;|&#0*62;|&#x0*3e;|\\u003e)"
_BLOCK = re.compile(
    rf"{_LT}memlikehuman-context{_GT}.*?(?:{_LT}/memlikehuman-context{_GT}|\Z)", re.DOTALL | re.IGNORECASE
)
# Gemini CLI hands BeforeAgent the prompt with earlier hook context in front, each in <hook_context>.
_LEADING_HOOK_CONTEXT = re.compile(r"\A(?:\s*<hook_context>.*?</hook_context>)+", re.DOTALL)
# A look-alike in any form `strip` reads as a marker (raw, HTML-escaped, a character reference, JSON).
_LOOKALIKE = re.compile(rf"{_LT}(/?)memlikehuman-context", re.IGNORECASE)


def defuse(text: str) -> str:
    """Text with every marker look-alike broken (its `<`, in whatever escaping, becomes `‹`), safe to put
    inside a block: stored text can neither open nor close one, however a host echoes it."""
    return _LOOKALIKE.sub(lambda m: f"‹{m.group(1)}memlikehuman-context", text)


def wrap(text: str) -> str:
    """One injected block: the markers around the defused text."""
    return f"{OPEN}\n{defuse(text)}\n{CLOSE}"


def strip(text: str) -> str:
    """Text without any injected block, in any escaping a host echoes it (an unclosed block runs to the
    end), and without the hook context a host put in front of it, trimmed: what the user typed."""
    return _BLOCK.sub("", _LEADING_HOOK_CONTEXT.sub("", text)).strip()
