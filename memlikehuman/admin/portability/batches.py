"""The import's batches: runs of consecutive events (or memories) compared and written together.

An import used to spend ~6.5 SQL statements on each event (the existence check, the row, its cues,
two full-text rows, their lookups). A batch of up to CHUNK records of one kind costs one query for
the records already in the archive, one for the events the memories refer to, and one executemany
per table. The outcome is the one the record-by-record import had: each record is still compared,
accepted or refused in file order (the same conflicts, the same first error, the same line numbers),
and the rows are written in file order, so sequences and row IDs are those of a record-by-record
import. A batch ends before a record of another kind (a memory refers to the events before it, a
correction to the memories) and before an ID it already holds (the second one is then compared
with the first, as before).
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol

from ...archive import events, fulltext, memories, sources, timeline
from ...archive.connection import Row, Transaction
from ...archive.db import placeholders
from ...errors import InvalidArgument
from ...records import Cue
from .spec import BY_KIND

CHUNK = 500
ID_FIELDS = {"event": "event_id", "memory": "memory_id", "correction": "event_id", "checkpoint": "checkpoint_id"}
_ID_COLUMNS = {"event": "e.event_id", "memory": "m.memory_id"}

Item = tuple[dict[str, Any], int]  # a checked record and its line number
# The text of the last record event per (persona, project, session), as an import appends them: the
# context of the next event's full-text row (fulltext.event_row), without three queries per event.
Previous = dict[tuple[str, str, str], str | None]


class Owner(Protocol):
    """The import a batch reports to (importer._Importer)."""

    conn: Transaction
    added: Counter[str]

    def compare(self, record: dict[str, Any], number: int, row: Row) -> None: ...

    def unplaced(self, exc: InvalidArgument) -> None: ...


class Batch:
    """Consecutive records of one batched kind that are not yet compared with the archive."""

    def __init__(self, owner: Owner) -> None:
        self.owner = owner
        self.kind = ""
        self.items: list[Item] = []
        self.ids: set[str] = set()
        self.previous: Previous = {}

    def take(self, record: dict[str, Any], number: int) -> bool:
        """Queue a record of a batched kind (True); any other record ends the batch first (False)."""
        kind = record["type"]
        if kind not in _WRITERS:
            self.flush()
            return False
        key = record[ID_FIELDS[kind]]
        if kind != self.kind or key in self.ids or len(self.items) >= CHUNK:
            self.flush()
        self.kind = kind
        self.items.append((record, number))
        self.ids.add(key)
        return True

    def flush(self) -> None:
        """Compare the queued records with the archive, in file order, and write the new ones."""
        if not self.items:
            return
        kind, items = self.kind, self.items
        self.items, self.ids = [], set()
        conn = self.owner.conn
        stored = _stored(conn, kind, [record[ID_FIELDS[kind]] for record, _ in items])
        writer = _WRITERS[kind](conn, items, self.previous)
        for record, number in items:
            row = stored.get(record[ID_FIELDS[kind]])
            if row is not None:
                self.owner.compare(record, number, row)
                continue
            try:
                writer.accept(record, number)
            except InvalidArgument as exc:
                self.owner.unplaced(exc)
                continue
            self.owner.added[kind] += 1
        writer.write()


def _stored(conn: Transaction, kind: str, ids: Sequence[str]) -> dict[str, Row]:
    """The archive's records with these IDs, as the export selects them, by ID."""
    field = ID_FIELDS[kind]
    sql = f"{BY_KIND[kind].select} WHERE {_ID_COLUMNS[kind]} IN ({placeholders(ids)})"
    return {row[field]: row for row in conn.execute(sql, list(ids))}


class _Writer(Protocol):
    def __init__(self, conn: Transaction, items: Sequence[Item], previous: Previous) -> None: ...

    def accept(self, record: dict[str, Any], number: int) -> None: ...

    def write(self) -> None: ...


class _Events:
    """New events: their rows, cues, resolved dates and full-text rows."""

    def __init__(self, conn: Transaction, items: Sequence[Item], previous: Previous) -> None:
        self.conn = conn
        self.previous = previous
        self.records: list[dict[str, Any]] = []

    def accept(self, record: dict[str, Any], number: int) -> None:
        self.records.append(record)

    def write(self) -> None:
        if not self.records:
            return
        cues = [tuple(Cue(**cue) for cue in r["cues"]) for r in self.records]
        sequences = events.write_many(self.conn, [_event_row(r) for r in self.records], cues)
        rows = []
        for r, sequence, event_cues in zip(self.records, sequences, cues, strict=True):
            session = (r["persona_id"], r["project_id"], r["session_id"])
            if session not in self.previous:
                self.previous[session] = fulltext.previous_text(self.conn, *session, sequence)
            rows.append((sequence, fulltext.event_row(r["text"], r["source"], event_cues, self.previous[session])))
            if r["kind"] == "record":
                self.previous[session] = r["text"]
        fulltext.index_events(self.conn, rows)


def _event_row(r: dict[str, Any]) -> list[Any]:
    """The events.COLUMNS values of an imported event."""
    digest = events.payload_hash(
        r["persona_id"],
        r["project_id"],
        r["event_id"],
        r["text"],
        r["role"],
        r["source"],
        r["category"],
        r["session_id"],
        r["cues"],
    )
    return [*_BEFORE_FLAG(r), int(r["occurred_at_given"]), r["recorded_at"], digest, *_AFTER_HASH(r)]


# events.COLUMNS around the two values an import computes (occurred_at_given as 0/1, payload_hash).
_FLAG = events.COLUMNS.index("occurred_at_given")
assert events.COLUMNS[_FLAG + 1 : _FLAG + 3] == ("recorded_at", "payload_hash")
_BEFORE_FLAG = operator.itemgetter(*events.COLUMNS[:_FLAG])
_AFTER_HASH = operator.itemgetter(*events.COLUMNS[_FLAG + 3 :])


_MEMORY_COLUMNS = [c for c in memories.COLUMNS if c not in ("event_sequence", "known_from")]
_ROWID_OF = "SELECT memory_id, id, persona_id, project_id FROM memories WHERE memory_id IN ({})"
_EVENTS_OF = "SELECT event_id, sequence, text, persona_id, project_id FROM events WHERE event_id IN ({})"


class _Memories:
    """New memories: each must belong to an event of its scope; their rows, full-text rows and links."""

    def __init__(self, conn: Transaction, items: Sequence[Item], previous: Previous) -> None:
        self.conn = conn
        ids = sorted({record["event_id"] for record, _ in items})
        sql = "SELECT event_id, sequence, persona_id, project_id, source FROM events WHERE event_id IN"
        self.events = {row["event_id"]: row for row in conn.execute(f"{sql} ({placeholders(ids)})", ids)}
        self.accepted: list[tuple[dict[str, Any], int, Row]] = []

    def accept(self, record: dict[str, Any], number: int) -> None:
        event_id, what = record["event_id"], f"memory {record['memory_id']!r}"
        event = self.events.get(event_id)
        if event is None:
            raise InvalidArgument(
                f"line {number}: {what} refers to event {event_id!r}, which is neither in the archive"
                " nor earlier in the file"
            )
        if (event["persona_id"], event["project_id"]) != (record["persona_id"], record["project_id"]):
            raise InvalidArgument(f"line {number}: {what} refers to event {event_id!r} of another persona or project")
        self.accepted.append((record, number, event))

    def write(self) -> None:
        if not self.accepted:
            return
        rows = [{**{c: r[c] for c in _MEMORY_COLUMNS}, "event_sequence": e["sequence"]} for r, _, e in self.accepted]
        rowids = memories.write_many(self.conn, rows, [e["source"] for _, _, e in self.accepted])
        for r, number, _ in self.accepted:
            timeline.stage_link(
                self.conn, r["memory_id"], number, (r["supersedes"], r["superseded_by"], r["replaced_by"])
            )
        _write_sources(self.conn, [(rowid, r) for rowid, (r, _, _) in zip(rowids, self.accepted, strict=True)])


def _write_sources(conn: Transaction, written: Sequence[tuple[int, dict[str, Any]]]) -> None:
    """The provenance of new memories (archive/sources.py): events and memories of their scope that are
    in the archive or earlier in the file; any other is left out (a filtered export, a forget)."""
    given = [(rowid, r) for rowid, r in written if r["sources"]]
    event_ids = sorted({e["event_id"] for _, r in given for e in r["sources"]["events"]})
    memory_ids = sorted({m for _, r in given for m in r["sources"]["memories"]})
    found = {row["event_id"]: row for row in conn.execute(_EVENTS_OF.format(placeholders(event_ids)), event_ids)}
    shown = {row["memory_id"]: row for row in conn.execute(_ROWID_OF.format(placeholders(memory_ids)), memory_ids)}
    for rowid, r in given:
        scope = (r["persona_id"], r["project_id"])
        refs = [(found[e["event_id"]], e["quote"]) for e in r["sources"]["events"] if e["event_id"] in found]
        refs = [(row, quote) for row, quote in refs if (row["persona_id"], row["project_id"]) == scope]
        for row, quote in refs:
            if quote is not None:
                sources.add_quote(conn, rowid, row["sequence"], row["text"], quote)
        listed = [shown[m] for m in r["sources"]["memories"] if m in shown]
        events_shown = tuple(row["sequence"] for row, quote in refs if quote is None)
        memories_shown = tuple(row["id"] for row in listed if (row["persona_id"], row["project_id"]) == scope)
        sources.record_shown(conn, rowid, sources.Shown(events_shown, memories_shown))


_WRITERS: dict[str, type[_Writer]] = {"event": _Events, "memory": _Memories}
