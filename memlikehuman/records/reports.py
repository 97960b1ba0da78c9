"""The records a prompt or start hook never creates: forgetting, correcting, importing, the doctor,
memory_read's page, extraction's candidates, persona versions, full-text rebuilds and speaker aliases.

Kept apart from records.py, which re-exports each name: creating a frozen dataclass compiles its
generated methods (about 1.5 ms each on a 2-core machine), and a hook runs in a new process for
every prompt (bench/hooks.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

NOT_SCRUBBED = (
    "another process kept the write-ahead log busy: old page images of the deleted text stay in the"
    " -wal file until its next checkpoint (the next forget, or when the last connection closes)"
)
NOT_SCRUBBED_POSTGRES = (
    "the cleanup after the forget could not run (another connection held the tables, or the database role"
    " may not VACUUM them): the freed space of the tables may still hold the deleted text until the next"
    " forget or an operator's VACUUM FULL (docs/reliability.md, PostgreSQL)"
)


@dataclass(frozen=True)
class CorrectionResult:
    replacement_id: str
    revoked_ids: tuple[str, ...]
    correction_event_id: str
    invalidated_checkpoints: int


@dataclass(frozen=True)
class ForgetResult:
    deleted_event_ids: tuple[str, ...]
    deleted_memory_ids: tuple[str, ...]
    invalidated_checkpoints: int
    # Internal row IDs, for in-memory caches: deleted events and memories, and surviving events
    # whose vector was dropped because it embedded the forgotten text as context.
    event_sequences: tuple[int, ...] = ()
    memory_rowids: tuple[int, ...] = ()
    reembed_sequences: tuple[int, ...] = ()
    # Memories that stay because another event states them too: (memory ID, the event quoted now).
    requoted: tuple[tuple[str, str], ...] = ()
    # Other records of the scope that state the forgotten text too (still_said.py).
    still_said_by: tuple[str, ...] = ()
    # False when another connection kept the WAL from being truncated within SCRUB_TIMEOUT_MS.
    scrubbed: bool = True
    # What is left when not scrubbed: SQLite's WAL text, or PostgreSQL's (NOT_SCRUBBED_POSTGRES).
    residue: str = NOT_SCRUBBED

    @property
    def warnings(self) -> list[str]:
        """What the caller must be told: copies of the deleted text left where the cleanup could not reach,
        and the facts that stay because another event states them too."""
        kept = [
            f"memory {memory_id} stays: event {event_id} states it too, and it is quoted from there now"
            f" (forget {event_id} as well to remove it)"
            for memory_id, event_id in self.requoted
        ]
        return kept + ([] if self.scrubbed else [self.residue])


@dataclass(frozen=True)
class Preview:
    """What ``forget`` would delete now, what would stay and what still says it, and how many
    checkpoints it would invalidate."""

    record_id: str
    event_ids: tuple[str, ...]
    memory_ids: tuple[str, ...]
    checkpoint_ids: tuple[str, ...]
    requoted: tuple[tuple[str, str], ...] = ()
    still_said_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImportReport:
    """What an import wrote (or, on a dry run or a conflict, would have written)."""

    added: Mapping[str, int]
    unchanged: Mapping[str, int]
    conflicts: tuple[str, ...]  # the first MAX_LISTED, each "line N: ..."
    conflict_count: int
    dry_run: bool
    written: bool
    # Records skipped because memory_forget took them (or what they belong to), by type.
    forgotten: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | warn | fail
    detail: str


@dataclass(frozen=True)
class HistoryMessage:
    event_id: str
    session_id: str
    role: str
    text: str
    occurred_at: str | None
    source: str
    project: str | None = None  # Claude Code: the transcript's own project directory
    category: str = "conversation"  # reference: an item of a host's memory file (CLAUDE.md, ...)


@dataclass
class HistoryReport:
    added: int = 0
    unchanged: int = 0
    conversations: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    dry_run: bool = False
    # Given by the caller: session -> event ID prefix of a memory file's items; the stored events of that
    # session with that prefix that are not among the messages are withdrawn (admin/history_store.py).
    replacing: dict[str, str] = field(default_factory=dict)
    withdrawn: int = 0


@dataclass(frozen=True)
class PersonaVersion:
    """One version of a persona's core persona (each CLI edit is a new one; the newest is current)."""

    persona_id: str
    version: int
    text: str
    created_at: str


@dataclass(frozen=True)
class Page:
    """A window of an event's original text."""

    text: str
    offset: int
    next_offset: int | None
    total_chars: int


@dataclass(frozen=True)
class Candidate:
    """A checked memory ready to be stored (output of extraction, input of the archive)."""

    content: str
    quote: str
    kind: str
    basis: str
    subject: str | None
    valid_from: str
    gist: str | None = None
    warnings: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class RebuildResult:
    """How many full-text rows a rebuild wrote (rows of the word and n-gram indexes counted once)."""

    events: int
    memories: int


@dataclass(frozen=True)
class SpeakerAlias:
    """A name people use for a speaker of a scope, learned from turns that use it in address."""

    speaker: str  # the speaker label: the source of the addressed turns, or their role in a host's chat
    name: str  # the name used for that speaker
    evidence: int  # turns of the scope that call the speaker so (rows of alias_evidence)
    event_id: str  # the first of those turns
    learned: bool = True  # whether text/aliases.learn accepts it (False: too little evidence so far)


@dataclass(frozen=True)
class Turn:
    """One recorded turn of a session (no corrections): what a hook's checkpoint is cut from."""

    event_id: str
    role: str
    text: str
    memories: int = 0  # memories made from it
    extraction_state: str = "pending"  # complete: someone (the agent, an extractor) looked and kept what it found
