"""Counts per scope for `memlikehuman stats`: what the archive holds and what is still to do."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from .. import validate
from ..archive import alias_evidence, timeline
from ..archive.backend import backend_of
from ..archive.connection import Connection
from ..records import Scope, SpeakerAlias


@dataclass(frozen=True)
class ScopeStats:
    """The counts of one (persona, project) scope."""

    persona_id: str
    project_id: str
    events: int = 0
    extraction_pending: int = 0
    extraction_failed: int = 0
    memories_current: int = 0
    memories_superseded: int = 0
    memories_revoked: int = 0
    checkpoints_valid: int = 0
    checkpoints_invalidated: int = 0
    # events and memories without a vector of the configured embedder; None without an embedder
    vectors_missing: int | None = None
    # pending events being extracted right now (a live claim, migration m006); also in extraction_pending
    extraction_in_flight: int = 0
    # the names people use for the scope's speakers, learned from turns that use them in address
    aliases: tuple[SpeakerAlias, ...] = ()


@dataclass(frozen=True)
class ArchiveStats:
    path: str
    file_bytes: int  # the database file
    wal_bytes: int  # its write-ahead log
    free_bytes: int  # unused pages inside the file
    vector_model: str | None
    scopes: tuple[ScopeStats, ...]
    # what stands in the way of extraction (a sampling extractor whose client offers none)
    warnings: tuple[str, ...] = ()

    def totals(self) -> ScopeStats:
        """The sum over every listed scope (persona_id and project_id are '*'; no aliases)."""
        sums: dict[str, Any] = {}
        for item in fields(ScopeStats)[2:]:
            if item.name == "aliases":
                continue
            values = [getattr(scope, item.name) for scope in self.scopes]
            sums[item.name] = None if None in values else sum(values)
        return ScopeStats("*", "*", **sums)


# Each query yields (persona_id, project_id, column, count) rows for its part of ScopeStats.
_QUERIES = (
    """SELECT persona_id, project_id, 'events' AS name, count(*) AS n FROM events {where} GROUP BY 1, 2
       UNION ALL
       SELECT persona_id, project_id, 'extraction_' || extraction_state, count(*) FROM events {where}
       {and} extraction_state IN ('pending', 'failed') GROUP BY 1, 2, 3""",
    """SELECT persona_id, project_id, 'extraction_in_flight' AS name, count(*) AS n FROM extraction_claims c
       {where} {and} claimed_until >= unixepoch('subsec') AND EXISTS (SELECT 1 FROM events e
       WHERE e.sequence = c.event_sequence AND e.extraction_state = 'pending') GROUP BY 1, 2""",
    f"""SELECT persona_id, project_id, 'memories_' || {timeline.status_sql("memories")} AS name, count(*) AS n
       FROM memories {{where}} GROUP BY 1, 2, 3""",
    """SELECT persona_id, project_id,
              CASE WHEN invalidated_at IS NULL THEN 'checkpoints_valid' ELSE 'checkpoints_invalidated' END AS name,
              count(*) AS n
       FROM checkpoints {where} GROUP BY 1, 2, 3""",
)
# The indexer's rule: an item lacks a vector when it has none, or one of another model.
_VECTORS_MISSING = """
SELECT e.persona_id, e.project_id, 'vectors_missing' AS name, count(*) AS n
FROM events e LEFT JOIN event_vectors v ON v.event_sequence = e.sequence
WHERE (v.event_sequence IS NULL OR v.model != :model) {and_e} GROUP BY 1, 2
UNION ALL
SELECT m.persona_id, m.project_id, 'vectors_missing', count(*)
FROM memories m LEFT JOIN memory_vectors v ON v.memory_rowid = m.id
WHERE (v.memory_rowid IS NULL OR v.model != :model) {and_m} GROUP BY 1, 2
"""


def _filter(alias: str, persona_id: str | None, project_id: str | None) -> str:
    clauses = []
    if persona_id is not None:
        clauses.append(f"{alias}persona_id = :persona")
    if project_id is not None:
        clauses.append(f"{alias}project_id = :project")
    return " AND ".join(clauses)


def collect(
    db: Connection, *, vector_model: str | None, persona_id: str | None = None, project_id: str | None = None
) -> ArchiveStats:
    """Counts for every scope of the archive, or those of one persona and/or project.

    ``vector_model`` is the model ID of the configured embedder (None: no embedder, no vector count).
    Raises InvalidArgument for a malformed persona or project ID.
    """
    if persona_id is not None:
        validate.persona_id(persona_id)
    if project_id is not None:
        validate.identifier(project_id, "project_id")
    params = {"persona": persona_id, "project": project_id, "model": vector_model}
    condition = _filter("", persona_id, project_id)
    where, and_ = (f"WHERE {condition}", "AND") if condition else ("", "WHERE")
    counts: dict[Scope, dict[str, int]] = {}
    with db.read():
        sql = [query.format(where=where, **{"and": and_}) for query in _QUERIES]
        if vector_model is not None:
            and_e, and_m = (_filter(alias, persona_id, project_id) for alias in ("e.", "m."))
            sql.append(
                _VECTORS_MISSING.format(and_e=f"AND {and_e}" if and_e else "", and_m=f"AND {and_m}" if and_m else "")
            )
        for query in sql:
            for row in db.query(query, params):
                scope = counts.setdefault(Scope(row["persona_id"], row["project_id"]), {})
                scope[row["name"]] = scope.get(row["name"], 0) + row["n"]
        aliases = alias_evidence.aliases_by_scope(db, persona_id, project_id)
        file_bytes, wal_bytes, free = _sizes(db)
    scopes = tuple(
        ScopeStats(
            scope.persona_id,
            scope.project_id,
            **{**({"vectors_missing": 0} if vector_model is not None else {}), **values},
            aliases=tuple(aliases.get(scope, ())),
        )
        for scope, values in sorted(counts.items(), key=lambda item: (item[0].persona_id, item[0].project_id))
    )
    return ArchiveStats(
        path=db.label,
        file_bytes=file_bytes,
        wal_bytes=wal_bytes,
        free_bytes=free,
        vector_model=vector_model,
        scopes=scopes,
    )


def _sizes(db: Connection) -> tuple[int, int, int]:
    """(file, WAL, free bytes): of the SQLite file; of the database on PostgreSQL (no WAL or free list of its own)."""
    return backend_of(db).sizes(db)
