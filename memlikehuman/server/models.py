"""Pydantic models of tool inputs and structured outputs (names fixed by tools.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


PersonaId = Annotated[
    str,
    Field(description="persona scope; choose explicitly (1-128 ASCII letters, digits, '.', '_', '-', ':')"),
]
ProjectId = Annotated[str, Field(description="project scope; choose explicitly for real projects (1-128 chars)")]


class CueInput(Strict):
    kind: Literal["text", "photo"] = Field(description="text or photo")
    key: str = Field(description="a stable identifier of the cue (e.g. a file name or photo ID), 1-128 chars")
    label: str | None = Field(default=None, description="optional caption or description, up to 1,000 chars")


class MemoryInput(Strict):
    content: str = Field(description="one self-contained statement naming whom it is about ('The user prefers ...')")
    quote: str = Field(
        description="the span of this event's text that supports it, copied exactly: at least 3 words or 12"
        " characters, or the whole text"
    )
    kind: Literal["fact", "preference", "event", "plan", "emotion", "persona", "reference"] | None = Field(
        default=None, description="default fact"
    )
    basis: Literal["stated", "inferred"] | None = Field(default=None, description="default stated")
    subject: str | None = Field(
        default=None,
        description="slot key of a single-valued fact, e.g. user.package_manager: a newer one with the same"
        " subject supersedes the older",
    )
    valid_from: str | None = Field(default=None, description="ISO 8601 when the text dates it; default the event's")
    gist: str | None = Field(default=None, description="for kind event: a short overview without exact details")


class CueOut(BaseModel):
    kind: str
    key: str
    label: str | None


class RecordOut(BaseModel):
    event_id: str
    sequence: int = Field(description="coverage sequence: strictly increasing in recording order")
    duplicate: bool = Field(description="true when this exact event was already recorded (safe retry)")
    extraction_state: Literal["complete", "pending", "failed"]
    memory_ids: list[str]
    error: str | None = Field(description="why extraction is pending or failed")
    warnings: list[str]


class SourceOut(BaseModel):
    event_id: str
    role: str
    source: str
    session_id: str
    occurred_at: str
    quote: str


class MemoryOut(BaseModel):
    memory_id: str
    content: str
    kind: str
    basis: Literal["stated", "inferred"]
    category: str
    detail: Literal["full", "overview"]
    status: Literal["current", "superseded", "revoked"]
    valid_from: str
    valid_to: str | None
    recorded_at: str
    score: float | None = None
    source: SourceOut
    revoked_at: str | None = None
    revoke_reason: str | None = None
    replaced_by: str | None = None
    superseded_by: str | None = None
    supersedes: str | None = None
    known_from: str | None = Field(
        default=None,
        description="since when as_of sees it: its event's time; for a correction's replacement, its original's",
    )
    corrects: str | None = Field(
        default=None, description="the revoked memory this correction replaced; source is the correction event"
    )
    extractor: str | None = Field(
        default=None,
        description=(
            "who made this memory: agent (given to memory_record), sampling:<model> (the host's model),"
            " command:<name> (the host's CLI), openai:<model>, correction; null: not recorded (older archive)"
        ),
    )


class EventOut(BaseModel):
    event_id: str
    sequence: int
    role: str
    source: str
    category: str
    session_id: str
    occurred_at: str
    recorded_at: str
    extraction_state: str
    extraction_error: str | None = None
    kind: Literal["record", "correction"] = "record"
    cues: list[CueOut]
    memory_ids: list[str]
    length: int


class PageOut(BaseModel):
    text: str
    offset: int
    next_offset: int | None
    total_chars: int


class AliasOut(BaseModel):
    speaker: str = Field(description="the speaker label the name belongs to: the answered turn's source, or its role")
    name: str = Field(description="the name this event uses in address for that speaker")
    evidence: int = Field(description="turns of the scope that call the speaker by this name")
    event_id: str = Field(description="the first of those turns")
    learned: bool = Field(description="true when the evidence makes it an alias of the speaker (stats lists these)")


class ReadOut(BaseModel):
    record_type: Literal["event", "memory"]
    memory: MemoryOut | None
    event: EventOut
    source_page: PageOut
    aliases: list[AliasOut] = Field(
        default_factory=list,
        description="speaker aliases the event is evidence for: it uses the name in address, answering that speaker",
    )


class RawHitOut(BaseModel):
    event_id: str
    role: str
    source: str
    session_id: str
    occurred_at: str
    excerpt: str = Field(description="original text, at most 2,000 characters, centred on the match")
    truncated: bool = Field(description="true when the excerpt is shorter than the event: memory_read has it all")
    score: float
    said: int = Field(1, description="how many turns of one speaker said the same words; this hit is the best ranked")
    first_at: str | None = Field(None, description="when the first of them occurred (said > 1), else null")


class CoverageOut(BaseModel):
    events_in_scope: int
    events_pending: int
    events_failed: int
    events_without_vectors: int
    events_after_as_of: int = Field(
        default=0,
        description="events in scope that occurred after as_of, so not searched (future-dated when as_of is now)",
    )
    events_in_flight: int = Field(0, description="pending events whose extraction is running now")


class RecallOut(BaseModel):
    memories: list[MemoryOut]
    raw_fallback: list[RawHitOut]
    search_mode: Literal["fast", "semantic", "deep"] = Field(description="the mode actually used")
    as_of: str
    coverage: CoverageOut
    warnings: list[str]
