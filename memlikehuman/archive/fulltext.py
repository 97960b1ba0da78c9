"""Full-text rows built from what is stored, and rebuilding the indexes in committed batches.

Two indexes, each a pair of tables (events, memories): the word index ``events_fts`` /
``memories_fts`` and the n-gram index ``events_ngrams`` / ``memories_ngrams``, whose columns hold
the character n-grams of the same values in scripts without spaces between words or with glued
particles (memlikehuman/ngrams.py); and the passage index ``events_passages``, the word index of
each event's passages (text/passages.py), which ranks events in recall: a long message is scored by
the passage that matches best, not as one long document that bm25's length normalisation pushes
down. Its rows are many per event: row ``sequence * PASSAGE_SLOTS + k`` is passage k, each with the
event's attribution and the last PASSAGE_CONTEXT_CHARS of its context. All five are contentless FTS5
tables with secure-delete: the index keeps no copy of the text, so a row is (re)built from the
``events`` and ``memories`` tables, and removing one takes the exact values it was built from (the
FTS5 'delete' command), which also purges its terms from the index b-tree. Every writer builds rows
here: recording, extraction, correction, import, reindex and forgetting, so the values always match.
Every event and memory has a row in every table of its kind (an empty one in the n-gram tables for
Latin-only text; passage 0 in the passage table), so a missing row is found the same way in all of them.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..records import Cue
from ..text import ngrams, passages
from .backend import backend_of
from .connection import Connection, Transaction

if TYPE_CHECKING:
    import logging

    from ..records import RebuildResult

BATCH = 500
Progress = Callable[[int, int], None]

TABLES = {"event": "events_fts", "memory": "memories_fts"}
NGRAM_TABLES = {"event": "events_ngrams", "memory": "memories_ngrams"}
PASSAGES = "events_passages"
ALL_TABLES = (*TABLES.values(), *NGRAM_TABLES.values(), PASSAGES)
_KIND = {table: kind for kinds in (TABLES, NGRAM_TABLES) for kind, table in kinds.items()} | {PASSAGES: "event"}
_COLUMNS = {"event": "text, attribution, context", "memory": "content, attribution"}
_RECORDS = {"event": ("events", "sequence"), "memory": ("memories", "id")}
# Row IDs per event in the passage table: a 200,000-character event has at most ~500 passages (two
# neighbours are together over PASSAGE_CHARS); any beyond the last slot go into it.
PASSAGE_SLOTS = 1024
# archive_meta: the newest event of an archive upgraded to the passage table (m013) while its older
# events still wait for their passage rows (complete_passages); recall ranks by events_fts until then.
PASSAGES_PENDING = "passages_pending_through"


def first_row(table: str, key: str) -> str:
    """SQL for the rowid of a record's (first) row in the table, from the SQL of its key."""
    return f"{key} * {PASSAGE_SLOTS}" if table == PASSAGES else key


def record_of(table: str, rowid: str) -> str:
    """SQL for the record (event sequence, memory ID) a row of the table belongs to, from the SQL of its rowid."""
    return f"{rowid} / {PASSAGE_SLOTS}" if table == PASSAGES else rowid


def passage_rows(sequence: int, values: tuple[str, ...]) -> list[tuple[int, tuple[str, ...]]]:
    """The passage table's rows of an event: (rowid, (passage, attribution, context)), one per passage,
    from the event's row values (event_row); each passage keeps the last PASSAGE_CONTEXT_CHARS of the context."""
    text, attributed, context = values
    cuts = passages.spans(text)
    if len(cuts) > PASSAGE_SLOTS:
        cuts = [*cuts[: PASSAGE_SLOTS - 1], (cuts[PASSAGE_SLOTS - 1][0], len(text))]
    tail = context[-PASSAGE_CONTEXT_CHARS:]
    return [(sequence * PASSAGE_SLOTS + k, (text[start:end], attributed, tail)) for k, (start, end) in enumerate(cuts)]


def _missing_sql(kind: str, tables: Sequence[str], *, limited: bool = True) -> str:
    """Records of this kind above a bound that lack a row in any of the tables, in order.

    Both dialects: no negative LIMIT (PostgreSQL refuses it), and the caller names the subquery.
    """
    records, key = _RECORDS[kind]
    absent = " OR ".join(f"NOT EXISTS (SELECT 1 FROM {t} f WHERE f.rowid = {first_row(t, 'r.' + key)})" for t in tables)
    sql = f"SELECT r.{key} AS id FROM {records} r WHERE r.{key} > ? AND ({absent}) ORDER BY r.{key}"
    return sql + " LIMIT ?" if limited else sql


def _count_missing_sql(table: str) -> str:
    records, key = _RECORDS[_KIND[table]]
    row = first_row(table, f"r.{key}")
    return f"SELECT count(*) FROM {records} r WHERE NOT EXISTS (SELECT 1 FROM {table} f WHERE f.rowid = {row})"


# How much of the session's previous event an event's full-text row carries as `context`.
FULLTEXT_CONTEXT_CHARS = 1_000
# ... and each of its passage rows (migration m014): a reply borrows the words its question ends with,
# not those of a long message's opening. BEAM 1-10 fast R@10 +2.6 (1,000: the words of a 1,000-character
# request lifted every passage of its 4,000-character reply); LoCoMo's turns are shorter.
PASSAGE_CONTEXT_CHARS = 300


def attribution(source: str, cues: Sequence[Cue]) -> str:
    """The searchable attribution of an event: who said it, and its cue keys and labels."""
    parts = [source] + [part for cue in cues for part in (cue.key, cue.label or "")]
    return " ".join(part for part in parts if part)


def memory_attribution(source: str, subject: str | None, kind: str) -> str:
    """The searchable attribution of a memory: its event's speaker, its subject slot and kind."""
    return " ".join(filter(None, [source, subject, kind]))


def event_values(conn: Transaction, sequence: int) -> tuple[str, str, str]:
    """(text, attribution, context) of an event's full-text row, derived from what is stored now.

    The context is the tail of the previous record event of the same session. Whoever changes
    what these values derive from (forgetting the previous event) must unindex first, then reindex.
    """
    row = conn.execute(
        "SELECT persona_id, project_id, session_id, source, text FROM events WHERE sequence = ?", (sequence,)
    ).fetchone()
    cues = [
        Cue(r["kind"], r["key"], r["label"])
        for r in conn.execute(
            "SELECT kind, key, label FROM cues WHERE event_sequence = ? ORDER BY position", (sequence,)
        )
    ]
    previous = previous_text(conn, row["persona_id"], row["project_id"], row["session_id"], sequence)
    return event_row(row["text"], row["source"], cues, previous)


def event_row(text: str, source: str, cues: Sequence[Cue], previous: str | None) -> tuple[str, str, str]:
    """(text, attribution, context) from an event's fields and the text of the session's previous record event."""
    return text, attribution(source, cues), previous[-FULLTEXT_CONTEXT_CHARS:] if previous else ""


def previous_text(conn: Transaction, persona_id: str, project_id: str, session_id: str, sequence: int) -> str | None:
    """The text of the record event of the session just before ``sequence`` (None: there is none)."""
    row = conn.execute(
        "SELECT text FROM events WHERE persona_id = ? AND project_id = ? AND session_id = ? AND sequence < ?"
        " AND kind = 'record' ORDER BY sequence DESC LIMIT 1",
        (persona_id, project_id, session_id, sequence),
    ).fetchone()
    return None if row is None else str(row["text"])


def memory_values(conn: Transaction, rowid: int) -> tuple[str, str]:
    """(content, attribution) of a memory's full-text row."""
    row = conn.execute(
        "SELECT m.content, m.subject, m.kind, e.source FROM memories m JOIN events e ON e.sequence = m.event_sequence"
        " WHERE m.id = ?",
        (rowid,),
    ).fetchone()
    return row["content"], memory_attribution(row["source"], row["subject"], row["kind"])


def _values(conn: Transaction, kind: str, rowid: int) -> tuple[str, ...]:
    return event_values(conn, rowid) if kind == "event" else memory_values(conn, rowid)


def _indexed(conn: Transaction, table: str, record: int) -> bool:
    """Whether the record has its row (its passage 0) in the table."""
    rowid = record * PASSAGE_SLOTS if table == PASSAGES else record
    return conn.execute(f"SELECT 1 FROM {table} WHERE rowid = ?", (rowid,)).fetchone() is not None


def _write(conn: Transaction, table: str, record: int, values: tuple[str, ...], *, delete: bool = False) -> None:
    """Insert (or 'delete') a record's row(s) of a table from its word-index values.

    A record's passage rows are written and deleted together, in one transaction: its passage 0 stands for all.
    """
    if delete and not _indexed(conn, table, record):
        return  # not indexed (a rebuild is still filling the table): a 'delete' of it would corrupt the index
    columns, backend = _COLUMNS[_KIND[table]], backend_of(conn)
    for rowid, row in _rows(table, [(record, values)]):
        backend.fulltext_write(conn, table, columns, rowid, row, delete=delete)


def _write_many(conn: Transaction, table: str, rows: Sequence[tuple[int, tuple[str, ...]]]) -> None:
    """_write() of many new records in as few statements as the backend can."""
    backend_of(conn).fulltext_write_many(conn, table, _COLUMNS[_KIND[table]], _rows(table, rows))


def _rows(table: str, records: Sequence[tuple[int, tuple[str, ...]]]) -> list[tuple[int, tuple[str, ...]]]:
    """The table's (rowid, values) rows of the records' word-index values."""
    if table in NGRAM_TABLES.values():
        return [(rowid, tuple(map(ngrams.index_text, values))) for rowid, values in records]
    if table == PASSAGES:
        return [row for sequence, values in records for row in passage_rows(sequence, values)]
    return list(records)


def _tables(conn: Transaction, kind: str) -> tuple[str, ...]:
    """The kind's word table, its n-gram table once migration m006 has created it, and for events the
    passage table once m013 has.

    An archive whose schema predates m006 has no n-gram tables: the writers then skip them. (No
    migration calls these writers: m004 runs a frozen copy of the row builder, migrations_frozen.py.)
    """
    later = (NGRAM_TABLES[kind], PASSAGES) if kind == "event" else (NGRAM_TABLES[kind],)
    backend = backend_of(conn)
    return (TABLES[kind], *(table for table in later if backend.fulltext_table_exists(conn, table)))


def index_event(conn: Transaction, sequence: int, values: tuple[str, str, str] | None = None) -> None:
    """Write the full-text rows (word and n-gram index) of a stored event (``values``: its event_row,
    when the caller has it)."""
    values = values or event_values(conn, sequence)
    for table in _tables(conn, "event"):
        _write(conn, table, sequence, values)


def index_events(conn: Transaction, rows: Sequence[tuple[int, tuple[str, str, str]]]) -> None:
    """index_event() for many new events (sequence, event_row values): the import's batches."""
    for table in _tables(conn, "event"):
        _write_many(conn, table, rows)


def unindex_event(conn: Transaction, sequence: int) -> None:
    """Remove an event's full-text rows, terms included (FTS5 'delete' with secure-delete on).

    Call it while the event and its session's previous event are still stored: the 'delete'
    command needs the exact values that were indexed.
    """
    values = _values(conn, "event", sequence)
    for table in _tables(conn, "event"):
        _write(conn, table, sequence, values, delete=True)


def index_memory(conn: Transaction, rowid: int) -> None:
    """Write the full-text rows (word and n-gram index) of a stored memory."""
    values = _values(conn, "memory", rowid)
    for table in _tables(conn, "memory"):
        _write(conn, table, rowid, values)


def index_memories(conn: Transaction, rows: Sequence[tuple[int, tuple[str, str]]]) -> None:
    """index_memory() for many new memories (rowid, (content, memory_attribution)): the import's batches."""
    for table in _tables(conn, "memory"):
        _write_many(conn, table, rows)


def unindex_memory(conn: Transaction, rowid: int) -> None:
    """Remove a memory's full-text rows, terms included; call it while the memory is still stored."""
    values = _values(conn, "memory", rowid)
    for table in _tables(conn, "memory"):
        _write(conn, table, rowid, values, delete=True)


def count_missing(db: Connection, tables: Sequence[str] = ALL_TABLES) -> tuple[int, int]:
    """(events, memories) that lack a row in at least one of the tables (default: all of them)."""
    counts = {"event": 0, "memory": 0}
    for table in tables:
        kind = _KIND[table]
        counts[kind] = max(counts[kind], int(db.scalar(_count_missing_sql(table)) or 0))
    return counts["event"], counts["memory"]


def orphans(db: Connection) -> int:
    """Full-text rows whose event or memory no longer exists (in any of the tables)."""
    found = 0
    for table in ALL_TABLES:
        records, key = _RECORDS[_KIND[table]]
        sql = f"SELECT count(*) FROM {table} WHERE {record_of(table, 'rowid')} NOT IN (SELECT {key} FROM {records})"
        found += int(db.scalar(sql) or 0)
    return found


def clear(db: Connection) -> None:
    """Empty every full-text index in one transaction (the start of a full rebuild)."""
    with db.write() as conn:
        for table in ALL_TABLES:
            backend_of(conn).fulltext_clear(conn, table)


def fill_missing(
    db: Connection,
    progress: Progress | None = None,
    batch: int = BATCH,
    tables: Sequence[str] = ALL_TABLES,
    deadline: float | None = None,
) -> RebuildResult:
    """Write every missing full-text row of the tables, ``batch`` records per transaction.

    Each batch is committed before ``progress(done, total)`` is called, so an interruption loses
    at most the batch in flight and a second call finishes the job. Rows added meanwhile by
    another process are not missing, so they are never written twice. A record missing from
    several tables counts once. With a ``deadline`` (time.monotonic()) no batch starts after it:
    the rest is left to a later call.
    """
    by_kind = {kind: [t for t in tables if _KIND[t] == kind] for kind in ("event", "memory")}
    counts = {
        kind: int(db.scalar(f"SELECT count(*) FROM ({_missing_sql(kind, ts, limited=False)}) missing", (0,)) or 0)
        for kind, ts in by_kind.items()
        if ts
    }
    total = sum(counts.values())
    done = {"event": 0, "memory": 0}
    if progress:
        progress(0, total)
    for kind, kind_tables in by_kind.items():
        floor = 0
        while kind_tables and not _past(deadline):
            with db.write() as conn:
                ids = [row["id"] for row in conn.execute(_missing_sql(kind, kind_tables), (floor, batch))]
                for row_id in ids:
                    for table in kind_tables:
                        if not _indexed(conn, table, row_id):
                            _write(conn, table, row_id, _values(conn, kind, row_id))
            if not ids:
                break
            floor = ids[-1]
            done[kind] += len(ids)
            if progress:
                written = done["event"] + done["memory"]
                progress(written, max(total, written))
    from ..records import RebuildResult  # reports.py: rarely needed

    return RebuildResult(events=done["event"], memories=done["memory"])


def ngrams_behind(db: Connection) -> bool:
    """Whether the n-gram index has fewer rows than there are events or memories (cheap counts).

    m006 creates it empty: an archive older than that has its rows written by complete_ngrams.
    """
    events = int(db.scalar("SELECT count(*) FROM events") or 0)
    memories = int(db.scalar("SELECT count(*) FROM memories") or 0)
    indexed_events = backend_of(db).fulltext_records(db, "events_ngrams")
    indexed_memories = backend_of(db).fulltext_records(db, "memories_ngrams")
    return indexed_events < events or indexed_memories < memories


def logged_progress(log: logging.Logger, label: str, steps: int = 10) -> Progress:
    """A progress callback that logs (INFO, on stderr under the CLI) about every 1/steps of the work."""
    shown = [-1]

    def report(done: int, total: int) -> None:
        step = done * steps // max(total, 1)
        if total and step > shown[0]:
            shown[0] = step
            log.info("%s: %s of %s records indexed", label, f"{done:,}", f"{total:,}")

    return report


def complete_ngrams(db: Connection, progress: Progress | None = None, deadline: float | None = None) -> RebuildResult:
    """Write the n-gram rows an archive lacks (after m006 on an older archive), in committed batches
    (none started after ``deadline``, a time.monotonic() value)."""
    from ..records import RebuildResult  # reports.py: rarely needed

    if not ngrams_behind(db):
        return RebuildResult(0, 0)
    return fill_missing(db, progress, tables=tuple(NGRAM_TABLES.values()), deadline=deadline)


def passages_behind(db: Connection) -> bool:
    """Whether events recorded before migration m013 still wait for their passage rows (one small read)."""
    return db.scalar("SELECT count(*) FROM archive_meta WHERE name = ?", (PASSAGES_PENDING,)) != 0


# Per open archive: its passage rows are complete (they stay so: every writer keeps them).
_PASSAGES_READY: weakref.WeakKeyDictionary[Connection, bool] = weakref.WeakKeyDictionary()


def event_table(db: Connection) -> str:
    """The table recall ranks events by: the passage table, or the word table while passages are behind."""
    if not _PASSAGES_READY.get(db):
        _PASSAGES_READY[db] = not passages_behind(db)
    return PASSAGES if _PASSAGES_READY[db] else TABLES["event"]


def complete_passages(db: Connection, progress: Progress | None = None, deadline: float | None = None) -> RebuildResult:
    """Write the passage rows an archive upgraded by m013 lacks, in committed batches (none started after
    ``deadline``); once none is missing, recall ranks events by their passages (passages_behind)."""
    done = fill_missing(db, progress, tables=(PASSAGES,), deadline=deadline)
    if _past(deadline):
        return done
    with db.write() as conn:
        if conn.execute(_missing_sql("event", (PASSAGES,)), (0, 1)).fetchone() is None:
            conn.execute("DELETE FROM archive_meta WHERE name = ?", (PASSAGES_PENDING,))
    return done


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def integrity_check(db: Connection, table: str) -> None:
    """The backend's own check of one full-text table (FTS5's integrity-check; nothing on PostgreSQL,
    which checks its own tables); raises apsw.Error when it is damaged."""
    backend_of(db).fulltext_check(db, table)


def scored(
    db: Connection,
    table: str,
    words: Sequence[str],
    weights: Sequence[float],
    counts: dict[str, int] | None = None,
    floor: int | None = None,
) -> tuple[str, str, str, dict[str, Any]]:
    """The rows of a full-text table matching any word, with their bm25 score, as SQL pieces.

    (FROM item aliased f, score expression, condition, parameters): FTS5's own table and bm25() in
    SQLite; on PostgreSQL a scored subquery of its postings (archive/postgres/pg_fulltext.py), same scores.
    The passage table's rows are events (rowid the sequence), each scored by its best passage among
    those of the events from ``:span_from`` to ``:span_to`` (the caller's parameters); ``floor`` is a
    passage rowid there.
    """
    source, score, condition, params = backend_of(db).fulltext_scored(db, table, words, weights, counts, floor)
    if table != PASSAGES:
        return source, score, condition, params
    slots = PASSAGE_SLOTS
    # Materialized: FTS5 computes bm25() only row by row, never inside an aggregate.
    rows = (
        f"SELECT f.rowid AS rowid, {score} AS score FROM {source} WHERE {condition}"
        f" AND f.rowid BETWEEN :span_from * {slots} AND :span_to * {slots} + {slots - 1}"
    )
    best = f"SELECT p.rowid / {slots} AS rowid, max(p.score) AS score FROM p GROUP BY p.rowid / {slots}"
    return f"(WITH p AS MATERIALIZED ({rows}) {best}) f", "f.score", "1 = 1", params
