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
from typing import Any

from ..records import Scope

_WORD = re.compile(r"\w+")
# Up to this many marks are looked up one by one; more are matched in one pass over the scope's memories.
_FEW = 8
# A mark longer than this is looked up by its start (SQLite refuses LIKE patterns of 50,000 bytes).
_PATTERN_CHARS = 100
# A mark found as a substring in this many events without being one of their words counts as held.
_HELD_ROWS = 200
# What may stand before the first word of a sentence, a line or a quotation.
_OPENERS = frozenset("\n.!?:;\"'“”‘’«»([{<>*#-–—|)]…¿¡。！？")
# Dates are an extractor's own words (it writes the event's date into memories): never marks.
_DATE_WORDS = frozenset(
    "January February March April June July August September October November December"
    " Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
)
_YEAR = re.compile(r"(?:19|20)\d\d")


def carried(conn: Any, scope: Scope, gone: Sequence[str], events: Iterable[int], memories: Iterable[int]) -> list[int]:
    """Rowids of the scope's memories of later events that name a mark only the forgotten texts held.

    ``gone``: the texts of the events being forgotten, whose sequences are ``events``; ``memories``:
    the rowids being forgotten with them.
    """
    skipped = set(events)
    if not skipped:
        return []
    # The memories first: most marks are in none, and then no event needs to be read for them.
    holders = _holders(conn, scope, marks(gone), set(memories), min(skipped))
    return sorted(
        {rowid for mark, rowids in holders.items() if not _held(conn, scope, mark, skipped) for rowid in rowids}
    )


def names_gone(conn: Any, scope: Scope, marks: set[str], content: str, subject: str | None) -> bool:
    """Whether a memory's content (with its case) or subject (in any case) names one of the forgotten
    texts' ``marks`` that no surviving record event holds (called after those events were deleted)."""
    words = set(_WORD.findall(content))
    folded = {w.casefold() for w in _WORD.findall(subject or "")}
    named = {mark for mark in marks if mark in words or mark.casefold() in folded}
    return any(not _held(conn, scope, mark, set()) for mark in named)


def _holders(conn: Any, scope: Scope, marks: set[str], skipped: set[int], after: int) -> dict[str, set[int]]:
    """Per mark, the memories of the scope's events after ``after`` that hold it as a word, with its case
    (a subject, stored casefolded, in any case).

    A few marks are looked up one by one; many (a forgotten file read) in one pass over the scope.
    """
    select = (
        "SELECT id, content, coalesce(gist, '') AS gist, coalesce(subject, '') AS subject FROM memories"
        " WHERE persona_id = ? AND project_id = ? AND event_sequence > ?"
    )
    where = (scope.persona_id, scope.project_id, after)
    if len(marks) > _FEW:
        rows = list(conn.execute(select, where))
    else:
        like = " AND (content LIKE ? OR gist LIKE ? OR subject LIKE ?)"
        rows = [
            row
            for mark in marks
            for row in conn.execute(select + like, (*where, *_patterns(mark, mark, mark.casefold())))
        ]
    found: dict[str, set[int]] = {}
    for row in rows:
        if row["id"] in skipped:
            continue
        words = set(_WORD.findall(f"{row['content']} {row['gist']}"))
        folded = {w.casefold() for w in _WORD.findall(row["subject"])}
        for mark in marks:
            if mark in words or mark.casefold() in folded:
                found.setdefault(mark, set()).add(row["id"])
    return found


def _held(conn: Any, scope: Scope, mark: str, skipped: set[int]) -> bool:
    """Whether a surviving record event of the scope holds the mark as a word of its text or its
    speaker (source), in any case. Correction events do not count: one may restate a carried memory."""
    # LIKE folds ASCII case in SQLite and no case in PostgreSQL, lower() folds ASCII only in both (the
    # archive's C collation): the forms as written, lower and upper, and any ASCII mix through lower().
    forms = sorted({mark, mark.lower(), mark.upper()})
    like = " OR ".join(["text LIKE ?", "source LIKE ?"] * len(forms) + ["lower(text) LIKE ?", "lower(source) LIKE ?"])
    rows = conn.execute(
        f"SELECT sequence, text, source FROM events WHERE persona_id = ? AND project_id = ? AND kind = 'record'"
        f" AND ({like}) LIMIT {_HELD_ROWS}",
        (scope.persona_id, scope.project_id, *_patterns(*(f for f in [*forms, mark.lower()] for _ in (0, 1)))),
    ).fetchall()
    folded = mark.casefold()
    found = any(
        row["sequence"] not in skipped
        and folded in {w.casefold() for w in _WORD.findall(f"{row['text']} {row['source']}")}
        for row in rows
    )
    return found or len(rows) >= _HELD_ROWS  # a substring of that many events is common: kept


def _patterns(*marks: str) -> tuple[str, ...]:
    return tuple(f"%{mark[:_PATTERN_CHARS]}%" for mark in marks)


def marks(texts: Sequence[str]) -> set[str]:
    """Numbers (a word holding a digit) and names (a capitalized word that does not open a sentence),
    of four or more characters; not dates."""
    found = set()
    for text in texts:
        for match in _WORD.finditer(text):
            word = match.group()
            if len(word) < 4 or word in _DATE_WORDS or _YEAR.fullmatch(word):
                continue
            if any(c.isdigit() for c in word) or (word[0].isupper() and not _opens(text, match.start())):
                found.add(word)
    return found


def _opens(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens a sentence or a line (where any word is capitalized)."""
    before = text[:start].rstrip(" \t\u00a0")
    return not before or before[-1] in _OPENERS
