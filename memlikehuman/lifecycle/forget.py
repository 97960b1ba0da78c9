"""memory_forget: delete an event and everything derived from it, leaving no readable trace.

What goes, in one write transaction: the source event; every memory derived from it; every
correction event of those memories and what it derived, recursively; every memory of another event
that names what only the forgotten texts held (``carried``), with its corrections; their cues, full-text rows
and vectors (vectors, cues and alias evidence by ON DELETE CASCADE, the FTS5 rows explicitly, terms
included).
What changes: surviving memories are re-linked (an original whose correction is forgotten stays
revoked, and the version before it stays closed; a version whose successor is forgotten is valid
again until the next surviving version, or open-ended);
the next events of the session are re-indexed, because their full-text ``context`` column holds the
tail of the forgotten text, and the alias evidence of the next turn, which answers another turn now;
every checkpoint of the scope is invalidated and loses its saved state.

Then the write-ahead log is checkpointed with TRUNCATE, so the old page images that still hold the
text leave the -wal file (see ``scrub`` for what happens when another process blocks that).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from .. import clock, validate
from ..archive import alias_evidence, events, fulltext, memories, timeline
from ..archive import repeats as repeat_rows
from ..archive.backend import backend_of
from ..archive.db import Database, Gone, placeholders
from ..archive.repeats import Waiting
from ..errors import Conflict, NotFound
from ..index import vectors
from ..records import Candidate, Event, ForgetResult, Preview, Scope
from . import carried

log = logging.getLogger("memlikehuman")


@dataclass(frozen=True)
class _Plan:
    events: dict[int, str]  # sequence -> event_id, in the order they were reached
    memories: dict[int, str]  # rowid -> memory_id
    # Memories of surviving events that carried the forgotten words (and their corrections' memories):
    # a version before one of them stays closed, since its event still says what replaced it.
    carried: frozenset[int] = frozenset()


def preview(db: Database, scope: Scope, record_id: str) -> Preview:
    """What ``forget(db, scope, record_id)`` would delete, read in one snapshot; changes nothing.

    Raises InvalidArgument for a bad ID and NotFound when the record is not in this scope.
    """
    scope = Scope(*validate.scope(scope.persona_id, scope.project_id))
    validate.identifier(record_id, "record_id", max_len=256)
    with db.read() as conn:
        plan = _plan(conn, scope, _root(db, scope, record_id))
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
    from ..archive import checkpoints  # its dataclasses stay off the hooks' import path

    scope = Scope(*validate.scope(scope.persona_id, scope.project_id))
    validate.identifier(record_id, "record_id", max_len=256)
    with db.write() as conn:
        plan = _plan(conn, scope, _root(db, scope, record_id))
        if expected is not None:
            _check_expected(plan, expected)
        dependents = _context_dependents(conn, plan)
        next_turns = alias_evidence.next_turns(conn, list(plan.events))
        gone = _texts(conn, plan)
        kept = [rowid for rowid in plan.memories if rowid not in plan.carried]
        restated = repeat_rows.waiting(conn, kept, list(plan.events))  # read now: the rows cascade
        # Full-text rows go first, while the values they were built from are all still stored.
        _unindex(conn, plan, dependents)
        held = timeline.release_originals(conn, plan.memories)
        for rowid in plan.memories:
            timeline.unlink(conn, rowid, plan.memories, keep_closed=rowid in held or rowid in plan.carried)
        # Memories of other events first, then the events (cues, corrections, vectors cascade).
        memories.delete(conn, list(plan.memories))
        events.delete(conn, list(plan.events))
        revived = _revive(db, conn, scope, restated, gone["events"][0])
        still = _still_stored(gone, revived)
        for sequence in dependents:
            fulltext.index_event(conn, sequence)
        # Alias evidence of the forgotten events went by cascade; the next turns answer another turn now.
        alias_evidence.rewrite(conn, next_turns)
        # Their vectors embedded the forgotten text as context too; the indexer makes new ones.
        vectors.delete_event_vectors(conn, dependents)
        invalidated = checkpoints.invalidate(
            conn, scope, "records were forgotten (memory_forget)", wipe_state=True, forgotten=list(plan.events.values())
        )
    return ForgetResult(
        deleted_event_ids=tuple(plan.events.values()),
        deleted_memory_ids=tuple(plan.memories[rowid] for rowid in sorted(plan.memories)),
        invalidated_checkpoints=invalidated,
        event_sequences=tuple(plan.events),
        memory_rowids=tuple(sorted(plan.memories)),
        reembed_sequences=tuple(dependents),
        revived_memory_ids=tuple(memory_id for memory_id, _ in revived),
        scrubbed=backend_of(db).scrub(db, still),
        residue=backend_of(db).residue,
    )


def _revive(
    db: Database, conn: Any, scope: Scope, restated: dict[int, Waiting], texts: list[str]
) -> list[tuple[str, str]]:
    """A deleted current memory that a surviving turn stated again becomes a memory of the earliest
    such turn (archive/repeats.py): its content, the turn's own fields (the subject if the turn named
    the same), and the versions the deleted one had closed closed again. Not when it names what only
    the forgotten texts held; when a current memory already says it (a correction's replacement
    may), the repeats point there and it closes those versions instead.
    Returns the memory ID and content of each memory revived."""
    marks = carried.marks(texts)
    revived: list[tuple[str, str]] = []
    for old in restated.values():
        if carried.names_gone(conn, scope, marks, old.content, old.subject):
            continue
        live = memories.repeated(db, scope, old.content)
        if live is not None:
            event = events.load(db, _event_of(conn, live))
            repeat_rows.restore(conn, live, [r for r in old.repeats if r["event_sequence"] != event.sequence])
            _close_again(conn, event, live, old.closed)
            continue
        first, *later = old.repeats
        event = events.load(db, first["event_sequence"])
        start = first["quote_start"]
        item = Candidate(
            content=old.content,
            quote=event.text[start : start + first["quote_length"]],
            kind=first["kind"],
            basis=first["basis"],
            subject=old.subject if first["same_subject"] else None,
            valid_from=first["valid_from"],
        )
        rowid = memories.insert(conn, event, item, clock.now_stamp(), first["extractor"])
        if item.subject and item.kind != "event":
            timeline.insert_version(conn, event, rowid, item)
        _close_again(conn, event, rowid, old.closed)
        repeat_rows.restore(conn, rowid, later)
        memory_id = conn.execute("SELECT memory_id FROM memories WHERE id = ?", (rowid,)).fetchone()["memory_id"]
        revived.append((str(memory_id), old.content))
    return revived


def _close_again(conn: Any, event: Event, rowid: int, closed: tuple[int, ...]) -> None:
    """Close the versions a deleted memory had closed, now by ``rowid`` (the unlink reopened them)."""
    valid_from = conn.execute("SELECT valid_from FROM memories WHERE id = ?", (rowid,)).fetchone()["valid_from"]
    for target in closed:
        timeline.close_target(conn, event, rowid, target, valid_from)


def _event_of(conn: Any, rowid: int) -> int:
    return int(conn.execute("SELECT event_sequence FROM memories WHERE id = ?", (rowid,)).fetchone()["event_sequence"])


def _still_stored(gone: Gone, revived: list[tuple[str, str]]) -> Gone:
    """What the stale-page check looks for, less the contents a revived memory still holds."""
    held = {content for _, content in revived}
    texts, keys = gone["memories"]
    return {**gone, "memories": ([text for text in texts if text not in held], keys)}


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


def _plan(conn: Any, scope: Scope, root: int) -> _Plan:
    """The closure of the root event, then of the memories of other events that carry its words."""
    plan = _closure(conn, [root], {})
    gone = _texts(conn, plan)
    # The words of the forgotten events only: a memory's own words ("User", "Nutzer", a date) are the
    # extractor's, and other memories hold them too.
    rowids = carried.carried(conn, scope, gone["events"][0], plan.events, plan.memories)
    if not rowids:
        return plan
    rows = conn.execute(
        "SELECT m.id, m.memory_id, e.sequence, e.kind FROM memories m JOIN events e ON e.sequence = m.event_sequence"
        f" WHERE m.id IN ({placeholders(rowids)})",
        rowids,
    ).fetchall()
    # A correction's replacement goes with its correction event (and its corrections row), as when the
    # correction itself is forgotten: the original stays revoked.
    roots = sorted({row["sequence"] for row in rows if row["kind"] == "correction"})
    seeds = {row["id"]: row["memory_id"] for row in rows if row["kind"] != "correction"}
    more = _closure(conn, roots, seeds, known=plan.events)
    return _Plan({**plan.events, **more.events}, {**plan.memories, **more.memories}, frozenset(more.memories))


def _closure(conn: Any, roots: list[int], seeds: dict[int, str], known: dict[int, str] | None = None) -> _Plan:
    """Events and memories reached from ``roots`` (events) and ``seeds`` (memories): their memories,
    the corrections of those memories, and so on."""
    found_events: dict[int, str] = {}
    found_memories: dict[int, str] = dict(seeds)
    frontier = roots
    new_memories = dict(seeds)
    while frontier or new_memories:
        marks = placeholders(frontier)
        for row in conn.execute(f"SELECT sequence, event_id FROM events WHERE sequence IN ({marks})", frontier):
            found_events.setdefault(row["sequence"], row["event_id"])
        new_memories.update(
            (row["id"], row["memory_id"])
            for row in conn.execute(
                f"SELECT id, memory_id FROM memories WHERE event_sequence IN ({marks}) ORDER BY id", frontier
            )
        )
        found_memories.update(new_memories)
        ids = list(new_memories)
        new_memories = {}
        frontier = [
            row["event_sequence"]
            for row in conn.execute(
                f"SELECT event_sequence FROM corrections WHERE original_id IN ({placeholders(ids)})"
                " ORDER BY event_sequence",
                ids,
            )
            if row["event_sequence"] not in found_events and row["event_sequence"] not in (known or {})
        ]
    return _Plan(found_events, found_memories)


def _context_dependents(conn: Any, plan: _Plan) -> list[int]:
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
    events = conn.execute(f"SELECT text FROM events WHERE sequence IN ({placeholders(seqs)})", seqs).fetchall()
    rows = conn.execute(
        f"SELECT content, quote, coalesce(gist, '') AS gist FROM memories WHERE id IN ({placeholders(rowids)})", rowids
    ).fetchall()
    return {
        "events": ([row["text"] for row in events], seqs),
        "memories": ([row[key] for row in rows for key in ("content", "quote", "gist")], rowids),
    }
