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
# Up to this many marks are looked up one by one; more are matched in one pass over the scope.
_FEW = 8
# What may stand before the first word of a sentence, a line or a quotation.
_OPENERS = frozenset("\n.!?:;\"'“”‘’«»([{<>*#-–—|")


def carried(conn: Any, scope: Scope, gone: Sequence[str], events: Iterable[int], memories: Iterable[int]) -> list[int]:
    """Rowids of the scope's memories, outside ``memories``, that name a mark only ``gone`` held.

    ``events`` and ``memories``: the sequences and rowids being forgotten (their texts are ``gone``).
    """
    marks = _marks(gone)
    # The memories first: most marks are in none, and then no event needs to be read for them.
    holders = _holders(conn, scope, marks, set(memories))
    held = _held(conn, scope, set(holders), set(events))
    return sorted({rowid for mark, rowids in holders.items() if mark not in held for rowid in rowids})


def _holders(conn: Any, scope: Scope, marks: set[str], skipped: set[int]) -> dict[str, list[int]]:
    """Per mark, the scope's other memories that hold it as a word, with its case, outside their date.

    A few marks are looked up one by one; many (a forgotten file read) in one pass over the scope.
    """
    select = (
        "SELECT m.id, m.content, coalesce(m.gist, '') AS gist, coalesce(m.subject, '') AS subject,"
        " e.occurred_at FROM memories m JOIN events e ON e.sequence = m.event_sequence"
        " WHERE m.persona_id = ? AND m.project_id = ?"
    )
    pair = (scope.persona_id, scope.project_id)
    if len(marks) > _FEW:
        rows = list(conn.execute(select, pair))
    else:
        like = " AND (m.content LIKE ? OR m.gist LIKE ? OR m.subject LIKE ?)"
        rows = [row for mark in marks for row in conn.execute(select + like, (*pair, *[f"%{mark}%"] * 3))]
    found: dict[str, list[int]] = {}
    for row in rows:
        if row["id"] in skipped:
            continue
        words = {w for text in (row["content"], row["gist"], row["subject"]) for w in _WORD.findall(text)}
        for mark in (words & marks) - _date_words(row["occurred_at"]):
            if row["id"] not in found.setdefault(mark, []):
                found[mark].append(row["id"])
    return found


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


def _held(conn: Any, scope: Scope, marks: set[str], skipped: set[int]) -> set[str]:
    """The marks that a surviving event of the scope holds as a word, in any case."""
    lowered = {mark.lower(): mark for mark in marks}
    select = "SELECT sequence, text FROM events WHERE persona_id = ? AND project_id = ?"
    pair = (scope.persona_id, scope.project_id)
    if len(marks) > _FEW:
        return _holding(conn.execute(select, pair), lowered, skipped)
    held: set[str] = set()
    for low in lowered:
        held |= _holding(
            conn.execute(select + " AND lower(text) LIKE ?", (*pair, f"%{low}%")), {low: lowered[low]}, skipped
        )
    return held


def _holding(rows: Iterable[Any], lowered: dict[str, str], skipped: set[int]) -> set[str]:
    """Which of the marks (by their lower-case form) the rows' texts hold; stops when all are found."""
    held: set[str] = set()
    for row in rows:
        if row["sequence"] not in skipped:
            held.update(lowered[w] for w in {w.lower() for w in _WORD.findall(row["text"])} & lowered.keys())
            if len(held) == len(lowered):
                break
    return held


def _date_words(occurred_at: str) -> set[str]:
    """The year, month and weekday of an event's time, as an extractor may write them into a memory."""
    try:
        when = datetime.fromisoformat(occurred_at)
    except ValueError:
        return set()
    return {str(when.year), when.strftime("%B"), when.strftime("%A")}
