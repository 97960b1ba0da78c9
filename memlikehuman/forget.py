"""memory_forget: delete an event and everything derived from it, leaving no readable trace.

What goes, in one write transaction: the source event; every memory derived from it; every
correction event of those memories and what it derived, recursively; their cues, full-text rows
and vectors (vectors and cues by ON DELETE CASCADE, the FTS5 rows explicitly, terms included).
What changes: surviving memories are re-linked (an original whose correction is forgotten stays
revoked, and the version before it stays closed; a version whose successor is forgotten is valid
again until the next surviving version, or open-ended);
the next events of the session are re-indexed, because their full-text ``context`` column holds the
tail of the forgotten text; every checkpoint of the scope is invalidated and loses its saved state.

Then the write-ahead log is checkpointed with TRUNCATE, so the old page images that still hold the
text leave the -wal file (see ``scrub`` for what happens when another process blocks that).
"""

from __future__ import annotations

import logging
import mmap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from . import fulltext, memories, residue, validate
from .correct import invalidate_checkpoints
from .db import Database
from .errors import Conflict, NotFound
from .records import Scope

log = logging.getLogger("memlikehuman")

# How long the WAL truncation waits for other connections' read transactions to end.
SCRUB_TIMEOUT_MS = 5_000


@dataclass(frozen=True)
class ForgetResult:
    deleted_event_ids: tuple[str, ...]
    deleted_memory_ids: tuple[str, ...]
    invalidated_checkpoints: int
    # Internal row IDs, for in-memory caches: deleted events and memories, and surviving events
    # whose vector was dropped because it embedded the forgotten text as context.
    event_sequences: tuple[int, ...] = ()
    memory_rowids: tuple[int, ...] = ()
    reembed_sequences: tuple[int, ...] = ()
    # False when another connection kept the WAL from being truncated within SCRUB_TIMEOUT_MS.
    scrubbed: bool = True


NOT_SCRUBBED = (
    "another process kept the write-ahead log busy: old page images of the deleted text stay in the"
    " -wal file until its next checkpoint (the next forget, or when the last connection closes),"
    " and stale copies in unused space of the database file until the next forget"
)


@dataclass(frozen=True)
class Preview:
    """What ``forget`` would delete now, and how many checkpoints it would invalidate."""

    record_id: str
    event_ids: tuple[str, ...]
    memory_ids: tuple[str, ...]
    checkpoint_ids: tuple[str, ...]


@dataclass(frozen=True)
class _Plan:
    events: dict[int, str]  # sequence -> event_id, in the order they were reached
    memories: dict[int, str]  # rowid -> memory_id


def preview(db: Database, scope: Scope, record_id: str) -> Preview:
    """What ``forget(db, scope, record_id)`` would delete, read in one snapshot; changes nothing.

    Raises InvalidArgument for a bad ID and NotFound when the record is not in this scope.
    """
    scope = Scope(*validate.scope(scope.persona_id, scope.project_id))
    validate.identifier(record_id, "record_id", max_len=256)
    with db.read() as conn:
        plan = _plan(conn, _root(db, scope, record_id))
        checkpoints = db.query(
            "SELECT checkpoint_id FROM checkpoints WHERE persona_id = ? AND project_id = ? AND invalidated_at IS NULL"
            " ORDER BY id",
            (scope.persona_id, scope.project_id),
        )
    return Preview(
        record_id=record_id,
        event_ids=tuple(plan.events.values()),
        memory_ids=tuple(plan.memories[rowid] for rowid in sorted(plan.memories)),
        checkpoint_ids=tuple(row["checkpoint_id"] for row in checkpoints),
    )


def forget(db: Database, scope: Scope, record_id: str, *, expected: Preview | None = None) -> ForgetResult:
    """Delete the record's source event and everything connected to it; then scrub the WAL.

    With ``expected``, deletes only if the same events and memories would go (else Conflict).
    Raises InvalidArgument for a bad ID and NotFound when the record is not (or no longer) in this scope.
    """
    scope = Scope(*validate.scope(scope.persona_id, scope.project_id))
    validate.identifier(record_id, "record_id", max_len=256)
    with db.write() as conn:
        plan = _plan(conn, _root(db, scope, record_id))
        if expected is not None:
            _check_expected(plan, expected)
        dependents = _context_dependents(conn, plan)
        gone = _texts(conn, plan)
        # Full-text rows go first, while the values they were built from are all still stored.
        _unindex(conn, plan, dependents)
        held = _release_originals(conn, plan)
        for rowid in plan.memories:
            _unlink(conn, rowid, plan.memories, keep_closed=rowid in held)
        _delete(conn, plan)
        for sequence in dependents:
            fulltext.index_event(conn, sequence)
        # Their vectors embedded the forgotten text as context too; the indexer makes new ones.
        conn.execute(f"DELETE FROM event_vectors WHERE event_sequence IN ({_marks(dependents)})", dependents)
        invalidated = invalidate_checkpoints(conn, scope, "records were forgotten (memory_forget)", wipe_state=True)
    return ForgetResult(
        deleted_event_ids=tuple(plan.events.values()),
        deleted_memory_ids=tuple(plan.memories[rowid] for rowid in sorted(plan.memories)),
        invalidated_checkpoints=invalidated,
        event_sequences=tuple(plan.events),
        memory_rowids=tuple(sorted(plan.memories)),
        reembed_sequences=tuple(dependents),
        scrubbed=scrub(db) and _rewrite_stale_pages(db, gone),
    )


def _check_expected(plan: _Plan, expected: Preview) -> None:
    if set(plan.events.values()) != set(expected.event_ids) or set(plan.memories.values()) != set(expected.memory_ids):
        raise Conflict(
            f"what forgetting {expected.record_id} deletes changed since its preview (a correction or a new memory"
            " arrived): nothing was deleted; look at the new preview and confirm again"
        )


def _root(db: Database, scope: Scope, record_id: str) -> int:
    if record_id.startswith(memories.MEMORY_PREFIX):
        try:
            return memories.find(db, scope, record_id).event_sequence
        except NotFound:
            raise NotFound(
                f"no memory {record_id!r} in persona {scope.persona_id!r}, project {scope.project_id!r}:"
                " it may have been forgotten already; check the ID and the scope"
            ) from None
    sequence = db.scalar(
        "SELECT sequence FROM events WHERE event_id = ? AND persona_id = ? AND project_id = ?",
        (record_id, scope.persona_id, scope.project_id),
    )
    if sequence is None:
        raise NotFound(
            f"no event {record_id!r} in persona {scope.persona_id!r}, project {scope.project_id!r}:"
            " it may have been forgotten already; check the ID and the scope"
        )
    return int(sequence)


def _plan(conn: Any, root: int) -> _Plan:
    """The closure: events, their memories, the corrections of those memories, and so on."""
    found_events: dict[int, str] = {}
    found_memories: dict[int, str] = {}
    frontier = [root]
    while frontier:
        marks = _marks(frontier)
        for row in conn.execute(f"SELECT sequence, event_id FROM events WHERE sequence IN ({marks})", frontier):
            found_events.setdefault(row["sequence"], row["event_id"])
        new_memories = {
            row["id"]: row["memory_id"]
            for row in conn.execute(
                f"SELECT id, memory_id FROM memories WHERE event_sequence IN ({marks}) ORDER BY id", frontier
            )
        }
        found_memories.update(new_memories)
        ids = list(new_memories)
        frontier = [
            row["event_sequence"]
            for row in conn.execute(
                f"SELECT event_sequence FROM corrections WHERE original_id IN ({_marks(ids)}) ORDER BY event_sequence",
                ids,
            )
            if row["event_sequence"] not in found_events
        ]
    return _Plan(found_events, found_memories)


def _marks(values: Iterable[Any]) -> str:
    return ",".join("?" for _ in values)


FORGOTTEN_CORRECTION = (
    "its correction was forgotten with memory_forget; it stays revoked (the user said it was wrong):"
    " record the right statement again if it still matters"
)


def _release_originals(conn: Any, plan: _Plan) -> set[int]:
    """Surviving originals whose correction goes stay revoked; return the places their replacements held.

    An original is not made current again: the user said it was wrong, and forgetting the
    correction's text does not make it right (recall never shows a revoked memory). Like every
    revoked memory it holds no timeline links. The correction's reason is part of what is
    forgotten, so a fixed sentence replaces it. The memories that held those places are returned,
    so that unlinking them leaves the version before them closed where the user's statement closed it.
    """
    deleted = list(plan.memories)
    rows = conn.execute(
        f"SELECT id, replaced_by FROM memories WHERE replaced_by IN ({_marks(deleted)})", deleted
    ).fetchall()
    places: set[int] = set()
    for row in rows:
        if row["id"] in plan.memories:
            continue
        places.add(_place_holder(conn, row["replaced_by"]))
        conn.execute(
            "UPDATE memories SET revoke_reason = ?, replaced_by = NULL WHERE id = ?", (FORGOTTEN_CORRECTION, row["id"])
        )
    return places


def _place_holder(conn: Any, rowid: int) -> int:
    """The memory that now stands in the timeline for ``rowid``: follow replacements to the live one."""
    seen = {rowid}
    while True:
        row = conn.execute("SELECT replaced_by FROM memories WHERE id = ?", (rowid,)).fetchone()
        if row is None or row["replaced_by"] is None or row["replaced_by"] in seen:
            return rowid
        rowid = row["replaced_by"]
        seen.add(rowid)


def _unlink(conn: Any, rowid: int, deleted: dict[int, str], keep_closed: bool = False) -> None:
    """Take a memory out of its timeline: its neighbours close on the nearest surviving versions.

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


def _nearest(conn: Any, rowid: int, link: str, deleted: dict[int, str]) -> int | None:
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


def _context_dependents(conn: Any, plan: _Plan) -> list[int]:
    """Surviving events whose full-text ``context`` holds the tail of a forgotten record event.

    An event's context is the previous record event of its session, so after a forgotten record
    event that is every later event up to and including the next surviving record event.
    """
    gone = list(plan.events)
    forgotten = conn.execute(
        f"SELECT sequence, persona_id, project_id, session_id FROM events WHERE kind = 'record'"
        f" AND sequence IN ({_marks(gone)})",
        gone,
    ).fetchall()
    dependents: set[int] = set()
    for row in forgotten:
        where = (
            "persona_id = ? AND project_id = ? AND session_id = ? AND sequence > ?"
            f" AND sequence NOT IN ({_marks(gone)})"
        )
        params = (row["persona_id"], row["project_id"], row["session_id"], row["sequence"], *gone)
        bound = conn.execute(f"SELECT min(sequence) AS s FROM events WHERE {where} AND kind = 'record'", params)
        limit = bound.fetchone()["s"]
        later = conn.execute(
            f"SELECT sequence FROM events WHERE {where}" + ("" if limit is None else " AND sequence <= ?"),
            params if limit is None else (*params, limit),
        )
        dependents.update(r["sequence"] for r in later)
    return sorted(dependents)


def _unindex(conn: Any, plan: _Plan, dependents: list[int]) -> None:
    """Remove the full-text rows of what goes, and of the dependents whose context changes.

    FTS5 rows are not reached by foreign keys. The 'delete' command with secure-delete on takes
    each row's terms out of the index b-tree at once (see docs/design.md, "Forgetting").
    """
    for rowid in plan.memories:
        fulltext.unindex_memory(conn, rowid)
    for sequence in [*plan.events, *dependents]:
        fulltext.unindex_event(conn, sequence)


def _texts(conn: Any, plan: _Plan) -> Gone:
    """The texts that go, by table: what the stale-page check looks for after the commit."""
    seqs, rowids = list(plan.events), list(plan.memories)
    events = conn.execute(f"SELECT text FROM events WHERE sequence IN ({_marks(seqs)})", seqs).fetchall()
    rows = conn.execute(
        f"SELECT content, quote, coalesce(gist, '') AS gist FROM memories WHERE id IN ({_marks(rowids)})", rowids
    ).fetchall()
    return {
        "events": ([row["text"] for row in events], seqs),
        "memories": ([row[key] for row in rows for key in ("content", "quote", "gist")], rowids),
    }


def _delete(conn: Any, plan: _Plan) -> None:
    seqs, rowids = list(plan.events), list(plan.memories)
    # Memories of other events first, then the events (cues, corrections, vectors cascade).
    conn.execute(f"DELETE FROM memories WHERE id IN ({_marks(rowids)})", rowids)
    conn.execute(f"DELETE FROM events WHERE sequence IN ({_marks(seqs)})", seqs)


def scrub(db: Database, timeout_ms: int = SCRUB_TIMEOUT_MS) -> bool:
    """Checkpoint the WAL into the database file and truncate it to zero bytes.

    Old page images holding deleted text live on in the -wal file until it is truncated. A
    separate short-lived connection does it, so its own busy timeout (``timeout_ms``) bounds the
    wait for other connections' read transactions. Returns False when they outlast it: the old
    images then stay until the next successful checkpoint (the next forget, or when the last
    connection closes and SQLite checkpoints and deletes the WAL itself).
    """
    if str(db.path) == ":memory:":
        return True
    conn = apsw.Connection(str(db.path))
    try:
        conn.set_busy_timeout(timeout_ms)
        row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        busy = 1 if row is None else int(row[0])
    except apsw.BusyError:
        busy = 1
    finally:
        conn.close()
    if busy:
        log.warning("memory_forget: another connection kept the WAL from being truncated; retried at the next forget")
    return not busy


def _rewrite_stale_pages(db: Database, gone: Gone, timeout_ms: int = SCRUB_TIMEOUT_MS) -> bool:
    """VACUUM when a live page still holds a piece of the deleted text (memlikehuman/residue.py).

    Runs after ``scrub`` truncated the WAL. The file is read inside a read transaction, so no
    checkpoint changes it meanwhile (none may overwrite pages a reader still uses). The VACUUM
    rebuilds every page from zeroed buffers (its temporary copy stays in memory); a second
    ``scrub`` then truncates the WAL it filled. Returns False when the VACUUM or that scrub could
    not run within ``timeout_ms`` (other connections busy): the copies stay until the next forget.
    """
    if str(db.path) == ":memory:" or not any(texts for texts, _ in gone.values()):
        return True
    conn = apsw.Connection(str(db.path))
    try:
        conn.set_busy_timeout(timeout_ms)
        if not _stale(conn, db.path, gone):
            return True
        log.info("memory_forget: a live page held a stale copy of the deleted text; rebuilding the archive")
        conn.execute("PRAGMA temp_store=MEMORY").fetchall()
        conn.execute("VACUUM").fetchall()
    except apsw.BusyError:
        log.warning("memory_forget: another connection kept the archive busy; stale pages stay until the next forget")
        return False
    finally:
        conn.close()
    return scrub(db, timeout_ms)


# Up to this size every page of the text tables is read after a forget; above it only the pages
# around each deleted row (residue.stale_pages; docs/reliability.md has what that can miss).
WHOLE_TREES_BYTES = 64 * 2**20

# What a forget deleted, by table: the texts, and the row keys they had.
Gone = dict[str, tuple[list[str], list[int]]]

# Where a forgotten text can have left stale copies: the rows' own tables and the full-text
# indexes' data tables (their blobs hold the terms). The n-gram indexes are not searched (their
# terms are three-character pieces, which tell nothing apart; docs/reliability.md).
STALE_TREES = {"events": "events_fts", "memories": "memories_fts"}


def _stale(conn: apsw.Connection, path: Path, gone: Gone) -> bool:
    conn.execute("BEGIN")  # a read transaction: the file stays as it is while it is read
    try:
        page_size = int(_one(conn, "PRAGMA page_size"))
        roots = {str(name): int(root) for name, root in conn.execute(ROOTS)}
        trees: dict[int, residue.Tree] = {}
        whole = path.stat().st_size <= WHOLE_TREES_BYTES
        for table, index in STALE_TREES.items():
            texts, keys = gone[table]
            trees[roots[table]] = residue.Tree(residue.pieces(texts), None if whole else keys)
            trees[roots[f"{index}_data"]] = residue.Tree(residue.term_pieces(_gone_terms(conn, index, texts)))
        with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return bool(residue.stale_pages(data, page_size, trees))
    finally:
        conn.execute("COMMIT")


ROOTS = "SELECT name, rootpage FROM sqlite_schema WHERE type = 'table'"


def _one(conn: apsw.Connection, sql: str) -> Any:
    row = conn.execute(sql).fetchone()
    assert row is not None, sql
    return row[0]


def _gone_terms(conn: apsw.Connection, index: str, texts: list[str]) -> set[str]:
    """The terms of ``texts`` that are no longer in the full-text index ``index`` at all."""
    tokenize = conn.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
    terms = {
        str(token[0])
        for text in texts
        for token in tokenize(text.encode("utf-8"), apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=False)
    }
    long_terms = sorted(term for term in terms if len(term.encode("utf-8")) >= residue.MIN_TERM)
    if not long_terms:
        return set()
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{index}_terms USING fts5vocab(main, {index}, row)")
    kept = {
        row[0]
        for row in conn.execute(f"SELECT term FROM temp.{index}_terms WHERE term IN ({_marks(long_terms)})", long_terms)
    }
    return set(long_terms) - kept
