"""Vectors: float32 BLOB encoding and exact top-k over in-memory matrices.

Brute-force cosine over a numpy matrix is exact and fast far beyond a personal archive
(100k x 384 in a few milliseconds), so there is no approximate index to keep consistent.
One matrix per (table, model, scope) is loaded from SQLite on first use and then kept current
in place: the indexer adds what it writes, forgotten rows are dropped when recall meets them,
and after a commit by another process (seen through ``Connection.data_version``) an event matrix is
brought up to date by the rows added since, when the scope lost no event and the counts agree,
and reloaded otherwise (a hook's recorded prompt must not cost the server a full reload).
Vectors of another model are never loaded: they count as missing.

Where the archive's engine searches vectors itself (PostgreSQL with pgvector: archive/backend.py's
``vector_index``), ``search_many`` and ``cosines`` ask it and no matrix is loaded at all.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..archive.backend import VectorIndex, backend_of
from ..archive.connection import Connection, Transaction
from ..records import Kind, Scope

if TYPE_CHECKING:
    import numpy as np
else:
    from ..providers.lazy_numpy import np  # numpy stays unimported on the hooks' path

# {what} is "<id>, <vector>" or "v.dim, count(*)"; only BLOBs that hold `dim` float32 values count.
_LOAD_SQL = {
    "event": (
        "SELECT {what} FROM events e JOIN event_vectors v ON v.event_sequence = e.sequence"
        " WHERE e.persona_id = ? AND e.project_id = ? AND v.model = ? AND length(v.vector) = 4 * v.dim {rest}"
    ),
    "memory": (
        "SELECT {what} FROM memories m JOIN memory_vectors v ON v.memory_rowid = m.id"
        " WHERE m.persona_id = ? AND m.project_id = ? AND v.model = ? AND length(v.vector) = 4 * v.dim {rest}"
    ),
}
_LOAD_ROWS = {"event": "e.sequence, v.vector", "memory": "m.id, v.vector"}
_LOAD_ORDER = {"event": "ORDER BY e.sequence", "memory": "ORDER BY m.id"}


def encode(vector: np.ndarray) -> bytes:
    """A vector as a little-endian float32 BLOB."""
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def decode(blob: bytes, dim: int) -> np.ndarray:
    """The float32 vector stored in a BLOB; ValueError when its size does not match dim."""
    if len(blob) != 4 * dim:
        raise ValueError(f"vector BLOB of {len(blob)} bytes does not hold {dim} float32 values")
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


@dataclass(frozen=True)
class Hits:
    """Top-k of one scan: row IDs and cosine scores, best first."""

    ids: np.ndarray
    scores: np.ndarray
    scanned: int
    skipped: int = 0  # older rows outside the window


class _Matrix:
    """The vectors of one (kind, model, scope): IDs ascending, rows in a growable buffer."""

    def __init__(self, ids: np.ndarray, rows: np.ndarray, events: tuple[int, int] = (0, 0)) -> None:
        # The scope's newest event sequence and event count when the rows were read: an event at or
        # below that sequence gone since means something was forgotten (rows changed in place).
        self.events = events
        self.version: int | None = None  # the data_version the rows were last read or checked at
        self.ids = ids.astype(np.int64)
        self.rows = rows.astype(np.float32, copy=False)
        self.n = len(self.ids)
        self.sorted = bool(self.n < 2 or (np.diff(self.ids) > 0).all())
        if not self.sorted:  # view() takes the newest as the last rows, cosines() searches the IDs
            self._sort()

    def add(self, ids: np.ndarray, rows: np.ndarray) -> None:
        known = np.isin(ids, self.ids[: self.n])
        if known.any():
            self._overwrite(ids[known], rows[known])
            ids, rows = ids[~known], rows[~known]
        if not len(ids) or (self.n and rows.shape[1] != self.rows.shape[1]):
            return
        if self.n + len(ids) > len(self.ids) or rows.shape[1] != self.rows.shape[1]:
            self._grow(self.n + len(ids), rows.shape[1])
        # Unsorted when the batch starts at or below the last row, or is not ascending itself (the indexer
        # hands its batches newest first).
        if (self.n and ids.min() <= self.ids[self.n - 1]) or (len(ids) > 1 and (np.diff(ids) <= 0).any()):
            self.sorted = False
        self.ids[self.n : self.n + len(ids)] = ids
        self.rows[self.n : self.n + len(ids)] = rows
        self.n += len(ids)
        if not self.sorted:
            self._sort()

    def discard(self, ids: Sequence[int]) -> None:
        keep = ~np.isin(self.ids[: self.n], np.asarray(ids, dtype=np.int64))
        self.ids = self.ids[: self.n][keep].copy()
        self.rows = self.rows[: self.n][keep].copy()
        self.n = len(self.ids)

    def view(self, window: int | None) -> tuple[np.ndarray, np.ndarray]:
        """The (ids, rows) of the whole matrix, or of its `window` highest IDs (the most recent)."""
        start = 0 if window is None else max(0, self.n - window)
        return self.ids[start : self.n], self.rows[start : self.n]

    def _overwrite(self, ids: np.ndarray, rows: np.ndarray) -> None:
        position = {int(v): i for i, v in enumerate(self.ids[: self.n])}
        for row_id, row in zip(ids, rows, strict=True):
            self.rows[position[int(row_id)]] = row

    def _grow(self, needed: int, dim: int) -> None:
        capacity = max(needed, int(len(self.ids) * 1.5) + 16)
        ids = np.zeros(capacity, dtype=np.int64)
        rows = np.zeros((capacity, dim), dtype=np.float32)
        ids[: self.n] = self.ids[: self.n]
        if self.n:
            rows[: self.n] = self.rows[: self.n]
        self.ids, self.rows = ids, rows

    def _sort(self) -> None:
        # New arrays, not an in-place shuffle: a concurrent search may be reading the old ones.
        order = np.argsort(self.ids[: self.n], kind="stable")
        self.ids = self.ids[: self.n][order]
        self.rows = self.rows[: self.n][order]
        self.sorted = True


class VectorCache:
    """In-memory matrices per (kind, model, scope), shared by the server's worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._matrices: dict[tuple[Kind, str, Scope], _Matrix] = {}

    def search(
        self,
        db: Connection,
        kind: Kind,
        model: str,
        scope: Scope,
        query: np.ndarray,
        k: int,
        *,
        window: int | None = None,
        allowed: np.ndarray | None = None,
    ) -> Hits:
        """The k rows most similar to the unit vector `query` (cosine), best first.

        `window` limits the scan to the most recent rows; `allowed` to the given IDs.
        """
        return self.search_many(db, kind, model, scope, query.reshape(1, -1), [k], window=window, allowed=allowed)[0]

    def search_many(
        self,
        db: Connection,
        kind: Kind,
        model: str,
        scope: Scope,
        queries: np.ndarray,
        ks: Sequence[int],
        *,
        window: int | None = None,
        allowed: np.ndarray | None = None,
    ) -> list[Hits]:
        """search() for several unit vectors (the rows of `queries`, the i-th wanting ks[i] rows) on one
        snapshot and filter of the matrix (a recall's phrasings)."""
        index = backend_of(db).vector_index(db)
        if index is not None:
            return _asked(index, db, kind, model, scope, queries, ks, window, allowed)
        ids, rows, older = self._snapshot(db, kind, model, scope, window)
        skipped = len(older)
        if allowed is not None:
            # Counted among what the filter admits: a session's 5 events are not "20,000 skipped".
            skipped = int(np.isin(older, allowed).sum()) if len(older) else 0
            mask = np.isin(ids, allowed) if len(ids) else np.zeros(0, dtype=bool)
            ids, rows = ids[mask], rows[mask]
        if not len(ids) or rows.shape[1] != queries.shape[1]:
            empty = Hits(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32), 0, skipped)
            return [empty for _ in ks]
        # One product per query: NumPy's matrix-matrix product of a tall matrix by a few columns took
        # twice as long as that many matrix-vector products (20,000 x 384 by 5: 2.6 ms against 1.3).
        queries = queries.astype(np.float32, copy=False)
        return [_top(ids, rows @ query, k, skipped) for query, k in zip(queries, ks, strict=True)]

    def cosines(
        self, db: Connection, kind: Kind, model: str, scope: Scope, query: np.ndarray, wanted: Sequence[int]
    ) -> dict[int, float]:
        """The cosine of the unit vector `query` with each of the `wanted` rows that has a vector."""
        index = backend_of(db).vector_index(db)
        if index is not None:
            return index.cosines(db, kind, model, query.tolist(), list(wanted)) if len(wanted) else {}
        ids, rows, _ = self._snapshot(db, kind, model, scope, None)
        if not len(ids) or not len(wanted) or rows.shape[1] != query.shape[0]:
            return {}
        want = np.asarray(wanted, dtype=np.int64)
        at = np.minimum(np.searchsorted(ids, want), len(ids) - 1)
        found = ids[at] == want
        scores = rows[at[found]] @ query.astype(np.float32, copy=False)
        return dict(zip(want[found].tolist(), scores.tolist(), strict=True))

    def add(self, kind: Kind, model: str, scope: Scope, ids: Sequence[int], rows: np.ndarray) -> None:
        """Record vectors just written by this process (a matrix not loaded yet loads them later)."""
        with self._lock:
            matrix = self._matrices.get((kind, model, scope))
            if matrix is not None:
                matrix.add(np.asarray(ids, dtype=np.int64), np.asarray(rows, dtype=np.float32))

    def discard(self, kind: Kind, scope: Scope, ids: Sequence[int]) -> None:
        """Drop rows whose records no longer exist (forgotten), from every model's matrix."""
        with self._lock:
            for (k, _, s), matrix in self._matrices.items():
                if k == kind and s == scope:
                    matrix.discard(ids)

    def clear(self) -> None:
        with self._lock:
            self._matrices.clear()

    def _snapshot(
        self, db: Connection, kind: Kind, model: str, scope: Scope, window: int | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The (ids, rows) inside the window, and the IDs of the older rows outside it."""
        version = db.data_version()  # changes only when another connection commits (or writes vectors)
        key = (kind, model, scope)
        with self._lock:
            matrix = self._matrices.get(key)
            if matrix is not None and matrix.version != version:
                matrix = _refreshed(db, kind, model, scope, matrix)
            if matrix is None:
                matrix = _load(db, kind, model, scope)
            matrix.version = version
            self._matrices[key] = matrix
            # Views stay valid: add() writes past n or into rows already scored (same values then).
            ids, rows = matrix.view(window)
            return ids, rows, matrix.ids[: matrix.n - len(ids)]


def _asked(
    index: VectorIndex,
    db: Connection,
    kind: Kind,
    model: str,
    scope: Scope,
    queries: np.ndarray,
    ks: Sequence[int],
    window: int | None,
    allowed: np.ndarray | None,
) -> list[Hits]:
    """search_many's answer from the archive's engine (no matrix in this process)."""
    if allowed is not None and not len(allowed):
        empty = Hits(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32), 0, 0)
        return [empty for _ in ks]
    chosen = None if allowed is None else allowed.tolist()
    found, scanned, skipped = index.top(db, kind, model, scope, queries.tolist(), ks, window=window, allowed=chosen)
    return [
        Hits(
            np.fromiter((i for i, _ in pairs), dtype=np.int64, count=len(pairs)),
            np.fromiter((s for _, s in pairs), dtype=np.float32, count=len(pairs)),
            scanned,
            skipped,
        )
        for pairs in found
    ]


def _top(ids: np.ndarray, scores: np.ndarray, k: int, skipped: int) -> Hits:
    """The k best of one query's scores over the rows `ids`, best first."""
    top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
    top = top[np.argsort(-scores[top], kind="stable")]
    return Hits(ids[top], scores[top], len(ids), skipped)


def _load(db: Connection, kind: Kind, model: str, scope: Scope) -> _Matrix:
    """The scope's vectors of `model`, streamed into one preallocated matrix (ascending IDs).

    Rows are read as tuples straight into the matrix: building a dict per row and joining all
    BLOBs first held three copies at once (3.4 GB peak at 1M events instead of the matrix's 1 GB).
    """
    key = (scope.persona_id, scope.project_id, model)
    with db.read():
        dims = db.query(_LOAD_SQL[kind].format(what="v.dim AS dim, count(*) AS n", rest="GROUP BY v.dim"), key)
        if not dims:
            return _Matrix(np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32))
        # A model ID reused with another dimension: keep the most common one.
        common = max(dims, key=lambda r: (r["n"], r["dim"]))
        dim, n = int(common["dim"]), int(common["n"])
        ids = np.empty(n, dtype=np.int64)
        rows = np.empty((n, dim), dtype=np.float32)
        sql = _LOAD_SQL[kind].format(what=_LOAD_ROWS[kind], rest="AND v.dim = ? " + _LOAD_ORDER[kind])
        count = 0
        for count, (row_id, blob) in enumerate(db.stream(sql, (*key, dim)), start=1):
            ids[count - 1] = row_id
            rows[count - 1] = np.frombuffer(blob, dtype="<f4")
        events = _scope_events(db, scope) if kind == "event" else (0, 0)
    return _Matrix(ids[:count], rows[:count], events)


def _refreshed(db: Connection, kind: Kind, model: str, scope: Scope, matrix: _Matrix) -> _Matrix | None:
    """An event matrix brought up to date after another connection's commit: the rows added since
    appended. None (reload it) when the scope lost an event it had (forgetting also deletes the
    vectors of the turns that carried its text, and the indexer writes them again under the same
    IDs), when the scope's vector count disagrees (older events embedded since, another model's
    vectors replaced), and for memory matrices (small, and edited in place)."""
    if kind != "event" or not matrix.rows.shape[1]:
        return None
    newest, count = matrix.events
    key = (scope.persona_id, scope.project_id)
    with db.read():
        events = _scope_events(db, scope)
        added = db.scalar(
            "SELECT count(*) FROM events WHERE persona_id = ? AND project_id = ? AND sequence > ?", (*key, newest)
        )
        if events[1] - int(added or 0) != count:
            return None
        top = int(matrix.ids[matrix.n - 1]) if matrix.n else 0
        rest = "AND v.dim = ? AND e.sequence > ? " + _LOAD_ORDER[kind]
        sql = _LOAD_SQL[kind].format(what=_LOAD_ROWS[kind], rest=rest)
        fresh = list(db.stream(sql, (*key, model, matrix.rows.shape[1], top)))
        stored = _scope_count(db, "scope_vector_counts", (*key, model))
    if fresh:
        ids = np.fromiter((row_id for row_id, _ in fresh), dtype=np.int64, count=len(fresh))
        matrix.add(ids, np.stack([np.frombuffer(blob, dtype="<f4") for _, blob in fresh]))
    if matrix.n != stored:
        return None
    matrix.events = events
    return matrix


def _scope_events(db: Connection, scope: Scope) -> tuple[int, int]:
    """The scope's newest event sequence and its number of events (read inside the caller's transaction)."""
    key = (scope.persona_id, scope.project_id)
    newest = db.scalar("SELECT max(sequence) FROM events WHERE persona_id = ? AND project_id = ?", key)
    return int(newest or 0), _scope_count(db, "scope_counts", key)


def _scope_count(db: Connection, table: str, key: tuple[str, ...]) -> int:
    """The `events` count of a scope (and model) kept exact by triggers (migration m003); 0 without a row."""
    where = " AND ".join(f"{name} = ?" for name in ("persona_id", "project_id", "model")[: len(key)])
    return int(db.scalar(f"SELECT events FROM {table} WHERE {where}", key) or 0)


def delete_event_vectors(conn: Transaction, sequences: Sequence[int]) -> None:
    """Delete the stored vectors of these events (forgetting changed the context they embedded)."""
    conn.execute(
        f"DELETE FROM event_vectors WHERE event_sequence IN ({','.join('?' * len(sequences))})", list(sequences)
    )
