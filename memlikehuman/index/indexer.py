"""Embedding events and memories after they are committed, off the caller's critical path.

`Indexer` is the engine's background thread: `memory_record` only wakes it, so recording never
waits for an embedder. It embeds items that have no vector at all, newest first. Items whose
vector was made by another model are left to `index_pending` (the `reindex` command), because
re-embedding a whole archive is a deliberate, long job. Recall counts both as missing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..archive.connection import Connection, Row
from ..errors import InvalidArgument, MemLikeHumanError
from ..providers.base import Embedder
from ..providers.priority import lower_thread_priority
from ..records import Kind, Scope
from . import vectors

if TYPE_CHECKING:
    import numpy as np

    from ..config import Settings
    from .vectors import VectorCache
else:
    from ..providers.lazy_numpy import np  # numpy stays unimported on the hooks' path

log = logging.getLogger("memlikehuman.indexer")

BACKGROUND_BATCH = 16
SYNC_BATCH = 64
SCAN_CHUNK = 5_000
SLICE_PAUSE = 0.001
# The tail of the previous event of the session that goes into an event's passage: replies
# ("Yes, last Friday!") carry their subject in the turn before. Only another speaker's turn: notes of
# one speaker in a row are statements of their own, and a neighbour's tail pulled one toward the
# other's meaning (docs/decisions/2026-11-30-passage-with-previous-turn.md; LoCoMo's turns always
# alternate, its recall is the same).
PASSAGE_CONTEXT_CHARS = 150
RETRY_SECONDS = 60.0
STOP_SECONDS = 0.5
# How often the background thread looks below its floors again (vectors deleted by other code,
# e.g. when forgetting changes a neighbour's context, are then re-made).
RESCAN_SECONDS = 600.0
Progress = Callable[[int, int], None]

_EVENT_COLUMNS = """
SELECT e.sequence AS id, e.persona_id, e.project_id, e.source, e.text,
       (SELECT group_concat(c.label, '; ') FROM cues c WHERE c.event_sequence = e.sequence) AS labels,
       (SELECT CASE WHEN p.source != e.source THEN p.source || ': ' || substr(p.text, -{context}) END FROM events p
         WHERE p.persona_id = e.persona_id AND p.project_id = e.project_id AND p.session_id = e.session_id
           AND p.sequence < e.sequence AND p.kind = 'record' ORDER BY p.sequence DESC LIMIT 1) AS previous
""".replace("{context}", str(PASSAGE_CONTEXT_CHARS))
_EVENTS_SQL = (
    _EVENT_COLUMNS
    + """FROM events e LEFT JOIN event_vectors v ON v.event_sequence = e.sequence
WHERE {missing} AND e.sequence > ? AND e.sequence <= ? ORDER BY e.sequence DESC LIMIT ?
"""
)
# What each passage would be now, read inside the write: the embedding ran outside any transaction.
_CURRENT_SQL = {
    "event": _EVENT_COLUMNS + "FROM events e WHERE e.sequence IN ({ids})",
    "memory": "SELECT m.id AS id, NULL AS source, m.content AS text, NULL AS labels, NULL AS previous"
    " FROM memories m WHERE m.id IN ({ids})",
}

_MEMORIES_SQL = """
SELECT m.id AS id, m.persona_id, m.project_id, e.source, m.content AS text, NULL AS labels, NULL AS previous
FROM memories m JOIN events e ON e.sequence = m.event_sequence
LEFT JOIN memory_vectors v ON v.memory_rowid = m.id
WHERE {missing} AND m.id > ? AND m.id <= ? ORDER BY m.id DESC LIMIT ?
"""

# An upsert, not INSERT OR REPLACE: REPLACE's implicit delete would bypass the delete trigger
# that keeps scope_vector_counts exact (migration m003).
_WRITE_SQL = {
    "event": "INSERT INTO event_vectors (event_sequence, model, dim, vector)"
    " SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM events WHERE sequence = ?)"
    " ON CONFLICT (event_sequence) DO UPDATE SET model = excluded.model, dim = excluded.dim, vector = excluded.vector",
    "memory": "INSERT INTO memory_vectors (memory_rowid, model, dim, vector)"
    " SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?)"
    " ON CONFLICT (memory_rowid) DO UPDATE SET model = excluded.model, dim = excluded.dim, vector = excluded.vector",
}

_COUNT_SQL = {
    "event": "SELECT count(*) FROM events e LEFT JOIN event_vectors v ON v.event_sequence = e.sequence"
    " WHERE v.event_sequence IS NULL OR v.model != ?",
    "memory": "SELECT count(*) FROM memories m LEFT JOIN memory_vectors v ON v.memory_rowid = m.id"
    " WHERE v.memory_rowid IS NULL OR v.model != ?",
}


def event_passage(source: str, text: str, labels: str | None, previous: str | None) -> str:
    """What is embedded for an event: the previous turn's tail, the speaker, the text, photo labels."""
    parts = [previous] if previous else []
    parts.append(f"{source}: {text}")
    if labels:
        parts.append(f"[{labels}]")
    return "\n".join(parts)


def _passage(kind: Kind, row: Row) -> str:
    if kind == "memory":
        return str(row["text"])
    return event_passage(row["source"], row["text"], row["labels"], row["previous"])


@dataclass(frozen=True)
class _Batch:
    kind: Kind
    rows: list[Row]


def _select(db: Connection, kind: Kind, model: str, floor: int, ceiling: int, limit: int, *, any_model: bool) -> _Batch:
    """Up to `limit` items in (floor, ceiling], newest first, lacking a vector (of this model, if not any_model)."""
    column = "v.event_sequence" if kind == "event" else "v.memory_rowid"
    missing = f"{column} IS NULL" if any_model else f"({column} IS NULL OR v.model != ?)"
    sql = (_EVENTS_SQL if kind == "event" else _MEMORIES_SQL).replace("{missing}", missing)
    bounds = (floor, ceiling, limit)
    params: tuple[Any, ...] = bounds if any_model else (model, *bounds)
    return _Batch(kind, db.query(sql, params))


def _store(db: Connection, cache: VectorCache, embedder: Embedder, batch: _Batch) -> int:
    """Embed a batch (outside any transaction), write what is still current, and tell the vector cache.

    A forget may commit while the batch is embedded (this process's or another's): an item gone, or
    an event whose passage carried the forgotten turn's tail, is not written (the walk makes the
    passage again later). Returns how many vectors were written."""
    passages = [_passage(batch.kind, row) for row in batch.rows]
    rows = embedder.embed(passages, "passage")
    if rows.shape[0] != len(batch.rows):
        raise MemLikeHumanError(f"the embedder returned {rows.shape[0]} vectors for {len(batch.rows)} texts")
    model, dim = embedder.model_id, int(rows.shape[1])
    ids = [row["id"] for row in batch.rows]
    with db.write() as conn:
        sql = _CURRENT_SQL[batch.kind].replace("{ids}", ",".join("?" * len(ids)))
        now = {row["id"]: _passage(batch.kind, row) for row in conn.execute(sql, ids).fetchall()}
        written = [i for i, row in enumerate(batch.rows) if now.get(row["id"]) == passages[i]]
        for i in written:
            conn.execute(_WRITE_SQL[batch.kind], (ids[i], model, dim, vectors.encode(rows[i]), ids[i]))
    by_scope: dict[Scope, list[int]] = {}
    for i in written:
        row = batch.rows[i]
        by_scope.setdefault(Scope(row["persona_id"], row["project_id"]), []).append(i)
    for scope, positions in by_scope.items():
        cache.add(batch.kind, model, scope, [ids[i] for i in positions], rows[np.asarray(positions)])
    return len(written)


def _top(db: Connection, kind: Kind) -> int:
    """The newest event sequence or memory rowid (0 when there is none)."""
    sql = "SELECT max(sequence) FROM events" if kind == "event" else "SELECT max(id) FROM memories"
    return int(db.scalar(sql) or 0)


def newest(db: Connection) -> tuple[int, int]:
    """The newest event sequence and memory rowid, read in one snapshot (0 where there is none)."""
    with db.read():
        return _top(db, "event"), _top(db, "memory")


def _events_without_vectors(db: Connection) -> int:
    """Events of every scope without a vector of any model (from the trigger-kept counts, m003)."""
    sql = "SELECT (SELECT total(events) FROM scope_counts) - (SELECT total(events) FROM scope_vector_counts)"
    return int(db.scalar(sql) or 0)


def count_missing(db: Connection, model: str) -> int:
    """Events and memories of every scope without a vector of `model`."""
    return sum(int(db.scalar(_COUNT_SQL[kind], (model,)) or 0) for kind in ("event", "memory"))


def index_pending(indexer: Indexer, progress: Progress | None = None) -> int:
    """Embed every event and memory lacking a vector of the configured model; return how many.

    Synchronous (for `reindex` and benchmarks). Vectors of another model are replaced.
    Raises InvalidArgument when no embedder is configured, Unavailable when it fails.
    """
    db = indexer.db
    embedder = indexer.embedder()
    if embedder is None:
        raise InvalidArgument("no embedder is configured (MEMLIKEHUMAN_EMBEDDER=none): set it to local or openai")
    total = count_missing(db, embedder.model_id)
    done = 0
    if progress:
        progress(done, total)
    for kind in ("event", "memory"):
        while True:
            with indexer.lock:
                batch = _select(db, kind, embedder.model_id, 0, _top(db, kind), SYNC_BATCH, any_model=False)
                if not batch.rows:
                    break
                done += _store(db, indexer.cache, embedder, batch)
            if progress:
                progress(done, max(total, done))
    return done


class Indexer:
    """The background thread that embeds new events and memories after their commit.

    Built from the pieces it needs: the archive, the vector cache it keeps current, the settings and
    a function returning the process's one embedder (None when none is configured). It walks the
    archive for items without a vector in slices of ``scan_chunk`` ids.
    """

    def __init__(
        self,
        db: Connection,
        cache: VectorCache,
        settings: Settings,
        embedder: Callable[[], Embedder | None],
        *,
        scan_chunk: int = SCAN_CHUNK,
    ) -> None:
        self.db, self.cache, self.settings, self.embedder = db, cache, settings, embedder
        self.scan_chunk = scan_chunk
        #: held while one batch is selected, embedded and written: no item is embedded twice
        self.lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        # Everything at or below a floor has a vector: later scans start above it.
        self._floors = {"event": 0, "memory": 0}
        self._rescan_at = 0.0
        self._failing = False
        self._done = threading.Condition()
        self._requested = 0
        self._completed = 0

    def notify(self) -> None:
        """Ask for new items to be embedded soon; returns at once."""
        if self.settings.embedder == "none" or self._stopping:
            return
        with self._done:
            self._requested += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="memlikehuman-indexer", daemon=True)
                self._thread.start()
        self._wake.set()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every notify so far has been worked off (or has failed); False on timeout."""
        with self._done:
            target = self._requested
            return self._done.wait_for(lambda: self._completed >= target, timeout)

    def close(self) -> None:
        """Stop the thread, waiting STOP_SECONDS at most.

        The engine stops its embedder first (Embedder.close): the local one ends the batch in
        progress at once, unwritten (its items are embedded by the next process). A remote call runs
        on to its timeout in the thread (a daemon), which then finds the archive closed.
        """
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=STOP_SECONDS)

    def _run(self) -> None:
        lower_thread_priority()  # local.py starts the engine's own workers at this priority too
        while not self._stopping:
            self._wake.wait(timeout=RETRY_SECONDS if self._failing else None)
            self._wake.clear()
            if self._stopping:
                return
            with self._done:
                target = self._requested
            try:
                self._drain()
                self._failing = False
            except Exception as exc:  # the thread's top level: log, retry later, never crash the server
                # Stopping: the embedder or the archive closed under the batch, which is embedded later.
                if not self._failing and not self._stopping:
                    log.warning("embedding new events failed, retrying every %ds: %s", RETRY_SECONDS, exc)
                self._failing = True
            with self._done:
                self._completed = max(self._completed, target)
                self._done.notify_all()

    def _drain(self) -> None:
        # The engine's embedder, shared with queries: one model per process (the local one
        # interleaves a waiting query between short slices of a batch, see providers/local.py).
        embedder = self.embedder()
        if embedder is None:
            return
        if time.monotonic() >= self._rescan_at:
            self._floors = {"event": 0, "memory": 0}
            self._rescan_at = time.monotonic() + RESCAN_SECONDS
        for kind in ("event", "memory"):
            self._drain_kind(embedder, kind)

    def _drain_kind(self, embedder: Embedder, kind: Kind) -> None:
        """Embed what lacks a vector between the floor and the newest item, newest first.

        The range is walked in slices of scan_chunk ids: one query over 100k embedded events with nothing
        to find took 6 s on a cold cache, holding the archive (every write waited); a slice takes ms.
        Event counts kept by triggers say how many lack a vector: the walk stops once they are found
        (new events sit at the top, so a million older ones are not read for nothing).
        """
        floor = self._floors[kind]
        with self.db.read():  # one snapshot: the count is of events up to top
            top = _top(self.db, kind)
            remaining = _events_without_vectors(self.db) if kind == "event" else None
        ceiling = top
        while ceiling > floor and remaining != 0 and not self._stopping:
            low = max(floor, ceiling - self.scan_chunk)
            with self.lock:
                batch = _select(self.db, kind, embedder.model_id, low, ceiling, BACKGROUND_BATCH, any_model=True)
                if batch.rows:
                    _store(self.db, self.cache, embedder, batch)
            if remaining is not None:
                remaining = max(0, remaining - len(batch.rows))
            # A full batch may have more below it in the slice; a short one emptied the slice.
            ceiling = min(row["id"] for row in batch.rows) - 1 if len(batch.rows) == BACKGROUND_BATCH else low
            time.sleep(SLICE_PAUSE)  # Python locks are not fair: let a waiting memory_record in
        if not self._stopping:
            self._floors[kind] = max(self._floors[kind], top)
