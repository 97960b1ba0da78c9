"""Core records -> protocol models, and the short text block that accompanies each result."""

from __future__ import annotations

import json
from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from ..records import Event, Memory, Page, SpeakerAlias
from ..shapes import memory_shape, visible
from .models import AliasOut, CueOut, EventOut, MemoryOut, PageOut


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """'1 memory', '2 memories': a count with its noun in the right number."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def tool_result(summary: str, model: BaseModel) -> CallToolResult:
    """Structured content plus a text block: a one-line summary, then the same data as JSON.

    The JSON copy serves hosts that show only text content to the model.
    """
    data: dict[str, Any] = model.model_dump(mode="json")
    # Escaped (shapes.visible): stored text cannot start a line of its own or hide in the text block.
    text = visible(summary + "\n" + json.dumps(data, ensure_ascii=False))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def memory_out(
    memory: Memory, *, detail: str = "full", score: float | None = None, as_of: str | None = None
) -> MemoryOut:
    return MemoryOut.model_validate(memory_shape(memory, detail=detail, score=score, as_of=as_of))


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


def alias_out(alias: SpeakerAlias) -> AliasOut:
    return AliasOut(
        speaker=alias.speaker, name=alias.name, evidence=alias.evidence, event_id=alias.event_id, learned=alias.learned
    )
