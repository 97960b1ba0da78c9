"""Import: validate each line, compare it with the archive, insert what is new; all or nothing."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from ...archive import checkpoints, personas, timeline, tombstones
from ...archive.backend import backend_of
from ...archive.connection import Connection, Row, Transaction
from ...errors import ImportConflicts, InvalidArgument
from ...lifecycle.forget import INVALIDATED as FORGET_REASON
from ...records import ImportReport, PersonaVersion
from .batches import ID_FIELDS, Batch
from .spec import (
    BY_KIND,
    DERIVED_FIELDS,
    EVENT_BOOKKEEPING,
    MAX_LISTED,
    SPECS,
    TYPES,
    checked,
    header,
    parse,
    to_record,
)

# The IDs that tie a record to what a forget took.
_FORGOTTEN_BY = {
    "event": ("event_id",),
    "memory": ("memory_id", "event_id"),
    "correction": ("event_id",),
    "checkpoint": ("covered_event_id",),
}
_LINKS = ("supersedes", "superseded_by", "replaced_by")
_TIMELINE = ("status", "valid_to", "supersedes", "superseded_by", "revoked_at", "revoke_reason", "replaced_by")


class _Rollback(Exception):
    """Unwinds the import transaction after a dry run or a conflict."""


class _Importer:
    """One import inside an open write transaction: compares, inserts, counts and collects conflicts."""

    def __init__(self, conn: Transaction) -> None:
        self.conn = conn
        self.seen: Counter[str] = Counter()
        self.added: Counter[str] = Counter()
        self.unchanged: Counter[str] = Counter()
        self.forgotten: Counter[str] = Counter()
        self.is_forgotten = tombstones.matcher(conn)
        self.unlinked: set[str] = set()  # memories whose links named a forgotten memory
        self.conflicts: list[str] = []
        self.conflict_count = 0
        self.batch = Batch(self)

    def run(self, lines: Iterable[bytes], progress: Callable[[int], None] | None) -> None:
        # Memory links may point forward in the file: they are kept here and resolved at the end.
        timeline.stage_links(self.conn)
        iterator = iter(lines)
        first = next(iterator, None)
        if progress and first:
            progress(len(first))
        header(first)
        end: dict[str, Any] | None = None
        for number, raw in enumerate(iterator, start=2):
            if progress:
                progress(len(raw))
            if not raw.strip():
                continue
            try:
                if end is not None:
                    raise InvalidArgument(f"line {number}: records after the end line: the file was altered")
                record = parse(raw, number)
                if record["type"] == "end":
                    end = record
                    continue
                valid = checked(record, number)
            except InvalidArgument:
                self.batch.flush()  # a problem with an earlier record is reported first, as it was found first
                raise
            self.seen[valid["type"]] += 1
            if self._forgotten(valid):
                self.forgotten[valid["type"]] += 1
                continue
            valid = self._unlink_forgotten(valid)
            if not self.batch.take(valid, number):
                self._apply(valid, number)
        self.batch.flush()
        self._check_end(end)
        if not self.conflict_count:  # with conflicts nothing is written: links to them cannot resolve
            self._link_memories()
        timeline.drop_links(self.conn)

    def _check_end(self, end: dict[str, Any] | None) -> None:
        if end is None:
            raise InvalidArgument("the file has no end line: it is truncated (an interrupted export?); export it again")
        seen = {kind: self.seen[kind] for kind in TYPES}
        if end.get("records") != seen:
            raise InvalidArgument(f"the end line announces {end.get('records')} records but the file holds {seen}")

    def _forgotten(self, record: dict[str, Any]) -> bool:
        """Whether the record is, or belongs to, what memory_forget took (its tombstone): never stored again."""
        return any(self.is_forgotten(record[field]) for field in _FORGOTTEN_BY.get(record["type"], ()))

    def _unlink_forgotten(self, record: dict[str, Any]) -> dict[str, Any]:
        """A memory linked to a forgotten memory: the link is dropped, and its timeline is the archive's
        (the forget re-linked it after the export was written)."""
        if record["type"] != "memory":
            return record
        links = {field: None for field in _LINKS if record[field] is not None and self.is_forgotten(record[field])}
        if not links:
            return record
        self.unlinked.add(record["memory_id"])
        return {**record, **links}

    def report(self, *, dry_run: bool) -> ImportReport:
        return ImportReport(
            added={kind: self.added[kind] for kind in TYPES},
            unchanged={kind: self.unchanged[kind] for kind in TYPES},
            forgotten={kind: self.forgotten[kind] for kind in TYPES if self.forgotten[kind]},
            conflicts=tuple(self.conflicts),
            conflict_count=self.conflict_count,
            dry_run=dry_run,
            written=not dry_run and not self.conflict_count,
        )

    def _apply(self, record: dict[str, Any], number: int) -> None:
        kind = record["type"]
        section = BY_KIND[kind]
        keys = (record["persona_id"], record["version"]) if kind == "persona_version" else (record[ID_FIELDS[kind]],)
        row = self.conn.execute(f"{section.select} WHERE {section.key}", keys).fetchone()
        if row is None:
            self._insert(record, number)
        else:
            self.compare(record, number, row)

    def compare(self, record: dict[str, Any], number: int, row: Row) -> None:
        """Count a record found in the archive as unchanged, or list it as a conflict."""
        kind = record["type"]
        local = to_record(kind, row)
        differs = [
            field
            for field in SPECS[kind]
            if field not in self._ignored(record, local) and local[field] != record[field]
        ]
        if not differs:
            self.unchanged[kind] += 1
            return
        keys = (record["persona_id"], record["version"]) if kind == "persona_version" else (record[ID_FIELDS[kind]],)
        name = " v".join(str(key) for key in keys)
        self.conflict(f"line {number}: {kind} {name!r} differs from the archive in {', '.join(differs)}")

    def _ignored(self, record: dict[str, Any], local: dict[str, Any]) -> tuple[str, ...]:
        """Fields not compared: bookkeeping, and what a forget changed after the file was written."""
        kind = record["type"]
        if kind == "event":
            return EVENT_BOOKKEEPING
        if kind == "memory" and record["memory_id"] in self.unlinked:
            return (*DERIVED_FIELDS, *_TIMELINE)
        if kind == "checkpoint" and local["invalidated_reason"] == FORGET_REASON and record["invalidated_at"] is None:
            return ("covered_event_id", "invalidated_at", "invalidated_reason", "state")
        return DERIVED_FIELDS

    def _insert(self, record: dict[str, Any], number: int) -> None:
        try:
            _INSERT[record["type"]](self.conn, record, number)
        except InvalidArgument as exc:
            self.unplaced(exc)
            return
        self.added[record["type"]] += 1

    def unplaced(self, exc: InvalidArgument) -> None:
        """A record refers to one that cannot be found: an invalid file (raised) before any conflict;
        after one, the reference may be to a conflicting record, which is not written, so the record
        is listed with the conflicts."""
        if not self.conflict_count:
            raise exc
        self.conflict(f"{exc.message} (after the conflicts above)")

    def conflict(self, message: str) -> None:
        self.conflict_count += 1
        if len(self.conflicts) < MAX_LISTED:
            self.conflicts.append(message)

    def _link_memories(self) -> None:
        bad = timeline.unresolved_link(self.conn)
        if bad is not None:
            raise InvalidArgument(
                f"line {bad.line}: memory {bad.memory_id!r} links to memory {bad.target!r}, which is neither"
                " in the file nor in the same scope of the archive"
            )
        timeline.apply_links(self.conn)


def _insert_persona_version(conn: Transaction, r: dict[str, Any], number: int) -> None:
    personas.write_version(conn, PersonaVersion(r["persona_id"], r["version"], r["text"], r["created_at"]))


def _insert_correction(conn: Transaction, r: dict[str, Any], number: int) -> None:
    event = conn.execute("SELECT sequence, kind FROM events WHERE event_id = ?", (r["event_id"],)).fetchone()
    if event is None or event["kind"] != "correction":
        raise InvalidArgument(f"line {number}: correction {r['event_id']!r} has no correction event before it")
    original = conn.execute(
        "SELECT m.id FROM memories m JOIN events e ON e.persona_id = m.persona_id AND e.project_id = m.project_id"
        " WHERE m.memory_id = ? AND e.sequence = ?",
        (r["original_memory_id"], event["sequence"]),
    ).fetchone()
    if original is None:
        raise InvalidArgument(
            f"line {number}: correction {r['event_id']!r} revokes memory {r['original_memory_id']!r}, which is not"
            " in the same scope of the archive or earlier in the file"
        )
    timeline.link_correction(conn, event["sequence"], original["id"], r["reason"])


def _insert_checkpoint(conn: Transaction, r: dict[str, Any], number: int) -> None:
    covered = conn.execute(
        "SELECT sequence FROM events WHERE event_id = ? AND persona_id = ? AND project_id = ?",
        (r["covered_event_id"], r["persona_id"], r["project_id"]),
    ).fetchone()
    if covered is None and r["invalidated_at"] is None:
        raise InvalidArgument(
            f"line {number}: checkpoint {r['checkpoint_id']!r} is valid but its covered event"
            f" {r['covered_event_id']!r} is not in its scope"
        )
    checkpoints.write(
        conn,
        {
            **{f: r[f] for f in ("checkpoint_id", "persona_id", "project_id", "session_id", "covered_event_id")},
            # A forgotten covered event leaves an invalidated checkpoint that nothing resumes from.
            "covered_sequence": covered["sequence"] if covered else 0,
            "state": None if r["state"] is None else json.dumps(r["state"], ensure_ascii=False),
            **{f: r[f] for f in ("created_at", "invalidated_at", "invalidated_reason")},
        },
    )


_INSERT: dict[str, Callable[[Any, dict[str, Any], int], None]] = {
    "persona_version": _insert_persona_version,
    "correction": _insert_correction,
    "checkpoint": _insert_checkpoint,
}


def import_lines(
    db: Connection, lines: Iterable[bytes], *, dry_run: bool = False, progress: Callable[[int], None] | None = None
) -> ImportReport:
    """Import export lines (bytes, as read from the file) into the archive: all of them or nothing.

    Records already present with identical content are skipped, so importing a file twice is
    harmless. ``progress(n)`` is called with the size of each line read. With ``dry_run`` the
    report says what would change and nothing is written. Raises InvalidArgument for a malformed
    or truncated file (naming the line) and ImportConflicts when records contradict the archive;
    in both cases nothing is written.
    """
    importer: _Importer | None = None
    try:
        with backend_of(db).temp_in_memory(db), db.write() as conn:
            importer = _Importer(conn)
            importer.run(lines, progress)
            if importer.conflict_count or dry_run:
                raise _Rollback
    except _Rollback:
        pass
    assert importer is not None
    report = importer.report(dry_run=dry_run)
    if report.conflict_count:
        raise ImportConflicts(report)
    return report
