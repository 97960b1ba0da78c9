"""memory_forget: delete an event and what came from it, leaving no readable trace, and for good.

What goes, in one write transaction (lifecycle/forget_plan.py decides it by recorded provenance):
the event; every memory no event that remains states; every correction of those and what it made;
every memory whose making was shown what goes and that holds a word only that said; their cues,
full-text rows and vectors (vectors, cues, provenance and alias evidence by ON DELETE CASCADE, the
FTS5 rows explicitly, terms included). With ``also``, the records still_said names go too (the
events with everything above, the memories alone).
What changes: a memory another event still states stays, quoted from that event; surviving memories
are re-linked (an original whose correction is forgotten stays revoked, and the version before it
stays closed; a version whose successor is forgotten is valid again until the next surviving
version, or open-ended); the next events of the session are re-indexed, because their full-text
``context`` column holds the tail of the forgotten text, and the alias evidence of the next turn,
which answers another turn now; every checkpoint of the scope is invalidated and loses its saved
state; a tombstone of each deleted ID is kept (archive/tombstones.py), so that no import, hook or
retry stores it again.

Then the write-ahead log is checkpointed with TRUNCATE, so the old page images that still hold the
text leave the -wal file (see ``scrub`` for what happens when another process blocks that).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from .. import validate
from ..archive import alias_evidence, events, fulltext, memories, sources, timeline, tombstones
from ..archive.backend import backend_of
from ..archive.connection import Connection, Transaction
from ..archive.db import Gone, placeholders
from ..errors import Conflict, NotFound
from ..index import vectors
from ..records import ForgetResult, Preview, Scope
from . import forget_plan, still_said
from .forget_plan import Plan

log = logging.getLogger("memlikehuman")
# Why a forget invalidates the scope's checkpoints (an import tells such a checkpoint by it).
INVALIDATED = "records were forgotten (memory_forget)"


@dataclass(frozen=True)
class _Decision:
    """What a forget takes (``plan``), what stays quoted from another event, and what still says it."""

    plan: Plan
    requoted: tuple[tuple[str, str], ...]
    still_said_by: tuple[str, ...]


def preview(db: Connection, scope: Scope, record_id: str, *, also: bool = False) -> Preview:
    """What ``forget(db, scope, record_id, also=also)`` would delete, read in one snapshot; changes nothing.

    Raises InvalidArgument for a bad ID and NotFound when the record is not in this scope.
    """
    scope = Scope(*validate.scope(scope.persona_id, scope.project_id))
    validate.identifier(record_id, "record_id", max_len=256)
    with db.read() as conn:
        decision = _decide(conn, scope, _root(db, scope, record_id), also)
        checkpoints = db.query(
            "SELECT checkpoint_id FROM checkpoints WHERE persona_id = ? AND project_id = ? AND invalidated_at IS NULL"
            " ORDER BY id",
            (scope.persona_id, scope.project_id),
        )
    plan = decision.plan
    return Preview(
        record_id=record_id,
        event_ids=tuple(plan.events.values()),
        memory_ids=tuple(plan.memories[rowid] for rowid in sorted(plan.memories)),
        checkpoint_ids=tuple(row["checkpoint_id"] for row in checkpoints),
        requoted=decision.requoted,
        still_said_by=decision.still_said_by,
    )


def forget(
    db: Connection,
    scope: Scope,
    record_id: str,
    *,
    expected: Preview | None = None,
    also: bool = False,
    wait: float | None = None,
) -> ForgetResult:
    """Delete the record's source event and everything that came from it; then scrub the WAL.

    ``also``: delete the records still_said names too. With ``expected``, deletes only if the same
    events and memories would go (else Conflict). ``wait``: seconds the scrub waits for other
    connections' reads (MEMLIKEHUMAN_FORGET_WAIT; None: the backend's default). Raises
    InvalidArgument for a bad ID and NotFound when the record is not (or no longer) in this scope.
    """
    from ..archive import checkpoints  # its dataclasses stay off the hooks' import path

    scope = Scope(*validate.scope(scope.persona_id, scope.project_id))
    validate.identifier(record_id, "record_id", max_len=256)
    with db.write() as conn:
        decision = _decide(conn, scope, _root(db, scope, record_id), also)
        plan = decision.plan
        if expected is not None:
            _check_expected(plan, expected)
        dependents = _context_dependents(conn, plan)
        next_turns = alias_evidence.next_turns(conn, list(plan.events))
        gone = _texts(conn, plan)
        # Full-text rows go first, while the values they were built from are all still stored.
        _unindex(conn, plan, dependents)
        _relink(conn, plan)
        for rowid, quote in plan.requoted.items():
            sources.requote(conn, rowid, quote)
        # Memories of other events first, then the events (cues, corrections, vectors cascade).
        memories.delete(conn, list(plan.memories))
        events.delete(conn, list(plan.events))
        for sequence in dependents:
            fulltext.index_event(conn, sequence)
        for rowid in plan.requoted:
            fulltext.index_memory(conn, rowid)
        # Alias evidence of the forgotten events went by cascade; the next turns answer another turn now.
        alias_evidence.rewrite(conn, next_turns)
        # Their vectors embedded the forgotten text as context too; the indexer makes new ones.
        vectors.delete_event_vectors(conn, dependents)
        tombstones.bury(conn, [*plan.events.values(), *plan.memories.values()])
        invalidated = checkpoints.invalidate(
            conn, scope, INVALIDATED, wipe_state=True, forgotten=list(plan.events.values())
        )
    return ForgetResult(
        deleted_event_ids=tuple(plan.events.values()),
        deleted_memory_ids=tuple(plan.memories[rowid] for rowid in sorted(plan.memories)),
        invalidated_checkpoints=invalidated,
        event_sequences=tuple(plan.events),
        memory_rowids=tuple(sorted(plan.memories)),
        reembed_sequences=tuple(dependents),
        requoted=decision.requoted,
        still_said_by=decision.still_said_by,
        scrubbed=backend_of(db).scrub(db, gone, wait),
        residue=backend_of(db).residue,
    )


def _decide(conn: Transaction, scope: Scope, root: int, also: bool) -> _Decision:
    """The plan of forgetting ``root`` and what still says it; with ``also``, those taken too."""
    plan = forget_plan.plan(conn, [root])
    texts = [row["text"] for row in _rows(conn, "SELECT text FROM events WHERE sequence IN ({})", plan.events)]
    named = still_said.named(conn, scope, texts, list(plan.events), list(plan.memories))
    if also and named:
        found_events = _rows(conn, "SELECT sequence, event_id FROM events WHERE event_id IN ({})", named)
        found_memories = _rows(conn, "SELECT id, memory_id FROM memories WHERE memory_id IN ({})", named)
        roots = [root, *(row["sequence"] for row in found_events)]
        plan = forget_plan.plan(conn, roots, [row["id"] for row in found_memories])
        named = still_said.named(conn, scope, texts, list(plan.events), list(plan.memories))
    return _Decision(plan, _requoted(conn, plan), named)


def _rows(conn: Transaction, sql: str, keys: Any) -> list[Any]:
    values = list(keys)
    return list(conn.execute(sql.format(placeholders(values)), values).fetchall())


def _requoted(conn: Transaction, plan: Plan) -> tuple[tuple[str, str], ...]:
    """(memory ID, event ID) of each memory that stays quoted from another event."""
    sequences = [quote.sequence for quote in plan.requoted.values()]
    events = _rows(conn, "SELECT sequence, event_id FROM events WHERE sequence IN ({})", sequences)
    ids = {row["sequence"]: row["event_id"] for row in events}
    found = _rows(conn, "SELECT id, memory_id FROM memories WHERE id IN ({}) ORDER BY id", plan.requoted)
    return tuple((row["memory_id"], ids[plan.requoted[row["id"]].sequence]) for row in found)


def _relink(conn: Transaction, plan: Plan) -> None:
    """Take what goes out of the timelines; originals of forgotten corrections stay revoked."""
    held = timeline.release_originals(conn, plan.memories)
    # A replacement that stays (another event states it) while its correction goes: the original too
    # loses its correction, and stays revoked.
    corrected = _rows(conn, "SELECT original_id FROM corrections WHERE event_sequence IN ({})", plan.events)
    timeline.release(conn, [row["original_id"] for row in corrected if row["original_id"] not in plan.memories])
    for rowid in plan.memories:
        timeline.unlink(conn, rowid, plan.memories, keep_closed=rowid in held or rowid in plan.carried)


def _check_expected(plan: Plan, expected: Preview) -> None:
    if set(plan.events.values()) != set(expected.event_ids) or set(plan.memories.values()) != set(expected.memory_ids):
        raise Conflict(
            f"what forgetting {expected.record_id} deletes changed since its preview (a correction or a new memory"
            " arrived): nothing was deleted; look at the new preview and confirm again"
        )


def _root(db: Connection, scope: Scope, record_id: str) -> int:
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


def _context_dependents(conn: Transaction, plan: Plan) -> list[int]:
    """Surviving events whose full-text ``context`` holds the tail of a forgotten record event.

    An event's context is the previous record event of its session, so after a forgotten record
    event that is every later event up to and including the next surviving record event.
    """
    gone = list(plan.events)
    forgotten = conn.execute(
        f"SELECT sequence, persona_id, project_id, session_id FROM events WHERE kind = 'record'"
        f" AND sequence IN ({placeholders(gone)})",
        gone,
    ).fetchall()
    dependents: set[int] = set()
    for row in forgotten:
        where = (
            "persona_id = ? AND project_id = ? AND session_id = ? AND sequence > ?"
            f" AND sequence NOT IN ({placeholders(gone)})"
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


def _unindex(conn: Transaction, plan: Plan, dependents: list[int]) -> None:
    """Remove the full-text rows of what goes, and of the dependents whose context changes.

    FTS5 rows are not reached by foreign keys. The 'delete' command with secure-delete on takes
    each row's terms out of the index b-tree at once (docs/decisions/2026-11-30-no-readable-residue.md).
    """
    for rowid in [*plan.memories, *plan.requoted]:
        fulltext.unindex_memory(conn, rowid)
    for sequence in [*plan.events, *dependents]:
        fulltext.unindex_event(conn, sequence)


def _texts(conn: Transaction, plan: Plan) -> Gone:
    """The texts that go, by table: what the stale-page check looks for after the commit (a memory
    quoted from another event now leaves its old quote)."""
    seqs, rowids = list(plan.events), [*plan.memories, *plan.requoted]
    events = conn.execute(f"SELECT text FROM events WHERE sequence IN ({placeholders(seqs)})", seqs).fetchall()
    rows = conn.execute(
        f"SELECT id, content, quote, coalesce(gist, '') AS gist FROM memories WHERE id IN ({placeholders(rowids)})",
        rowids,
    ).fetchall()
    texts = [row[key] for row in rows if row["id"] in plan.memories for key in ("content", "quote", "gist")]
    texts += [row["quote"] for row in rows if row["id"] in plan.requoted]
    return {"events": ([row["text"] for row in events], seqs), "memories": (texts, rowids)}
