"""Counts per scope for the UI's pages, cheap at any archive size.

Event counts come from ``scope_counts``, which triggers keep exact in the same transactions as the
events (migration m003); counting the events themselves would read every row of a scope on every
page. Memories and checkpoints are counted from their tables (far fewer rows than events).
"""

from __future__ import annotations

from typing import Any

from ..admin.stats import ScopeStats
from ..archive.connection import Connection
from ..records import Scope

_MEMORIES = """
SELECT persona_id, project_id, count(*) - count(revoked_at) - count(CASE WHEN revoked_at IS NULL THEN valid_to END)
       AS memories_current,
       count(CASE WHEN revoked_at IS NULL THEN valid_to END) AS memories_superseded,
       count(revoked_at) AS memories_revoked
FROM memories {where} GROUP BY 1, 2
"""
_CHECKPOINTS = """
SELECT persona_id, project_id, count(*) - count(invalidated_at) AS checkpoints_valid,
       count(invalidated_at) AS checkpoints_invalidated
FROM checkpoints {where} GROUP BY 1, 2
"""


def scopes(db: Connection, only: Scope | None = None) -> list[ScopeStats]:
    """Every scope that has events (or just ``only``), sorted, with its counts; one read snapshot."""
    where = "WHERE persona_id = ? AND project_id = ?" if only else ""
    params: tuple[Any, ...] = (only.persona_id, only.project_id) if only else ()
    found: dict[tuple[str, str], dict[str, Any]] = {}
    with db.read():
        for row in db.query(
            f"SELECT persona_id, project_id, events, pending, failed FROM scope_counts {where}", params
        ):
            if row["events"]:
                found[(row["persona_id"], row["project_id"])] = {
                    "events": row["events"],
                    "extraction_pending": row["pending"],
                    "extraction_failed": row["failed"],
                }
        for sql in (_MEMORIES, _CHECKPOINTS):
            for row in db.query(sql.format(where=where), params):
                key = (row.pop("persona_id"), row.pop("project_id"))
                if key in found:
                    found[key].update(row)
    return [ScopeStats(persona, project, **values) for (persona, project), values in sorted(found.items())]
