"""Evidence of speaker aliases: which turn calls the speaker before it by which name (table alias_evidence).

One row per (evidence event, name): a turn that uses a name in address ("Hey Mel!") and the turn it
answers, the previous turn of its session (``addressed_sequence``), whose speaker the name belongs
to. Both keys reference events ON DELETE CASCADE, so forgetting either event takes the row (and the
name, a word of its text) with it, and no alias can outlive its evidence. Aliases are not stored:
``scope_aliases`` aggregates a scope's rows with text/aliases.learn when they are read.

A turn is a record event of category ``conversation`` by ``user`` or ``assistant``; the previous
turn is the latest turn of the same scope and session before it (tool and system events between
them are skipped). The speaker is the event's ``source``; when both turns share their source (a
host's chat: every message is "claude-code"), it is their ``role`` ("user", "assistant"), so the
name a host's assistant uses for the user becomes an alias of ``user``. Two turns of one speaker
are no evidence.

Written with the event by every event writer (events.write / write_many: memory_record, hooks,
history and export imports). Older archives: migration m009 (p002 on PostgreSQL) notes the last
sequence it found, and ``complete`` writes the rows of those events with today's code, in batches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .connection import Connection, Transaction
from .db import placeholders

if TYPE_CHECKING:
    from ..records import Scope, SpeakerAlias

TURN_ROLES = ("user", "assistant")
# The fields of an event a row derives from, in this order (events.write passes them).
FIELDS = ("persona_id", "project_id", "session_id", "role", "source", "category", "kind", "text")
Fields = Sequence[Any]
_Session = tuple[str, str, str]
_Turn = tuple[int, str, str]  # sequence, source, role

_INSERT = (
    "INSERT INTO alias_evidence (event_sequence, addressed_sequence, persona_id, project_id, speaker, name)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
_PREVIOUS = (
    "SELECT sequence, source, role FROM events WHERE persona_id = ? AND project_id = ? AND session_id = ?"
    " AND sequence < ? AND kind = 'record' AND category = 'conversation' AND role IN ('user', 'assistant')"
    " ORDER BY sequence DESC LIMIT 1"
)
BATCH = 2_000


def speaker(previous: _Turn, source: str, role: str) -> str | None:
    """The label of the speaker a turn answers: the previous turn's source, or its role when both
    turns share the source; None when both are the same speaker."""
    if previous[1] != source:
        return previous[1]
    return previous[2] if previous[2] != role else None


def write(conn: Transaction, sequence: int, fields: Fields) -> None:
    """The rows of one new event (inside the writer's transaction); ``fields`` in FIELDS order."""
    write_many(conn, [(sequence, fields)])


def write_many(conn: Transaction, events: Iterable[tuple[int, Fields]]) -> None:
    """write() for consecutive events (no other event between them), in sequence order: one
    statement for all their rows. The previous turn is looked up only for a turn that uses a name,
    once per session; after that the batch's own turns are the previous ones."""
    from ..text.addressing import addressed  # a start hook opens the archive and records nothing

    last: dict[_Session, _Turn | None] = {}
    rows = []
    for sequence, (persona, project, session, role, source, category, kind, text) in events:
        if kind != "record" or category != "conversation" or role not in TURN_ROLES:
            continue
        key = (persona, project, session)
        names = addressed(text)
        previous = (last[key] if key in last else _previous(conn, key, sequence)) if names else None
        who = speaker(previous, source, role) if previous else None
        if previous and who is not None:
            rows += [(sequence, previous[0], persona, project, who, name) for name in names]
        last[key] = (sequence, source, role)
    if rows:
        conn.executemany(_INSERT, rows)


def _previous(conn: Transaction, session: _Session, sequence: int) -> _Turn | None:
    row = conn.execute(_PREVIOUS, (*session, sequence)).fetchone()
    return None if row is None else (int(row["sequence"]), str(row["source"]), str(row["role"]))


# -- forgetting -----------------------------------------------------------------------------------


def next_turns(conn: Transaction, gone: Sequence[int]) -> list[int]:
    """The surviving turns that follow a turn among ``gone`` in its session: their previous turn
    changes when it goes. Call before the delete (the sessions of ``gone`` are read)."""
    marks = placeholders(gone)
    found = conn.execute(
        f"SELECT g.sequence, g.persona_id, g.project_id, g.session_id FROM events g WHERE g.sequence IN ({marks})"
        " AND g.kind = 'record' AND g.category = 'conversation' AND g.role IN ('user', 'assistant')",
        list(gone),
    ).fetchall()
    after: set[int] = set()
    for row in found:
        nxt = conn.execute(
            "SELECT min(sequence) AS s FROM events WHERE persona_id = ? AND project_id = ? AND session_id = ?"
            " AND sequence > ? AND kind = 'record' AND category = 'conversation' AND role IN ('user', 'assistant')"
            f" AND sequence NOT IN ({marks})",
            (row["persona_id"], row["project_id"], row["session_id"], row["sequence"], *gone),
        ).fetchone()["s"]
        if nxt is not None:
            after.add(int(nxt))
    return sorted(after)


def rewrite(conn: Transaction, sequences: Sequence[int]) -> None:
    """Derive the rows of these stored events again (after a forget changed their previous turn).

    One event at a time: they need not be consecutive turns, so each looks its previous turn up.
    """
    if not sequences:
        return
    conn.execute(f"DELETE FROM alias_evidence WHERE event_sequence IN ({placeholders(sequences)})", list(sequences))
    for item in _load(conn, sequences):
        write_many(conn, [item])


def _load(conn: Transaction, sequences: Sequence[int]) -> list[tuple[int, Fields]]:
    sql = f"SELECT sequence, {', '.join(FIELDS)} FROM events WHERE sequence IN ({placeholders(sequences)})"
    rows = conn.execute(sql + " ORDER BY sequence", list(sequences)).fetchall()
    return [(int(row["sequence"]), [row[name] for name in FIELDS]) for row in rows]


# -- older archives -------------------------------------------------------------------------------


def behind(db: Connection) -> bool:
    """Whether events recorded before migration m009 (p002) still wait for their rows (one small read)."""
    return db.scalar("SELECT count(*) FROM alias_backfill") != 0


def complete(
    db: Connection,
    progress: Callable[[int, int], None] | None = None,
    batch: int = BATCH,
    deadline: float | None = None,
) -> int:
    """Write the rows of the events the migration left to do, ``batch`` events per committed
    transaction; returns how many events were read. Safe to interrupt, and to run in several
    processes at once (each batch re-reads the bound under the write lock). With a ``deadline``
    (time.monotonic()) no batch starts after it: the rest is left to a later call."""
    done = 0
    while deadline is None or time.monotonic() < deadline:
        with db.write() as conn:
            bound = conn.execute("SELECT done, upto FROM alias_backfill").fetchone()
            if bound is None:
                return done
            sql = f"SELECT sequence, {', '.join(FIELDS)} FROM events WHERE sequence > ? AND sequence <= ?"
            rows = conn.execute(sql + " ORDER BY sequence LIMIT ?", (bound["done"], bound["upto"], batch)).fetchall()
            if not rows:
                conn.execute("DELETE FROM alias_backfill")
                return done
            write_many(conn, [(int(row["sequence"]), [row[name] for name in FIELDS]) for row in rows])
            conn.execute("UPDATE alias_backfill SET done = ?", (int(rows[-1]["sequence"]),))
        done += len(rows)
        if progress:
            progress(int(rows[-1]["sequence"]), int(bound["upto"]))
    return done


# -- reading --------------------------------------------------------------------------------------

_SEEN = (
    "SELECT a.persona_id, a.project_id, a.speaker, a.name, count(*) AS n, min(a.event_sequence) AS first"
    " FROM alias_evidence a {where} GROUP BY a.persona_id, a.project_id, a.speaker, a.name"
)
# Speaker labels besides the addressed ones: those of the turns that address someone.
_LABELS = (
    "SELECT DISTINCT a.persona_id, a.project_id, e.source FROM alias_evidence a"
    " JOIN events e ON e.sequence = a.event_sequence {where}"
)


def aliases_by_scope(
    db: Connection, persona_id: str | None = None, project_id: str | None = None, *, learned_only: bool = True
) -> dict[Scope, list[SpeakerAlias]]:
    """The aliases of every scope with evidence (or of one persona and/or project), by speaker then
    name: each with its evidence count and its first evidence event. ``learned_only=False`` also
    lists the names aliases.learn does not (yet) accept, marked ``learned=False``."""
    from ..records import Scope, SpeakerAlias
    from ..text import aliases

    clauses = [f"a.{column} = ?" for column, value in (("persona_id", persona_id), ("project_id", project_id)) if value]
    params = tuple(value for value in (persona_id, project_id) if value)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    seen: dict[Scope, dict[tuple[str, str], tuple[int, int]]] = {}
    labels: dict[Scope, set[str]] = {}
    # One snapshot (recall calls this outside its own): a forget committed between these reads
    # would leave a first evidence event without its ID, or labels of a scope not seen.
    with db.read():
        for row in db.query(_SEEN.format(where=where), params):
            scope = Scope(row["persona_id"], row["project_id"])
            seen.setdefault(scope, {})[(row["speaker"], row["name"])] = (int(row["n"]), int(row["first"]))
            labels.setdefault(scope, set()).add(row["speaker"])
        for row in db.query(_LABELS.format(where=where), params):
            labels[Scope(row["persona_id"], row["project_id"])].add(row["source"])
        ids = _event_ids(db, sorted({first for found in seen.values() for _, first in found.values()}))
    out: dict[Scope, list[SpeakerAlias]] = {}
    for scope, found in sorted(seen.items(), key=lambda item: (item[0].persona_id, item[0].project_id)):
        accepted = {(a.speaker, a.name) for a in aliases.learn({k: n for k, (n, _) in found.items()}, labels[scope])}
        listed = [
            SpeakerAlias(speaker, name, n, ids[first], (speaker, name) in accepted)
            for (speaker, name), (n, first) in sorted(found.items())
            if not learned_only or (speaker, name) in accepted
        ]
        if listed:
            out[scope] = listed
    return out


def scope_aliases(db: Connection, scope: Scope, *, learned_only: bool = True) -> list[SpeakerAlias]:
    """The aliases of one scope (aliases_by_scope)."""
    return aliases_by_scope(db, scope.persona_id, scope.project_id, learned_only=learned_only).get(scope, [])


def named_speakers(db: Connection, scope: Scope) -> list[tuple[str, str]]:
    """(label, alias) of the scope's learned aliases of speakers named by their source, not by a role
    (recall phrases queries with them: a role is in no event's attribution). One indexed read when
    there are none."""
    found = db.scalar(
        "SELECT 1 FROM alias_evidence WHERE persona_id = ? AND project_id = ?"
        " AND speaker NOT IN ('user', 'assistant') LIMIT 1",
        (scope.persona_id, scope.project_id),
    )
    if found is None:
        return []
    return [(a.speaker, a.name) for a in scope_aliases(db, scope) if a.speaker not in TURN_ROLES]


def of_event(db: Connection, scope: Scope, sequence: int) -> tuple[SpeakerAlias, ...]:
    """The names this event is evidence for, each with the scope's evidence count and whether it is
    a learned alias (memory_read); empty, after one primary-key lookup, for most events."""
    mine = {(r["speaker"], r["name"]) for r in db.query(_OWN, (sequence,))}
    if not mine:
        return ()
    return tuple(a for a in scope_aliases(db, scope, learned_only=False) if (a.speaker, a.name) in mine)


_OWN = "SELECT speaker, name FROM alias_evidence WHERE event_sequence = ?"


def _event_ids(db: Connection, sequences: Sequence[int]) -> dict[int, str]:
    found: dict[int, str] = {}
    for begin in range(0, len(sequences), 500):
        chunk = list(sequences[begin : begin + 500])
        sql = f"SELECT sequence, event_id FROM events WHERE sequence IN ({placeholders(chunk)})"
        found.update({int(row["sequence"]): str(row["event_id"]) for row in db.query(sql, tuple(chunk))})
    return found
