"""Frozen records that cross module boundaries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

ROLES = ("user", "assistant", "tool", "system")
CATEGORIES = ("conversation", "reference", "persona")
CUE_KINDS = ("text", "photo")
MEMORY_KINDS = ("fact", "preference", "event", "plan", "emotion", "persona", "reference")
BASES = ("stated", "inferred")


__all__ = [
    "BASES",
    "CATEGORIES",
    "CUE_KINDS",
    "MEMORY_KINDS",
    "ROLES",
    "Candidate",
    "Check",
    "Checkpoint",
    "CorrectionResult",
    "Coverage",
    "Cue",
    "Event",
    "ForgetResult",
    "HistoryMessage",
    "HistoryReport",
    "ImportReport",
    "InjectedItem",
    "Kind",
    "Memory",
    "Mark",
    "MemoryHit",
    "NOT_SCRUBBED",
    "Page",
    "PersonaVersion",
    "Preview",
    "RawHit",
    "ReadResult",
    "RebuildResult",
    "RecallResult",
    "RecordResult",
    "Scope",
    "SpeakerAlias",
    "TaskState",
    "Turn",
    "memory_status",
]

if TYPE_CHECKING:
    from .reports import (
        NOT_SCRUBBED,
        Candidate,
        Check,
        CorrectionResult,
        ForgetResult,
        HistoryMessage,
        HistoryReport,
        ImportReport,
        Page,
        PersonaVersion,
        Preview,
        RebuildResult,
        SpeakerAlias,
        Turn,
    )

# Defined in reports.py and loaded on first use: a prompt or start hook creates none of them.
_REPORTS = frozenset(
    ("NOT_SCRUBBED", "Check", "CorrectionResult", "ForgetResult", "HistoryMessage", "HistoryReport", "ImportReport")
    + ("Preview", "PersonaVersion", "Page", "Candidate", "RebuildResult", "SpeakerAlias", "Turn")
)


def __getattr__(name: str) -> Any:
    if name in _REPORTS:
        from . import reports

        return getattr(reports, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# What a search, a vector or a score belongs to: an original event or a derived memory.
Kind = Literal["event", "memory"]


@dataclass(frozen=True)
class Scope:
    """The (persona_id, project_id) pair that bounds every query."""

    persona_id: str = "default"
    project_id: str = "default"


@dataclass(frozen=True)
class Cue:
    """A retrieval key attached to an event (a text key or a photo's key, with an optional label)."""

    kind: str
    key: str
    label: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "label": self.label}


@dataclass(frozen=True)
class Event:
    """An original event as stored."""

    sequence: int
    event_id: str
    persona_id: str
    project_id: str
    session_id: str
    role: str
    source: str
    category: str
    kind: str
    text: str
    occurred_at: str
    recorded_at: str
    extraction_state: str
    extraction_error: str | None
    cues: tuple[Cue, ...] = ()
    memory_ids: tuple[str, ...] = ()

    @property
    def scope(self) -> Scope:
        return Scope(self.persona_id, self.project_id)


@dataclass(frozen=True)
class Memory:
    """A derived memory with its attribution and validity window."""

    rowid: int
    memory_id: str
    event_sequence: int
    persona_id: str
    project_id: str
    session_id: str
    content: str
    quote: str
    kind: str
    basis: str
    category: str
    subject: str | None
    gist: str | None
    valid_from: str
    valid_to: str | None
    recorded_at: str
    revoked_at: str | None = None
    revoke_reason: str | None = None
    replaced_by: str | None = None
    superseded_by: str | None = None
    supersedes: str | None = None
    # since when it is known (as_of): its event's time; a correction's replacement: its original's
    known_from: str = ""
    # the revoked memory this one replaced (a correction's replacement), else None
    corrects: str | None = None
    # who made it: "agent", "sampling:<model>", "command:<name>", "openai:<model>", "correction";
    # None for memories made before schema 10
    extractor: str | None = None
    # attribution copied from the source event
    event_id: str = ""
    role: str = ""
    source: str = ""
    occurred_at: str = ""

    def status(self, as_of: str | None = None) -> str:
        """revoked, superseded (its window closed by as_of, or at all) or current (memory_status)."""
        return memory_status(self.revoked_at, self.valid_to, as_of)


def memory_status(revoked_at: str | None, valid_to: str | None, as_of: str | None = None) -> str:
    """The one status rule: revoked (corrected away), superseded (its window closed by as_of, or at all
    without as_of) or current. archive/timeline.status_sql is the same rule in SQL."""
    if revoked_at:
        return "revoked"
    if valid_to is not None and (as_of is None or valid_to <= as_of):
        return "superseded"
    return "current"


@dataclass(frozen=True)
class TaskState:
    """A checkpoint's task state (archive/checkpoints.parse_state checks its limits)."""

    goal: str
    completed: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    next_step: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "goal": self.goal,
            "completed": list(self.completed),
            "pending": list(self.pending),
            "constraints": list(self.constraints),
            "next_step": self.next_step,
        }


@dataclass(frozen=True)
class Checkpoint:
    """A saved task state and the last event it covers (session_checkpoint); ``state`` None once a forget wiped it."""

    checkpoint_id: str
    persona_id: str
    project_id: str
    session_id: str
    covered_event_id: str
    covered_sequence: int
    created_at: str
    state: TaskState | None
    invalidated_at: str | None = None
    invalidated_reason: str | None = None


@dataclass(frozen=True)
class RecordResult:
    """What memory_record reports: the event, whether it was a duplicate, and its extraction."""

    event_id: str
    sequence: int
    duplicate: bool
    extraction_state: str
    memory_ids: tuple[str, ...]
    error: str | None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReadResult:
    """What memory_read returns: the event (and the memory, when a memory ID was read) and a page of text."""

    record_type: str  # event | memory
    event: Event
    page: Page
    memory: Memory | None = None
    # The names the event uses for the speaker it answers (speaker aliases), learned or not.
    aliases: tuple[SpeakerAlias, ...] = ()


@dataclass(frozen=True)
class MemoryHit:
    """A memory returned by recall, with how it is shown."""

    memory: Memory
    score: float
    detail: str  # full | overview
    status: str  # current | superseded
    # the memory ID of a newer memory of the same speaker about the same matter, ranked in this one's stead
    newer: str | None = None


@dataclass(frozen=True)
class RawHit:
    """An excerpt of an original event returned by recall."""

    event: Event
    excerpt: str
    truncated: bool
    score: float
    # how many turns of the scope said the same (retrieval/echoes.py) and when the first of them was
    said: int = 1
    first_at: str | None = None
    # where the excerpt starts in the event's text (None: the joined gaps its memories leave)
    offset: int | None = 0
    # the event ID of a newer turn of the same speaker about the same matter, ranked in this one's stead
    newer: str | None = None


@dataclass(frozen=True)
class Mark:
    """How far a scope had gone when a context was made: its newest event sequence and memory row."""

    event: int
    memory: int


@dataclass(frozen=True)
class InjectedItem:
    """One line the prompt hook injects: the record it quotes, the line itself, and why it passed the gate."""

    record_id: str
    line: str
    coverage: float
    similarity: float | None
    # What the hook notes as injected: "memory:" or "event:" and the row's number, never the record ID
    # (a hook's event ID holds a digest of its text, and the note outlives a forget).
    key: str = ""
    # the keys of the turns folded into this item (they said the same): noted as injected with it
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class Coverage:
    """How much of the scope a recall could search: pending, failed and unembedded events."""

    events_in_scope: int
    events_pending: int
    events_failed: int
    events_without_vectors: int
    # events of the scope that occurred after as_of: not searched (dated in the future, when as_of is now)
    events_after_as_of: int = 0
    events_in_flight: int = 0  # pending events being extracted right now (also counted in events_pending)


@dataclass(frozen=True)
class RecallResult:
    """What memory_recall returns: memories, raw excerpts, the mode used, coverage and warnings."""

    memories: tuple[MemoryHit, ...]
    raw_fallback: tuple[RawHit, ...]
    search_mode: str
    as_of: str
    coverage: Coverage
    warnings: tuple[str, ...] = ()
    # (kind, warning) of the warnings about the scope rather than this query (retrieval/coverage.STANDING):
    # pending or failed extraction, events dated in the future, events without vectors; each is in warnings too
    standing: tuple[tuple[str, str], ...] = ()
