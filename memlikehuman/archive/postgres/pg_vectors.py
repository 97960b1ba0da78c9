"""Vectors searched by PostgreSQL itself where the server has pgvector: HNSW (cosine), no matrix in the process.

Where migration p006 (or ``adopt``, once the extension is installed later) gave the vector tables their
``embedding vector`` column, every vector lives there (a trigger moves what is written as float32 bytea)
and ``PgVectors`` answers the top-k and the cosines that index/vectors.py would otherwise compute over
an in-memory matrix of the whole scope:

- ``deep`` (no window, no ID filter, an indexed dimension): ``ORDER BY embedding <=> query LIMIT k`` over
  the HNSW index of the dimension, the scope and model filtered in the same statement. pgvector 0.8's
  iterative scan (``relaxed_order``) goes on through the graph until k rows pass the filter, so a
  scope holding a small part of the archive still gets its k rows; they come back nearly in order and
  are sorted here by their exact distance. ``ef_search`` is 3k + 100 (at most 1,000).
- ``semantic``'s window (the most recent N vectors of the scope, Settings.semantic_window) and any ID
  filter (session_id, cue_key): exact, the distance of every row inside, in one statement for all
  phrasings. The window keeps its meaning exactly: the N rows of highest ID.
- a dimension without an HNSW index (pg_schema.PGVECTOR_DIMS): exact too.

Without the extension the archive keeps the bytea path (index/vectors.py's matrices): ADVICE says how
to install pgvector, once on stderr per process and in the doctor.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from ...errors import MemLikeHumanError
from ..connection import Connection, Transaction
from . import pg_schema

if TYPE_CHECKING:
    from ...records import Check, Kind, Scope

log = logging.getLogger("memlikehuman")

# How many candidates the HNSW search keeps: hnsw.ef_search = EF_FACTOR * k + EF_MARGIN, at most EF_MAX
# (pgvector's limit); recall@10 against exact search per setting in docs/decisions/2026-12-07-pgvector.md.
EF_FACTOR = 3
EF_MARGIN = 100
EF_MAX = 1_000
# How many index tuples an iterative scan visits at most before it gives up on a filter.
MAX_SCAN_TUPLES = 50_000
ADVICE = (
    "the PostgreSQL archive has no pgvector, so every server keeps the scope's vectors in its own memory"
    " and scans them: install pgvector on the database server (Debian/Ubuntu: apt install"
    " postgresql-NN-pgvector; RHEL: dnf install pgvector_NN), run CREATE EXTENSION vector in the archive's"
    " database as a superuser, and open the archive once as the role that owns its tables (docs/team.md)"
)
# Per kind: the vector table, its key, the record table and the record's key.
_TABLES = {
    "event": ("event_vectors", "event_sequence", "events", "sequence"),
    "memory": ("memory_vectors", "memory_rowid", "memories", "id"),
}
_COLUMN = (
    "SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('event_vectors') AND attname = 'embedding'"
    " AND NOT attisdropped"
)
# The extension is in the database, or the role may create it: a superuser, or a trusted extension.
_MAY_ADOPT = (
    "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') OR EXISTS (SELECT 1 FROM"
    " pg_available_extension_versions WHERE name = 'vector' AND (trusted OR (SELECT rolsuper FROM pg_roles"
    " WHERE rolname = current_user))) AS may"
)
# For this transaction only: the candidates HNSW keeps, and an iterative scan past filtered-out rows.
_SETTINGS = (
    "SELECT set_config('hnsw.ef_search', ?, true), set_config('hnsw.iterative_scan', 'relaxed_order', true),"
    " set_config('hnsw.max_scan_tuples', ?, true)"
)
_warned = False


class _Flagged(Connection, Protocol):
    """A PostgreSQL archive (pg.PgDatabase), which remembers whether it has the vector column."""

    pgvector: bool | None


def _literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def present(db: Connection) -> bool:
    """Whether this archive keeps its vectors in pgvector's column (asked once per open archive)."""
    flagged = cast(_Flagged, db)  # the PostgreSQL backend is only ever given its own archive
    if flagged.pgvector is None:
        flagged.pgvector = bool(db.scalar(f"SELECT EXISTS ({_COLUMN}) AS present"))
    return flagged.pgvector


def warn_once() -> None:
    """ADVICE on stderr (the process's log), once per process."""
    global _warned
    if not _warned:
        _warned = True
        log.warning("%s", ADVICE)


def check(db: Connection) -> Check:
    from ...records import Check

    if present(db):
        version = db.scalar("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        return Check("vector index", "ok", f"pgvector {version}: PostgreSQL searches the vectors (HNSW, cosine)")
    return Check("vector index", "warn", ADVICE)


def adopt(db: Connection) -> bool:
    """Give an archive made before pgvector was installed its vector column (what p006 does where the
    extension exists): when the extension exists now or the role may create it, and the role owns the
    tables. True when the archive uses pgvector afterwards."""
    if present(db) or len(db.query("SELECT id FROM schema_migrations WHERE id = 6")) == 0:
        return present(db)
    if not db.scalar(_MAY_ADOPT):  # no write lock taken where nothing can change (most opens)
        return False
    import psycopg

    try:
        with db.write() as conn:
            if conn.execute(_COLUMN).fetchone() is None and pg_schema.pgvector_creatable(conn):
                pg_schema.pgvector_columns(conn)
    except (psycopg.Error, MemLikeHumanError) as exc:  # e.g. a role that does not own the tables (Unavailable)
        log.info("pgvector is installed but the archive's vectors stay in bytea (%s)", exc)
    cast(_Flagged, db).pgvector = None
    return present(db)


class PgVectors:
    """The top-k and cosines of index/vectors.py, answered by PostgreSQL (archive/backend.py: VectorIndex)."""

    def top(
        self,
        db: Connection,
        kind: Kind,
        model: str,
        scope: Scope,
        queries: Sequence[Sequence[float]],
        ks: Sequence[int],
        *,
        window: int | None,
        allowed: Sequence[int] | None,
    ) -> tuple[list[list[tuple[int, float]]], int, int]:
        """Per query its best (id, cosine) pairs, best first; how many rows were searched, and how many
        older ones the window left out (counted among `allowed` when given)."""
        dim = len(queries[0])
        with db.read() as conn:
            total = self._count(conn, kind, model, dim, scope)
            if window is not None and window >= total:
                window = None
            skipped = 0 if window is None else total - window
            scanned = total - skipped
            if allowed is not None:
                scanned, skipped = self._allowed_counts(conn, kind, model, dim, scope, window, allowed)
            if window is None and allowed is None and dim in pg_schema.PGVECTOR_DIMS:
                found = [
                    self._hnsw(conn, kind, model, dim, scope, query, k) for query, k in zip(queries, ks, strict=True)
                ]
            else:
                found = self._exact(conn, kind, model, dim, scope, queries, ks, window, allowed)
        return found, scanned, skipped

    def cosines(
        self, db: Connection, kind: Kind, model: str, query: Sequence[float], wanted: Sequence[int]
    ) -> dict[int, float]:
        table, key, _, _ = _TABLES[kind]
        sql = (
            f"SELECT v.{key} AS id, 1 - (v.embedding <=> ?::vector) AS score FROM {table} v"
            f" WHERE v.{key} = ANY(?) AND v.model = ? AND v.dim = ? AND v.embedding IS NOT NULL"
        )
        rows = db.query(sql, (_literal(query), list(wanted), model, len(query)))
        return {int(row["id"]): float(row["score"]) for row in rows}

    def _count(self, conn: Transaction, kind: Kind, model: str, dim: int, scope: Scope) -> int:
        table, key, records, record_key = _TABLES[kind]
        sql = (
            f"SELECT count(*) AS n FROM {records} r JOIN {table} v ON v.{key} = r.{record_key}"
            " WHERE r.persona_id = ? AND r.project_id = ? AND v.model = ? AND v.dim = ? AND v.embedding IS NOT NULL"
        )
        if kind == "event":  # kept exact by triggers (scope_vector_counts): no count over a million rows
            sql = "SELECT events AS n FROM scope_vector_counts WHERE persona_id = ? AND project_id = ? AND model = ?"
            row = conn.execute(sql, (scope.persona_id, scope.project_id, model)).fetchone()
            return int(row["n"]) if row else 0
        row = conn.execute(sql, (scope.persona_id, scope.project_id, model, dim)).fetchone()
        return int(row["n"]) if row else 0

    def _rows(self, kind: Kind, window: int | None) -> str:
        """The scope's rows of one model and dimension (the `window` most recent), as (id, embedding)."""
        table, key, records, record_key = _TABLES[kind]
        limit = f" ORDER BY r.{record_key} DESC LIMIT {int(window)}" if window is not None else ""
        return (
            f"SELECT v.{key} AS id, v.embedding FROM {records} r JOIN {table} v ON v.{key} = r.{record_key}"
            " WHERE r.persona_id = ? AND r.project_id = ? AND v.model = ? AND v.dim = ? AND v.embedding IS NOT NULL"
            + limit
        )

    def _hnsw(
        self, conn: Transaction, kind: Kind, model: str, dim: int, scope: Scope, query: Sequence[float], k: int
    ) -> list[tuple[int, float]]:
        table, key, records, record_key = _TABLES[kind]
        conn.execute(_SETTINGS, (str(min(EF_MAX, EF_FACTOR * k + EF_MARGIN)), str(MAX_SCAN_TUPLES)))
        sql = (
            f"SELECT v.{key} AS id, v.embedding::vector({dim}) <=> ?::vector({dim}) AS d"
            f" FROM {table} v JOIN {records} r ON r.{record_key} = v.{key}"
            f" WHERE v.dim = {dim} AND v.model = ? AND r.persona_id = ? AND r.project_id = ?"
            " ORDER BY d LIMIT ?"
        )
        rows = conn.execute(sql, (_literal(query), model, scope.persona_id, scope.project_id, k)).fetchall()
        found = sorted((float(row["d"]), int(row["id"])) for row in rows)
        return [(row_id, 1.0 - d) for d, row_id in found]

    def _exact(
        self,
        conn: Transaction,
        kind: Kind,
        model: str,
        dim: int,
        scope: Scope,
        queries: Sequence[Sequence[float]],
        ks: Sequence[int],
        window: int | None,
        allowed: Sequence[int] | None,
    ) -> list[list[tuple[int, float]]]:
        """Every phrasing's top over the window's (or the whole scope's) rows, in one pass over them."""
        among = " WHERE w.id = ANY(?)" if allowed is not None else ""
        sql = (
            "SELECT i, id, d FROM (SELECT q.i, w.id, w.embedding <=> q.v AS d,"
            " row_number() OVER (PARTITION BY q.i ORDER BY w.embedding <=> q.v, w.id) AS r"
            f" FROM ({self._rows(kind, window)}) w CROSS JOIN unnest(?::vector[]) WITH ORDINALITY AS q(v, i){among}) s"
            " WHERE r <= ? ORDER BY i, d, id"
        )
        params: list[Any] = [scope.persona_id, scope.project_id, model, dim, [_literal(q) for q in queries]]
        if allowed is not None:
            params.append(list(allowed))
        params.append(max(ks))
        found: list[list[tuple[int, float]]] = [[] for _ in queries]
        for row in conn.execute(sql, params).fetchall():
            i = int(row["i"]) - 1
            if len(found[i]) < ks[i]:
                found[i].append((int(row["id"]), 1.0 - float(row["d"])))
        return found

    def _allowed_counts(
        self,
        conn: Transaction,
        kind: Kind,
        model: str,
        dim: int,
        scope: Scope,
        window: int | None,
        allowed: Sequence[int],
    ) -> tuple[int, int]:
        """How many of `allowed` have a vector inside the window, and how many older ones it leaves out."""
        floor = 0
        if window is not None:
            sql = f"SELECT min(id) AS floor FROM ({self._rows(kind, window)}) w"
            row = conn.execute(sql, (scope.persona_id, scope.project_id, model, dim)).fetchone()
            floor = int(row["floor"] or 0)
        table, key, _, _ = _TABLES[kind]
        sql = (
            f"SELECT count(*) FILTER (WHERE v.{key} >= ?) AS inside, count(*) FILTER (WHERE v.{key} < ?) AS older"
            f" FROM {table} v WHERE v.{key} = ANY(?) AND v.model = ? AND v.dim = ? AND v.embedding IS NOT NULL"
        )
        row = conn.execute(sql, (floor, floor, list(allowed), model, dim)).fetchone()
        return int(row["inside"]), int(row["older"])


PG_VECTORS = PgVectors()
