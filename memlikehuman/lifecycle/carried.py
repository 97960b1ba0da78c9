"""Memories of surviving events that carry what only a forgotten text said (review, issues 30/31 round).

The extractor reads a few preceding turns of the session and the scope's current memories beside
the event it extracts from, and the host's model reads the whole conversation: so a memory of a
later event may name what only a forgotten turn said ("she moved to Oslo" stored as "Emma moved to
Oslo"). Forgetting takes such memories too (not their events). A memory goes when its content, gist
or subject holds a mark of a forgotten text, matched with its case, that no surviving event of the
scope holds in any case and that is not part of the memory's own event's date (an extractor writes
the header's year and month into a memory). A mark is a name or a number: a word of four or more
characters that holds a digit, or is capitalized where it does not open a sentence or a line (there
any word is, and "User" or "Reason" would take every memory with them). A name that only ever opens
a sentence of the forgotten text is missed. A mark that another event still holds is no trace of
the forgotten text, so the memory stays.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from ..records import Scope

_WORD = re.compile(r"\w+")
# What may stand before the first word of a sentence, a line or a quotation.
_OPENERS = frozenset("\n.!?:;\"'“”‘’«»([{<>*#-–—|")


def carried(conn: Any, scope: Scope, gone: Sequence[str], events: Iterable[int], memories: Iterable[int]) -> list[int]:
    """Rowids of the scope's memories, outside ``memories``, that name a mark only ``gone`` held.

    ``events`` and ``memories``: the sequences and rowids being forgotten (their texts are ``gone``).
    """
    skipped_events, skipped_memories = set(events), set(memories)
    found: set[int] = set()
    for mark in sorted(_marks(gone)):
        # The memories first: most marks are in none, and then no event needs to be read for them.
        holders = [rowid for rowid in _holders(conn, scope, mark) if rowid not in skipped_memories]
        if holders and not _held(conn, scope, mark, skipped_events):
            found.update(holders)
    return sorted(found)


def _holders(conn: Any, scope: Scope, mark: str) -> list[int]:
    """The scope's memories that hold the mark as a word, with its case, outside their event's date."""
    rows = conn.execute(
        "SELECT m.id, m.content, coalesce(m.gist, '') AS gist, coalesce(m.subject, '') AS subject,"
        " e.occurred_at FROM memories m JOIN events e ON e.sequence = m.event_sequence"
        " WHERE m.persona_id = ? AND m.project_id = ? AND (m.content LIKE ? OR m.gist LIKE ? OR m.subject LIKE ?)",
        (scope.persona_id, scope.project_id, *[f"%{mark}%"] * 3),
    )
    return [
        row["id"]
        for row in rows
        if mark in {w for text in (row["content"], row["gist"], row["subject"]) for w in _WORD.findall(text)}
        and mark.lower() not in _date_words(row["occurred_at"])
    ]


def _marks(texts: Sequence[str]) -> set[str]:
    """Numbers (a word holding a digit) and names (a capitalized word that does not open a sentence)."""
    found = set()
    for text in texts:
        for match in _WORD.finditer(text):
            word = match.group()
            if len(word) < 4:
                continue
            if any(c.isdigit() for c in word) or (word[0].isupper() and not _opens(text, match.start())):
                found.add(word)
    return found


def _opens(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens a sentence or a line (where any word is capitalized)."""
    before = text[:start].rstrip(" \t")
    return not before or before[-1] in _OPENERS


def _held(conn: Any, scope: Scope, mark: str, skipped: set[int]) -> bool:
    """Whether a surviving event of the scope holds the mark as a word, in any case."""
    lowered = mark.lower()
    rows = conn.execute(
        "SELECT sequence, text FROM events WHERE persona_id = ? AND project_id = ? AND lower(text) LIKE ?",
        (scope.persona_id, scope.project_id, f"%{lowered}%"),
    )
    return any(
        row["sequence"] not in skipped and lowered in {w.lower() for w in _WORD.findall(row["text"])} for row in rows
    )


def _date_words(occurred_at: str) -> set[str]:
    """The year, month and weekday of an event's time, as an extractor may write them into a memory."""
    try:
        when = datetime.fromisoformat(occurred_at)
    except ValueError:
        return set()
    return {str(when.year), when.strftime("%B").lower(), when.strftime("%A").lower()}
