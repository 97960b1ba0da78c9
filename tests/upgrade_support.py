"""Archives of an older schema, filled by plain SQL as the code of that schema wrote them.

``build_archive(path, version)`` applies the first ``version`` migrations and inserts events of
two scopes and several kinds (records with cues, a long one, a pending and a failed one, a
correction), memories (a superseded version of a fact, a corrected one, a CJK event's), vectors,
checkpoints (one invalidated by a forget that already happened, one live), core persona versions,
and at schema 7 an extraction claim. Full-text rows are written as that schema's code did:
``migrations_frozen.m004_*`` is the word index builder every schema up to 7 used, and the n-gram
rows (schema 6 and 7) are literal.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any, NamedTuple

from memlikehuman.archive.db import Database
from memlikehuman.archive.migrations_frozen import m004_event_values, m004_memory_values
from memlikehuman.archive.schema import migrate

HOME = ("default", "default")
WORK = ("alice", "work")
LONG_NOTES = "Notes on the tram stops: " + "Graca, Estrela, Prazeres; " * 60
FORGOTTEN = "My bank PIN is 4321, keep it safe."
TEA = "我每天早上喝绿茶。"
# The n-gram column of TEA (schema 6 and 7 wrote it; every other value here is Latin: no terms).
TEA_NGRAMS = "我每 每天 天早 早上 上喝 喝绿 绿茶 茶"


class OldEvent(NamedTuple):
    event_id: str
    session_id: str
    text: str
    occurred_at: str
    role: str = "user"
    source: str = "chat"
    scope: tuple[str, str] = HOME
    state: str = "complete"  # extraction_state
    kind: str = "record"
    cues: tuple[tuple[str, str, str | None], ...] = ()


LISBON_CUES = (("text", "city", "Lisbon"), ("photo", "tram.jpg", None))
EVENTS = (
    OldEvent(
        "evt-lisbon",
        "s1",
        "I moved to Lisbon in March and I love the tram rides.",
        "2026-03-02T09:00:00Z",
        cues=LISBON_CUES,
    ),
    OldEvent(
        "evt-tram", "s1", "Lisbon is lovely; the number 28 tram is famous.", "2026-03-02T09:01:00Z", role="assistant"
    ),
    OldEvent("evt-sister", "s1", "My sister Ana visits in June.", "2026-03-02T09:02:00Z"),
    OldEvent("evt-notes", "s1", LONG_NOTES, "2026-03-02T09:03:00Z", source="notes", state="pending"),
    OldEvent(
        "evt-ferry",
        "s1",
        "After the notes: the ferry to Cacilhas leaves at ten.",
        "2026-03-02T09:04:00Z",
        state="failed",
    ),
    OldEvent(
        "evt-report",
        "s9",
        "The quarterly report is due on Friday; Bruno reviews it.",
        "2026-04-01T10:00:00Z",
        source="slack",
        scope=WORK,
        cues=(("text", "project", "quarterly"),),
    ),
    OldEvent("evt-tea", "s2", TEA, "2026-05-01T07:00:00Z"),
    OldEvent("evt-porto", "s1", "Actually I moved to Porto in October.", "2026-10-05T09:00:00Z"),
)
EVENT_IDS = tuple(event.event_id for event in EVENTS)
CORRECTION_ID = "corr_0a1b2c"
# memory_id -> (event_id, content, kind, subject)
MEMORIES = {
    "mem_lisbon": ("evt-lisbon", "The user lives in Lisbon.", "fact", "home_city"),
    "mem_sister": ("evt-sister", "The user's sister Ana visits in June.", "plan", "sister_visit"),
    "mem_report": ("evt-report", "The quarterly report is due on Friday.", "fact", "report_due"),
    "mem_porto": ("evt-porto", "The user lives in Porto.", "fact", "home_city"),
}
REPLACEMENT_ID = "mem_sister_july"
REPLACEMENT = "The user's sister Ana visits in July."
LIVE_CHECKPOINT = "ckpt_live"
PERSONA_TEXT = "Terse answers, metric units."


class _Writer:
    """Inserts rows into an archive of one schema version, and their full-text rows."""

    def __init__(self, conn: Any, version: int) -> None:
        self.conn = conn
        self.version = version
        self.sequences: dict[str, int] = {}
        self.rowids: dict[str, int] = {}

    def event(self, event: OldEvent) -> int:
        e = event
        error = "provider said 503: retry later" if e.state == "failed" else None
        self.conn.execute(
            "INSERT INTO events (event_id, persona_id, project_id, session_id, role, source, category, kind, text,"
            " occurred_at, occurred_at_given, recorded_at, payload_hash, extraction_state, extraction_error)"
            " VALUES (?, ?, ?, ?, ?, ?, 'conversation', ?, ?, ?, 1, ?, ?, ?, ?)",
            (
                e.event_id,
                *e.scope,
                e.session_id,
                e.role,
                e.source,
                e.kind,
                e.text,
                e.occurred_at,
                e.occurred_at,
                f"hash-{e.event_id}",
                e.state,
                error,
            ),
        )
        sequence = int(self.conn.last_insert_rowid())
        for position, (cue_kind, key, label) in enumerate(e.cues):
            self.conn.execute("INSERT INTO cues VALUES (?, ?, ?, ?, ?)", (sequence, position, cue_kind, key, label))
        self.sequences[e.event_id] = sequence
        values = m004_event_values(self.conn, sequence)
        self.conn.execute(
            "INSERT INTO events_fts (rowid, text, attribution, context) VALUES (?, ?, ?, ?)", (sequence, *values)
        )
        if self.version >= 6:
            grams = (TEA_NGRAMS if e.text == TEA else "", "", "")
            self.conn.execute(
                "INSERT INTO events_ngrams (rowid, text, attribution, context) VALUES (?, ?, ?, ?)", (sequence, *grams)
            )
        return sequence

    def memory(
        self, memory_id: str, event_id: str, content: str, kind: str, subject: str, known_from: str, **links: Any
    ) -> int:
        columns = (
            "memory_id, event_sequence, persona_id, project_id, session_id, content, quote, kind, basis,"
            " category, subject, valid_from, recorded_at"
        )
        row = self.conn.execute("SELECT * FROM events WHERE event_id = ?", (event_id,)).fetchone()
        values: list[Any] = [
            memory_id,
            row["sequence"],
            row["persona_id"],
            row["project_id"],
            row["session_id"],
            content,
            row["text"][:80],
            kind,
            "stated",
            "conversation",
            subject,
            row["occurred_at"],
            row["recorded_at"],
        ]
        if self.version >= 5:
            columns += ", known_from"
            values.append(known_from)
        for name, value in links.items():
            columns += f", {name}"
            values.append(value)
        marks = ", ".join("?" * len(values))
        self.conn.execute(f"INSERT INTO memories ({columns}) VALUES ({marks})", values)
        rowid = int(self.conn.last_insert_rowid())
        self.rowids[memory_id] = rowid
        self.conn.execute(
            "INSERT INTO memories_fts (rowid, content, attribution) VALUES (?, ?, ?)",
            (rowid, *m004_memory_values(self.conn, rowid)),
        )
        if self.version >= 6:
            self.conn.execute("INSERT INTO memories_ngrams (rowid, content, attribution) VALUES (?, '', '')", (rowid,))
        return rowid

    def forget(self, sequence: int) -> None:
        """Delete an event as memory_forget of that schema did: full-text rows first, then the row."""
        if self.version < 4:  # contentless_delete=1 tables take a plain DELETE
            self.conn.execute("DELETE FROM events_fts WHERE rowid = ?", (sequence,))
        else:
            values = m004_event_values(self.conn, sequence)
            self.conn.execute(
                "INSERT INTO events_fts (events_fts, rowid, text, attribution, context) VALUES ('delete', ?, ?, ?, ?)",
                (sequence, *values),
            )
        if self.version >= 6:
            self.conn.execute(
                "INSERT INTO events_ngrams (events_ngrams, rowid, text, attribution, context)"
                " VALUES ('delete', ?, '', '', '')",
                (sequence,),
            )
        self.conn.execute("DELETE FROM events WHERE sequence = ?", (sequence,))


def _fill(writer: _Writer) -> None:
    conn = writer.conn
    for event in EVENTS[:-1]:
        writer.event(event)
    # A checkpoint of session s3, then an event of s3 forgotten: the forget wiped the checkpoint's state.
    writer.event(OldEvent("evt-pin", "s3", FORGOTTEN, "2026-06-01T08:00:00Z"))
    conn.execute(
        "INSERT INTO checkpoints (checkpoint_id, persona_id, project_id, session_id, covered_event_id,"
        " covered_sequence, state, created_at, invalidated_at, invalidated_reason)"
        " VALUES ('ckpt_wiped', 'default', 'default', 's3', 'evt-pin', ?, NULL, '2026-06-01T08:05:00Z',"
        " '2026-06-02T00:00:00Z', 'an event it covered was forgotten')",
        (writer.sequences["evt-pin"],),
    )
    writer.forget(writer.sequences.pop("evt-pin"))
    writer.event(EVENTS[-1])
    for memory_id, (event_id, content, kind, subject) in MEMORIES.items():
        occurred = conn.execute("SELECT occurred_at FROM events WHERE event_id = ?", (event_id,)).fetchone()
        writer.memory(memory_id, event_id, content, kind, subject, occurred["occurred_at"])
    lisbon, porto = writer.rowids["mem_lisbon"], writer.rowids["mem_porto"]
    conn.execute(
        "UPDATE memories SET superseded_by = ?, valid_to = '2026-10-05T09:00:00Z' WHERE id = ?", (porto, lisbon)
    )
    conn.execute("UPDATE memories SET supersedes = ? WHERE id = ?", (lisbon, porto))
    _correct(writer)
    _vectors_checkpoint_persona(writer)


def _correct(writer: _Writer) -> None:
    conn = writer.conn
    text = f"Correction of memory mem_sister: {REPLACEMENT}\nReason: the date changed"
    correction = OldEvent(CORRECTION_ID, "s1", text, "2026-03-10T12:00:00Z", source="memory_correct", kind="correction")
    sequence = writer.event(correction)
    original = writer.rowids["mem_sister"]
    conn.execute("INSERT INTO corrections VALUES (?, ?, 'the date changed')", (sequence, original))
    replacement = writer.memory(
        REPLACEMENT_ID, CORRECTION_ID, REPLACEMENT, "plan", "sister_visit", "2026-03-02T09:02:00Z"
    )
    conn.execute(
        "UPDATE memories SET revoked_at = '2026-03-10T12:00:00Z', revoke_reason = 'the date changed',"
        " replaced_by = ? WHERE id = ?",
        (replacement, original),
    )


def _vectors_checkpoint_persona(writer: _Writer) -> None:
    conn = writer.conn
    vector = struct.pack("<2f", 0.6, 0.8)
    conn.execute("INSERT INTO event_vectors VALUES (?, 'old-model', 2, ?)", (writer.sequences["evt-lisbon"], vector))
    conn.execute("INSERT INTO memory_vectors VALUES (?, 'old-model', 2, ?)", (writer.rowids["mem_lisbon"], vector))
    state = {
        "goal": "Plan Ana's visit",
        "completed": ["asked for dates"],
        "pending": ["book a table"],
        "constraints": ["no seafood"],
        "next_step": "call the restaurant",
    }
    conn.execute(
        "INSERT INTO checkpoints (checkpoint_id, persona_id, project_id, session_id, covered_event_id,"
        " covered_sequence, state, created_at) VALUES (?, 'default', 'default', 's1', 'evt-sister', ?, ?,"
        " '2026-03-02T09:02:30Z')",
        (LIVE_CHECKPOINT, writer.sequences["evt-sister"], json.dumps(state)),
    )
    for version, text in enumerate(("Terse answers.", PERSONA_TEXT), start=1):
        conn.execute(
            "INSERT INTO persona_versions VALUES ('default', ?, ?, ?)", (version, text, f"2026-01-0{version}T00:00:00Z")
        )
    if writer.version >= 7:
        conn.execute(
            "INSERT INTO extraction_claims (event_sequence, persona_id, project_id, claimed_by, claimed_until,"
            " attempts, retry_at) VALUES (?, 'default', 'default', 'gone-host:123:abc', 1.0, 2, 1.0)",
            (writer.sequences["evt-notes"],),
        )


def build_archive(path: Path, version: int) -> None:
    """An archive at schema ``version`` (1-7) filled as described in the module docstring."""
    db = Database(path)
    try:
        assert migrate(db, upto=version) == version
        with db.write() as conn:
            _fill(_Writer(conn, version))
    finally:
        db.close()
