"""Overviews of memories: what a memory is about, without the exact details. The one rule for
memory_recall (``detail``) and session_resume.

An episodic memory (kind ``event``) is shown by the extractor's `gist` when the model gave one,
else by one derived from the content: its first clause, at most 12 words, with the details that
make it exact (numbers, dates, times, amounts, and proper names after the first word) masked.
Any other memory (a fact, a preference, a plan, ...) keeps what it is about: its first clause with
names kept and only numbers masked ("The user lives in Lisbon" stays whole, a locker code goes).
The overview is always labeled and points to memory_read, so a host never mistakes it for the full
memory.
"""

from __future__ import annotations

import re

from ..records import Memory

MAX_WORDS = 12
# Memories that describe a happening: old ones are shown as overviews under detail=auto.
EPISODIC_KINDS = ("event",)
# A pattern string: re compiles it on first use (a hook that shows no gist never pays for it).
_CLAUSE_END = r"[.;:!?\u2014]\s|,\s(?:and|but|because|which|who|where|when)\s"
_MASK = "\u2026"


def overview(memory: Memory) -> str:
    """The labeled overview shown instead of an old episodic memory's exact content."""
    if memory.kind in EPISODIC_KINDS:
        gist = memory.gist or derived(memory.content)
    else:
        gist = derived(memory.content, keep_names=True)
    return f"[overview; exact details omitted: call memory_read with record_id {memory.memory_id}] {gist}"


def derived(content: str, *, keep_names: bool = False) -> str:
    """First clause, at most MAX_WORDS words, numbers (and, unless keep_names, later proper names) masked."""
    text = " ".join(content.split())
    match = re.search(_CLAUSE_END, text)
    clause = text[: match.start() + 1].rstrip(",") if match else text
    words = clause.split()
    shown = [_masked(word, first=keep_names or i == 0) for i, word in enumerate(words[:MAX_WORDS])]
    cut = len(words) > MAX_WORDS or len(clause) < len(text)
    return re.sub(rf"(?:{_MASK} )+{_MASK}", _MASK, " ".join(shown)) + (" ..." if cut else "")


def _masked(word: str, *, first: bool) -> str:
    core = word.strip(".,;:!?\"'()[]")
    if any(ch.isdigit() for ch in core):
        return _MASK
    if not first and core[:1].isupper() and core.lower() not in ("i", "i'm", "i've", "i'd", "i'll"):
        return _MASK
    return word
