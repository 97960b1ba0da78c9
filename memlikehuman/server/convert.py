"""Core records -> protocol models, and the short text block that accompanies each result."""

from __future__ import annotations

import json
from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from .. import gist
from ..records import Event, Memory, Page
from .models import CueOut, EventOut, MemoryOut, PageOut, SourceOut

# json.dumps(ensure_ascii=False) leaves these raw, and hosts and models may break lines at them:
# escaped, stored text cannot start a line of its own in the text block.
_LINE_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """'1 memory', '2 memories': a count with its noun in the right number."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def tool_result(summary: str, model: BaseModel) -> CallToolResult:
    """Structured content plus a text block: a one-line summary, then the same data as JSON.

    The JSON copy serves hosts that show only text content to the model.
    """
    data: dict[str, Any] = model.model_dump(mode="json")
    text = (summary + "\n" + json.dumps(data, ensure_ascii=False)).translate(_LINE_BREAKS)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def memory_status(memory: Memory, as_of: str | None = None) -> str:
    """revoked, superseded (its window closed by as_of, or at all) or current."""
    if memory.revoked_at:
        return "revoked"
    if memory.valid_to is not None and (as_of is None or memory.valid_to <= as_of):
        return "superseded"
    return "current"


def memory_out(
    memory: Memory, *, detail: str = "full", score: float | None = None, as_of: str | None = None
) -> MemoryOut:
    content = memory.content
    if detail == "overview":
        content = gist.overview(memory)
    return MemoryOut(
        memory_id=memory.memory_id,
        content=content,
        kind=memory.kind,
        basis=memory.basis,  # type: ignore[arg-type]
        category=memory.category,
        detail=detail,  # type: ignore[arg-type]
        status=memory_status(memory, as_of),  # type: ignore[arg-type]
        valid_from=memory.valid_from,
        valid_to=memory.valid_to,
        recorded_at=memory.recorded_at,
        score=score,
        source=SourceOut(
            event_id=memory.event_id,
            role=memory.role,
            source=memory.source,
            session_id=memory.session_id,
            occurred_at=memory.occurred_at,
            quote="" if detail == "overview" else memory.quote,
        ),
        revoked_at=memory.revoked_at,
        revoke_reason=memory.revoke_reason,
        replaced_by=memory.replaced_by,
        superseded_by=memory.superseded_by,
        supersedes=memory.supersedes,
        known_from=memory.known_from or None,
        corrects=memory.corrects,
    )


def event_out(event: Event) -> EventOut:
    return EventOut(
        event_id=event.event_id,
        sequence=event.sequence,
        role=event.role,
        source=event.source,
        category=event.category,
        session_id=event.session_id,
        occurred_at=event.occurred_at,
        recorded_at=event.recorded_at,
        extraction_state=event.extraction_state,
        extraction_error=event.extraction_error,
        kind=event.kind,  # type: ignore[arg-type]
        cues=[CueOut(kind=c.kind, key=c.key, label=c.label) for c in event.cues],
        memory_ids=list(event.memory_ids),
        length=len(event.text),
    )


def page_out(page: Page) -> PageOut:
    return PageOut(text=page.text, offset=page.offset, next_offset=page.next_offset, total_chars=page.total_chars)
