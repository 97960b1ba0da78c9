"""Leases on pending events, kept in the archive (table extraction_claims, migration m006).

A worker claims one pending recorded event for a lease before it asks the model, and releases it
afterwards. The claim lives in the archive, not in memory, so every process on one archive sees it:

- two workers never extract the same event at once (the claim is taken in a write transaction);
- events of one scope are extracted one at a time, in recording order: a scope with a live claim,
  or with an earlier event waiting out a backoff, offers nothing else (supersession depends on order);
- a claim of a killed process ends with its lease (or at once when its holder, a process on this
  host, is gone), and the event is claimed again;
- a transient provider failure counts an attempt and sets ``retry_at`` (bounded backoff); after
  ``MAX_ATTEMPTS`` the event stays pending until a duplicate ``memory_record``, ``memlikehuman retry``
  or a server start asks for it again.

Times are unix seconds (``time.time()``): leases must mean the same in every process. What the worker
calls (claim_next, claim_following, release, reap_dead) takes ``now`` from its clock.Clock, which a
test may move on; the rest reads the time here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

from ..records import Scope
from .connection import Connection

MAX_ATTEMPTS = 4
# Seconds before attempts 2, 3 and 4: a provider that is down is not hammered, and an outage of
# about a minute costs no event its memories.
BACKOFF = (2.0, 10.0, 45.0)

_ELIGIBLE = """
SELECT e.sequence FROM events e LEFT JOIN extraction_claims c ON c.event_sequence = e.sequence
WHERE e.extraction_state = 'pending' AND e.kind = 'record' {scope}
  AND (c.event_sequence IS NULL OR (
        (c.claimed_until IS NULL OR c.claimed_until < :now)
        AND (c.retry_at IS NULL OR c.retry_at <= :now) AND c.attempts < :max))
  AND NOT EXISTS (
        SELECT 1 FROM extraction_claims o
        WHERE o.persona_id = e.persona_id AND o.project_id = e.project_id AND o.event_sequence != e.sequence
          AND ((o.claimed_until >= :now AND EXISTS (
                    SELECT 1 FROM events p WHERE p.sequence = o.event_sequence AND p.extraction_state = 'pending'))
               OR (:in_order = 1 AND o.event_sequence < e.sequence AND o.retry_at > :now AND o.attempts < :max)))
ORDER BY e.sequence LIMIT 1
"""


# Claims that no live worker holds, of events that are no longer pending.
_FINISHED = (
    "SELECT c.event_sequence FROM extraction_claims c JOIN events e ON e.sequence = c.event_sequence"
    " WHERE (c.claimed_until IS NULL OR c.claimed_until < ?) AND e.extraction_state != 'pending'"
)


def _hostname() -> str:
    """This host's name, as socket.gethostname() gives it (on POSIX both read uname's nodename).

    Not `socket` where uname exists: every engine names its worker at start, and importing socket
    is a measurable part of a hook's start-up (a process per prompt)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def owner_id() -> str:
    """A worker's name in claims: host, process ID and a random part (one per worker)."""
    return f"{_hostname()}:{os.getpid()}:{os.urandom(4).hex()}"


def claim_next(
    db: Connection,
    owner: str,
    lease: float,
    scope: Scope | None = None,
    *,
    in_order: bool = True,
    now: float,
) -> int | None:
    """Claim the next eligible pending event (of one scope, or of any); return its sequence or None.

    ``in_order=False`` (``memlikehuman retry``: try each event now) lets later events of a scope go
    before an earlier one that waits out a backoff.
    """
    params: dict[str, object] = {"now": now, "max": MAX_ATTEMPTS, "in_order": int(in_order)}
    where = ""
    if scope is not None:
        where = "AND e.persona_id = :persona AND e.project_id = :project"
        params.update(persona=scope.persona_id, project=scope.project_id)
    sql = _ELIGIBLE.format(scope=where)
    if db.one(sql, params) is None:
        return None  # an idle worker's poll takes no write lock
    with db.write() as conn:
        row = conn.execute(sql, params).fetchone()  # again under the lock: another worker may have won
        if row is None:
            return None
        sequence = int(row["sequence"])
        conn.execute(
            "INSERT INTO extraction_claims (event_sequence, persona_id, project_id, claimed_by, claimed_until)"
            " SELECT sequence, persona_id, project_id, ?, ? FROM events WHERE sequence = ?"
            " ON CONFLICT (event_sequence) DO UPDATE SET claimed_by = excluded.claimed_by,"
            " claimed_until = excluded.claimed_until",
            (owner, now + lease, sequence),
        )
    return sequence


def claim_following(
    db: Connection, owner: str, lease: float, first: int, limit: int, short_chars: int, now: float
) -> list[int]:
    """Claim the pending events that directly follow ``first`` in its scope and session (for a batch).

    Stops at the first later event of the scope that is of another session, long (over
    ``short_chars``), not pending, claimed, or not eligible now: order within the scope holds.
    ``first`` must be claimed by ``owner`` already.
    """
    with db.write() as conn:
        head = conn.execute(
            "SELECT persona_id, project_id, session_id, length(text) AS chars FROM events WHERE sequence = ?", (first,)
        ).fetchone()
        if head is None or head["chars"] > short_chars:
            return []
        rows = conn.execute(
            "SELECT e.sequence, e.session_id, e.extraction_state, length(e.text) AS chars, c.claimed_until,"
            " c.retry_at, c.attempts FROM events e LEFT JOIN extraction_claims c ON c.event_sequence = e.sequence"
            " WHERE e.persona_id = ? AND e.project_id = ? AND e.kind = 'record' AND e.sequence > ?"
            " ORDER BY e.sequence LIMIT ?",
            (head["persona_id"], head["project_id"], first, limit),
        ).fetchall()
        taken: list[int] = []
        for row in rows:
            busy = row["claimed_until"] is not None and row["claimed_until"] >= now
            waiting = row["retry_at"] is not None and row["retry_at"] > now
            exhausted = row["attempts"] is not None and row["attempts"] >= MAX_ATTEMPTS
            if (row["session_id"] != head["session_id"] or row["extraction_state"] != "pending"
                    or row["chars"] > short_chars or busy or waiting or exhausted):  # fmt: skip
                break
            taken.append(int(row["sequence"]))
        for sequence in taken:
            conn.execute(
                "INSERT INTO extraction_claims (event_sequence, persona_id, project_id, claimed_by, claimed_until)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (event_sequence) DO UPDATE SET claimed_by = excluded.claimed_by,"
                " claimed_until = excluded.claimed_until",
                (sequence, head["persona_id"], head["project_id"], owner, now + lease),
            )
    return taken


def release(db: Connection, owner: str, sequence: int, result: str, now: float) -> None:
    """End a claim after an attempt whose ``result`` is "done", "transient" or "permanent".

    done: the claim is forgotten. transient: the attempt is counted and its backoff set.
    permanent (the provider refused in a way a retry will not change): no further attempts until
    the event is asked for again (``requeue``, ``reset_exhausted``).
    """
    with db.write() as conn:
        if result == "done":
            conn.execute("DELETE FROM extraction_claims WHERE event_sequence = ? AND claimed_by = ?", (sequence, owner))
            return
        row = conn.execute(
            "SELECT attempts FROM extraction_claims WHERE event_sequence = ? AND claimed_by = ?", (sequence, owner)
        ).fetchone()
        if row is None:
            return  # the lease ran out and another worker took the event over
        attempts = int(row["attempts"]) + 1 if result == "transient" else MAX_ATTEMPTS
        retry_at = now + BACKOFF[attempts - 1] if attempts < MAX_ATTEMPTS else None
        conn.execute(
            "UPDATE extraction_claims SET claimed_by = NULL, claimed_until = NULL, attempts = ?, retry_at = ?"
            " WHERE event_sequence = ?",
            (attempts, retry_at, sequence),
        )


def release_all(db: Connection, owner: str) -> int:
    """End every claim of one worker (at shutdown): its events are pending for the next one."""
    with db.write() as conn:
        conn.execute(
            "UPDATE extraction_claims SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = ?", (owner,)
        )
        return int(conn.changes())


def requeue(db: Connection, sequences: Iterable[int]) -> None:
    """Ask for extraction again: failed events become pending, attempts and backoff start over.

    Events under a live claim keep it (their extraction is running now).
    """
    now = time.time()
    with db.write() as conn:
        for sequence in sequences:
            conn.execute(
                "UPDATE events SET extraction_state = 'pending' WHERE sequence = ? AND extraction_state = 'failed'"
                " AND kind = 'record'",
                (sequence,),
            )
            conn.execute(
                "DELETE FROM extraction_claims WHERE event_sequence = ?"
                " AND (claimed_until IS NULL OR claimed_until < ?)",
                (sequence, now),
            )


def reset_exhausted(db: Connection) -> None:
    """Give events that used up their attempts a new round (a server start asks for them again)."""
    with db.write() as conn:
        conn.execute(
            "UPDATE extraction_claims SET attempts = 0, retry_at = NULL WHERE attempts >= ? AND claimed_until IS NULL",
            (MAX_ATTEMPTS,),
        )


def reap_dead(db: Connection, now: float) -> int:
    """End the claims of processes on this host that no longer run (killed), and drop the claims of
    events that are no longer pending (a process killed between storing memories and releasing).

    Returns how many claims of killed processes were ended.
    """
    host = _hostname()
    rows = db.query("SELECT event_sequence, claimed_by FROM extraction_claims WHERE claimed_until >= ?", (now,))
    dead = [row for row in rows if _holder_gone(str(row["claimed_by"]), host)]
    finished = db.scalar(_FINISHED, (now,))
    if not dead and not finished:
        return 0
    with db.write() as conn:
        for row in dead:
            conn.execute(
                "UPDATE extraction_claims SET claimed_by = NULL, claimed_until = NULL"
                " WHERE event_sequence = ? AND claimed_by = ?",
                (row["event_sequence"], row["claimed_by"]),
            )
        conn.execute(f"DELETE FROM extraction_claims WHERE event_sequence IN ({_FINISHED})", (now,))
    return len(dead)


def _holder_gone(owner: str, host: str) -> bool:
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
        return False  # another host's process: only its lease can end its claim
    if int(parts[1]) == os.getpid():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def in_flight(db: Connection, scope: Scope) -> int:
    """Events of the scope under a live claim (being extracted now)."""
    return int(
        db.scalar(
            "SELECT count(*) FROM extraction_claims c WHERE persona_id = ? AND project_id = ? AND claimed_until >= ?"
            " AND EXISTS (SELECT 1 FROM events e WHERE e.sequence = c.event_sequence"
            " AND e.extraction_state = 'pending')",
            (scope.persona_id, scope.project_id, time.time()),
        )
        or 0
    )
