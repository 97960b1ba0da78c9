"""Pydantic models of tool inputs and structured outputs (names fixed by tools.md).

An input's description says what the agent needs to call the tool right, in a few words: a host sends
every input schema with every model request. The limits the server checks (with coded errors that say
what to do) are stated as JSON Schema keywords (`chars`, `at_most`, `between`); pydantic does not
enforce them, so a value beyond one gets the server's own error, not pydantic's. Strings are non-empty
unless a description says otherwise: the schema leaves `minLength: 1` out (README, Tools).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .. import validate


def chars(high: int) -> dict[str, Any]:
    """The schema's bound of a string's length (the server checks it itself)."""
    return {"maxLength": high}


def at_most(items: int) -> dict[str, Any]:
    """The schema's bound of a list's length (the server checks it itself)."""
    return {"maxItems": items}


def between(low: int, high: int) -> dict[str, Any]:
    """The schema's bounds of a number (the server checks them itself)."""
    return {"minimum": low, "maximum": high}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


ID = chars(128)  # project and cue identifiers
TEXT = chars(validate.MAX_DERIVED_CHARS)  # a memory's content or quote, a reason, a checkpoint's goal
WHEN = "ISO 8601 with offset"
# validate.PERSONA_ID in JSON Schema's (ECMA 262) regex dialect, where \w is [A-Za-z0-9_] (tests/test_tool_budget.py).
PERSONA_PATTERN = r"^[\w.:-]{1,128}$"
PersonaId = Annotated[str, Field(json_schema_extra={"pattern": PERSONA_PATTERN})]
ProjectId = Annotated[str, Field(json_schema_extra=ID)]


class CueInput(Strict):
    kind: Literal["text", "photo"]
    key: str = Field(json_schema_extra=ID)
    label: str | None = Field(default=None, json_schema_extra={"maxLength": validate.MAX_LABEL_CHARS})


class MemoryInput(Strict):
    content: str = Field(description="self-contained, naming whom it is about", json_schema_extra=TEXT)
    quote: str = Field(
        description="the exact span of text supporting it: 3+ words or 12+ characters, or all of text",
        json_schema_extra=TEXT,
    )
    # None as well: a null inside a list item is not dropped before validation (sdk.without_nulls); it is the default.
    kind: Literal["fact", "preference", "event", "plan", "emotion", "persona", "reference"] | None = "fact"
    basis: Literal["stated", "inferred"] | None = "stated"
    subject: str | None = Field(
        default=None, description="key of a single value a later one replaces: user.package_manager"
    )
    valid_from: str | None = Field(default=None, description=f"{WHEN}, when the text dates it")
    gist: str | None = Field(default=None, description="for kind event: an overview without exact details")


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
    newer: str | None = Field(
        default=None, description="memory_id of a newer memory of the same speaker with the same query words"
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
    excerpt: str = Field(description="the event whole, or its passage (at most 800 characters) that holds the match")
    truncated: bool = Field(description="true when the excerpt is shorter than the event: memory_read has it all")
    score: float
    said: int = Field(1, description="how many turns of one speaker said the same words; this hit is the best ranked")
    first_at: str | None = Field(None, description="when the first of them occurred (said > 1), else null")
    offset: int | None = Field(0, description="where the excerpt starts in the event's text (memory_read offset)")
    newer: str | None = Field(
        None, description="event_id of a newer turn of the same speaker with the same query words: this one is earlier"
    )


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
