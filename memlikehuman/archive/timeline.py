"""The timeline of a fact: every link between versions of a memory, in one place.

The links are columns of ``memories`` and rows of ``corrections``:

- ``supersedes`` / ``superseded_by``: the neighbours of a version in its subject's timeline;
- ``valid_to``: where a version's validity ends (the next version's ``valid_from``, or NULL: open);
- ``revoked_at``, ``revoke_reason``, ``replaced_by``: a memory corrected away, and its replacement;
- ``corrections``: which memory a correction event revoked, and why;
- ``known_from``: since when ``as_of`` sees a version (its event's time; a replacement: its original's).

Invariants, kept by every function here inside the caller's write transaction:

1. A subject's timeline is the live (not revoked) memories of one scope, category and subject,
   ordered by ``valid_from`` (ties: the later recording wins). A quoted document never supersedes
   what a user said: the category is part of the key.
2. Neighbours point at each other: ``a.superseded_by = b`` exactly when ``b.supersedes = a``, and
   then ``a.valid_to = b.valid_from``. A version with no successor is open-ended (``valid_to`` NULL),
   unless it was closed by a statement that a correction later took away (see 5).
3. A revoked memory holds no timeline links; ``replaced_by`` names its replacement while the
   correction exists. It is never made current again.
4. A correction's replacement takes its original's place: the same neighbours, the same end, and
   known since the original was known.
5. Forgetting versions closes their neighbours on the nearest surviving versions; the version before
   a forgotten replacement of a revoked original stays closed where the user's statement closed it.
6. A version an extractor names as updated is closed only if it is still open, live, of the same
   scope and category, and not newer than the new version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument
from ..records import Event, Memory
from .connection import Connection, Transaction
from .db import placeholders

if TYPE_CHECKING:
    from ..records import Candidate

FORGOTTEN_CORRECTION = (
    "its correction was forgotten with memory_forget; it stays revoked (the user said it was wrong):"
    " record the right statement again if it still matters"
)


def current_sql(alias: str = "m") -> str:
    """The live-memory predicate in SQL: not revoked and not closed (Memory.status() == "current")."""
    return f"{alias}.revoked_at IS NULL AND {alias}.valid_to IS NULL"


def status_sql(alias: str = "m") -> str:
    """Memory.status() (without as_of) in SQL: 'revoked', 'superseded' or 'current'."""
    return (
        f"CASE WHEN {alias}.revoked_at IS NOT NULL THEN 'revoked' WHEN {alias}.valid_to IS NOT NULL"
        " THEN 'superseded' ELSE 'current' END"
    )


def as_known(db: Connection, found: Mapping[int, Memory], as_of: str) -> dict[int, Memory]:
    """The memories (by row ID) as `as_of` knew them: a link to a version not yet known then is left out.

    The end (valid_to, superseded_by) shows once the version that closes it is known, even while the
    memory is still valid (a move announced before it happens); an end set by no version shows from
    when it is reached. `supersedes` shows once the version before is known (a past fact recorded later).
    """
    if not found:
        return {}
    sql = (
        "SELECT m.id, (m.valid_to IS NOT NULL AND (m.superseded_by IS NULL AND m.valid_to > ?"
        " OR s.known_from > ?)) AS end_unknown, p.known_from > ? AS start_unknown FROM memories m"
        " LEFT JOIN memories s ON s.id = m.superseded_by LEFT JOIN memories p ON p.id = m.supersedes"
        f" WHERE m.id IN ({placeholders(found)})"
    )
    out = dict(found)
    for row in db.query(sql, (as_of, as_of, as_of, *found)):
        memory = out[row["id"]]
        if row["end_unknown"]:
            memory = replace(memory, valid_to=None, superseded_by=None)
        if row["start_unknown"]:
            memory = replace(memory, supersedes=None)
        out[row["id"]] = memory
    return out


# -- a new version (extraction) ----------------------------------------------------------------


def _versions(conn: Transaction, event: Event, rowid: int, subject: str) -> list[Any]:
    """The other live versions of a subject: same scope, same category, oldest first (no event memory:
    something that happened is never ended by what happened next)."""
    return list(
        conn.execute(
            "SELECT id, valid_from FROM memories WHERE persona_id = ? AND project_id = ? AND category = ?"
            " AND subject = ? AND id != ? AND revoked_at IS NULL AND kind != 'event' ORDER BY valid_from, id",
            (event.persona_id, event.project_id, event.category, subject, rowid),
        )
    )


def _close(conn: Transaction, older: int, newer: int, at: str) -> None:
    """End `older`'s validity at `at`, when `newer` takes over; link the two both ways."""
    conn.execute("UPDATE memories SET valid_to = ?, superseded_by = ? WHERE id = ?", (at, newer, older))
    conn.execute("UPDATE memories SET supersedes = ? WHERE id = ?", (older, newer))


def insert_version(conn: Transaction, event: Event, rowid: int, item: Candidate) -> None:
    """Put a new memory into the timeline of its subject, closing validity windows (invariants 1, 2).

    The version before the new one ends where the new one starts; a version after it (the new fact
    dates from earlier than what is known) ends the new one's window.
    """
    if item.subject is None:
        return
    versions = _versions(conn, event, rowid, item.subject)
    before = [row for row in versions if row["valid_from"] <= item.valid_from]
    after = [row for row in versions if row["valid_from"] > item.valid_from]
    if before:
        _close(conn, before[-1]["id"], rowid, item.valid_from)
    if after:
        _close(conn, rowid, after[0]["id"], after[0]["valid_from"])


def close_target(conn: Transaction, event: Event, rowid: int, target: int, valid_from: str) -> None:
    """Close a memory the extractor named (by alias) as updated by the new one, if still open (invariant 6).

    The two are linked both ways only when the new one has no earlier version yet (its subject's
    timeline may have given it one): a link one way only breaks the timeline, so the target is then
    closed without a successor link, as a revoked original's version before it is.
    """
    before = conn.execute("SELECT supersedes FROM memories WHERE id = ?", (rowid,)).fetchone()["supersedes"]
    link = before is None or before == target
    conn.execute(
        "UPDATE memories SET valid_to = ?, superseded_by = ? WHERE id = ? AND persona_id = ? AND project_id = ?"
        f" AND category = ? AND {current_sql('memories')} AND valid_from <= ?",
        (valid_from, rowid if link else None, target, event.persona_id, event.project_id, event.category, valid_from),
    )
    if conn.changes() and link:
        conn.execute("UPDATE memories SET supersedes = ? WHERE id = ?", (target, rowid))


# -- a correction --------------------------------------------------------------------------------


def check_window(conn: Transaction, original: Memory, valid_from: str) -> None:
    """A replacement's validity start must keep the subject timeline in order (invariant 1)."""
    before = _valid_from(conn, original.supersedes)
    after = _valid_from(conn, original.superseded_by)
    if before is not None and valid_from < before:
        raise InvalidArgument(
            f"valid_at {valid_from} is before {before}, when the previous version of this fact"
            f" ({original.supersedes}) started: give a later valid_at or correct that version instead"
        )
    if after is not None and valid_from >= after:
        raise InvalidArgument(
            f"valid_at {valid_from} is not before {after}, when the next version of this fact"
            f" ({original.superseded_by}) started: give an earlier valid_at or correct that version instead"
        )


def _valid_from(conn: Transaction, memory_id: str | None) -> str | None:
    if memory_id is None:
        return None
    row = conn.execute("SELECT valid_from FROM memories WHERE memory_id = ?", (memory_id,)).fetchone()
    return None if row is None else str(row["valid_from"])


def link_correction(conn: Transaction, event_sequence: int, original: int, reason: str) -> None:
    """Record that correction event ``event_sequence`` revoked memory ``original``."""
    conn.execute(
        "INSERT INTO corrections (event_sequence, original_id, reason) VALUES (?, ?, ?)",
        (event_sequence, original, reason),
    )


def take_place(conn: Transaction, old: int, new: int) -> None:
    """Put memory ``new`` where ``old`` stands in its subject timeline; ``old`` keeps no links (invariant 4).

    Predecessors closed by ``old`` are now closed at ``new``'s start; ``new`` ends where ``old``
    ended. The links are found from both sides, so a half-linked timeline is repaired too.
    """
    row = conn.execute("SELECT supersedes, superseded_by, valid_to FROM memories WHERE id = ?", (old,)).fetchone()
    start = conn.execute("SELECT valid_from FROM memories WHERE id = ?", (new,)).fetchone()["valid_from"]
    conn.execute(
        "UPDATE memories SET supersedes = ?, superseded_by = ?, valid_to = ? WHERE id = ?",
        (row["supersedes"], row["superseded_by"], row["valid_to"], new),
    )
    conn.execute("UPDATE memories SET superseded_by = ?, valid_to = ? WHERE superseded_by = ?", (new, start, old))
    conn.execute("UPDATE memories SET supersedes = ? WHERE supersedes = ?", (new, old))
    conn.execute("UPDATE memories SET supersedes = NULL, superseded_by = NULL WHERE id = ?", (old,))


def revoke(conn: Transaction, rowid: int, reason: str, replacement: int, at: str) -> None:
    """Mark a memory corrected away by ``replacement``; it leaves the timeline (invariant 3)."""
    conn.execute(
        "UPDATE memories SET revoked_at = ?, revoke_reason = ?, replaced_by = ?, supersedes = NULL,"
        " superseded_by = NULL WHERE id = ?",
        (at, reason, replacement, rowid),
    )


def settle_known_from(conn: Transaction) -> None:
    """Fill ``known_from`` where it is missing (imported rows): the event's time, and for a correction's
    replacement the time its original became known (invariant 4). A chain of corrections is followed
    one step per pass."""
    conn.execute(
        "UPDATE memories SET known_from = (SELECT occurred_at FROM events WHERE sequence = memories.event_sequence)"
        " WHERE known_from IS NULL"
    )
    original = (
        "(SELECT o.known_from FROM corrections c JOIN memories o ON o.id = c.original_id"
        " WHERE c.event_sequence = memories.event_sequence)"
    )
    while True:
        conn.execute(
            f"UPDATE memories SET known_from = {original} WHERE event_sequence IN"
            f" (SELECT event_sequence FROM corrections) AND known_from IS DISTINCT FROM {original}"
        )
        if not conn.changes():
            return


# -- forgetting ------------------------------------------------------------------------------------


def release_originals(conn: Transaction, deleted: dict[int, str]) -> set[int]:
    """Surviving originals whose correction goes stay revoked; return the places their replacements held.

    An original is not made current again: the user said it was wrong, and forgetting the
    correction's text does not make it right (recall never shows a revoked memory). Like every
    revoked memory it holds no timeline links. The correction's reason is part of what is
    forgotten, so a fixed sentence replaces it. The memories that held those places are returned,
    so that unlinking them leaves the version before them closed where the user's statement closed it.
    """
    gone = list(deleted)
    sql = f"SELECT id, replaced_by FROM memories WHERE replaced_by IN ({placeholders(gone)})"
    rows = conn.execute(sql, gone).fetchall()
    places: set[int] = set()
    for row in rows:
        if row["id"] in deleted:
            continue
        places.add(_place_holder(conn, row["replaced_by"]))
        conn.execute(
            "UPDATE memories SET revoke_reason = ?, replaced_by = NULL WHERE id = ?", (FORGOTTEN_CORRECTION, row["id"])
        )
    return places


def release(conn: Transaction, originals: Sequence[int]) -> None:
    """Originals whose correction is forgotten while its replacement stays (another event states it):
    they stay revoked, without a replacement, and a fixed sentence replaces the correction's reason."""
    if originals:
        conn.execute(
            f"UPDATE memories SET revoke_reason = ?, replaced_by = NULL WHERE id IN ({placeholders(originals)})",
            (FORGOTTEN_CORRECTION, *originals),
        )


def _place_holder(conn: Transaction, rowid: int) -> int:
    """The memory that now stands in the timeline for ``rowid``: follow replacements to the live one."""
    seen = {rowid}
    while True:
        row = conn.execute("SELECT replaced_by FROM memories WHERE id = ?", (rowid,)).fetchone()
        if row is None or row["replaced_by"] is None or row["replaced_by"] in seen:
            return rowid
        rowid = row["replaced_by"]
        seen.add(rowid)


def unlink(conn: Transaction, rowid: int, deleted: dict[int, str], keep_closed: bool = False) -> None:
    """Take a memory out of its timeline: its neighbours close on the nearest surviving versions (invariant 5).

    With nothing after it, the version before becomes open-ended again, unless ``keep_closed``
    (the memory stood in for a revoked original): then it stays closed where it was.
    """
    after = _nearest(conn, rowid, "superseded_by", deleted)
    before = _nearest(conn, rowid, "supersedes", deleted)
    if after is None and keep_closed:
        conn.execute("UPDATE memories SET superseded_by = NULL WHERE superseded_by = ?", (rowid,))
    elif after is None:
        conn.execute("UPDATE memories SET superseded_by = NULL, valid_to = NULL WHERE superseded_by = ?", (rowid,))
    else:
        conn.execute(
            "UPDATE memories SET superseded_by = ?, valid_to = (SELECT valid_from FROM memories WHERE id = ?)"
            " WHERE superseded_by = ?",
            (after, after, rowid),
        )
    conn.execute("UPDATE memories SET supersedes = ? WHERE supersedes = ?", (before, rowid))
    conn.execute("UPDATE memories SET supersedes = NULL, superseded_by = NULL WHERE id = ?", (rowid,))


def _nearest(conn: Transaction, rowid: int, link: str, deleted: dict[int, str]) -> int | None:
    """Follow ``link`` (supersedes or superseded_by) past memories being deleted."""
    seen = {rowid}
    current: int | None = rowid
    while current is not None:
        row = conn.execute(f"SELECT {link} AS next FROM memories WHERE id = ?", (current,)).fetchone()
        current = None if row is None else row["next"]
        if current is None or current in seen:
            return None
        if current not in deleted:
            return current
        seen.add(current)
    return None


# -- importing: links by memory ID, resolved once every memory of the file is in ---------------------

_LINK_CHECK = """
SELECT l.line, l.memory_id, l.target FROM (
    SELECT line, memory_id, supersedes AS target FROM temp.import_links WHERE supersedes IS NOT NULL
    UNION ALL SELECT line, memory_id, superseded_by FROM temp.import_links WHERE superseded_by IS NOT NULL
    UNION ALL SELECT line, memory_id, replaced_by FROM temp.import_links WHERE replaced_by IS NOT NULL
) l
JOIN memories s ON s.memory_id = l.memory_id
LEFT JOIN memories t ON t.memory_id = l.target AND t.persona_id = s.persona_id AND t.project_id = s.project_id
WHERE t.id IS NULL ORDER BY l.line LIMIT 1
"""
_LINK_UPDATE = """
UPDATE memories SET
    supersedes = (SELECT t.id FROM memories t WHERE t.memory_id = l.supersedes),
    superseded_by = (SELECT t.id FROM memories t WHERE t.memory_id = l.superseded_by),
    replaced_by = (SELECT t.id FROM memories t WHERE t.memory_id = l.replaced_by)
FROM temp.import_links l WHERE memories.memory_id = l.memory_id
"""


def stage_links(conn: Transaction) -> None:
    """Start collecting an import's links (they may point forward in the file)."""
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS import_links"
        " (memory_id TEXT PRIMARY KEY, line INTEGER, supersedes TEXT, superseded_by TEXT, replaced_by TEXT)"
    )


def stage_link(conn: Transaction, memory_id: str, line: int, links: tuple[str | None, str | None, str | None]) -> None:
    """Keep the (supersedes, superseded_by, replaced_by) memory IDs of one imported memory."""
    if any(links):
        conn.execute("INSERT INTO temp.import_links VALUES (?, ?, ?, ?, ?)", (memory_id, line, *links))


@dataclass(frozen=True)
class UnresolvedLink:
    """A staged link of an import whose target is neither imported nor in the same scope."""

    line: int  # of the import file
    memory_id: str
    target: str  # the memory ID it links to


def unresolved_link(conn: Transaction) -> UnresolvedLink | None:
    """The first staged link (by line) whose target is neither imported nor in the same scope."""
    row = conn.execute(_LINK_CHECK).fetchone()
    return None if row is None else UnresolvedLink(row["line"], row["memory_id"], row["target"])


def apply_links(conn: Transaction) -> None:
    """Resolve the staged links to row IDs, then settle known_from."""
    conn.execute(_LINK_UPDATE)
    settle_known_from(conn)


def drop_links(conn: Transaction) -> None:
    conn.execute("DROP TABLE temp.import_links")
