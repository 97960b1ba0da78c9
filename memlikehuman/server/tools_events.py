"""memory_record and memory_read."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import Field

from ..records import Scope
from ..validate import MAX_CUES, MAX_EVENT_CHARS
from .app import RECORDED, Holder, MemoryMCPServer, call
from .convert import alias_out, counted, event_out, memory_out, page_out, tool_result
from .models import (
    WHEN,
    CueInput,
    MemoryInput,
    PersonaId,
    ProjectId,
    ReadOut,
    RecordOut,
    at_most,
    between,
    chars,
)


def register(server: MemoryMCPServer, holder: Holder) -> None:
    @server.tool()
    def memory_record(
        event_id: Annotated[str, Field(description="a UUID")],
        text: Annotated[str, Field(json_schema_extra=chars(MAX_EVENT_CHARS))],
        role: Literal["user", "assistant", "tool", "system"],
        source: Annotated[str, Field(description="channel or speaker, one line", json_schema_extra=chars(256))],
        category: Annotated[
            Literal["conversation", "reference", "persona"],
            Field(description="reference: quotations, documents; persona: role definitions"),
        ] = "conversation",
        session_id: str = "default",
        occurred_at: Annotated[str | None, Field(description=f"{WHEN}; default now")] = None,
        cues: Annotated[list[CueInput] | None, Field(json_schema_extra=at_most(MAX_CUES))] = None,
        memories: Annotated[list[MemoryInput] | None, Field(json_schema_extra=at_most(30))] = None,
        persona_id: PersonaId = "default",
        project_id: ProjectId = "default",
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, RecordOut] | InputRequiredResult:
        """Durably store one message or event worth keeping: exact text, true role, stable unique event_id;
        never hidden reasoning or credentials. A retry is a safe duplicate. Returns the extraction state.
        Pass memories when the user states or changes a lasting fact or preference.
        """
        if holder.sampling is not None:  # before the record: its wait may see the worker extract it
            holder.sampling.settle()
            holder.sampling.seen(Scope(persona_id, project_id))
        result = call(
            lambda: holder.engine.record(
                Scope(persona_id, project_id),
                event_id,
                text,
                role,
                source,
                category,
                session_id,
                occurred_at,
                [c.model_dump() for c in cues] if cues is not None else None,
                [m.model_dump(exclude_none=True) for m in memories] if memories is not None else None,
            ),
            RECORDED,
        )
        if holder.sampling is not None and memories is None and ctx is not None:
            from .sampling import in_call

            asked = call(lambda: in_call(holder.sampling, holder.engine, ctx, result), RECORDED)  # type: ignore[arg-type]
            if isinstance(asked, InputRequiredResult):
                return asked
            result = asked
        out = RecordOut(
            event_id=result.event_id,
            sequence=result.sequence,
            duplicate=result.duplicate,
            extraction_state=result.extraction_state,  # type: ignore[arg-type]
            memory_ids=list(result.memory_ids),
            error=result.error,
            warnings=list(result.warnings),
        )
        verb = "Already recorded" if result.duplicate else "Recorded"
        return tool_result(
            f"{verb} event {result.event_id} (sequence {result.sequence}); extraction {result.extraction_state},"
            f" {counted(len(result.memory_ids), 'memory', 'memories')}.",
            out,
        )

    @server.tool()
    def memory_read(
        record_id: Annotated[str, Field(description="event or memory ID")],
        offset: Annotated[int, Field(strict=True, json_schema_extra={"minimum": 0})] = 0,
        max_chars: Annotated[int, Field(strict=True, json_schema_extra=between(1, 20_000))] = 4000,
        persona_id: PersonaId = "default",
        project_id: ProjectId = "default",
    ) -> Annotated[CallToolResult, ReadOut]:
        """Read an event, or a memory with its original event, exactly as recorded, before asserting details;
        page on with source_page.next_offset."""
        result = call(lambda: holder.engine.read(Scope(persona_id, project_id), record_id, offset, max_chars))
        out = ReadOut(
            record_type=result.record_type,  # type: ignore[arg-type]
            memory=memory_out(result.memory) if result.memory else None,
            event=event_out(result.event),
            source_page=page_out(result.page),
            aliases=[alias_out(alias) for alias in result.aliases],
        )
        page = result.page
        more = f"; more from offset {page.next_offset}" if page.next_offset is not None else "; end of text"
        return tool_result(
            f"{result.record_type} {record_id}: characters {page.offset}-{page.offset + len(page.text)}"
            f" of {page.total_chars}{more}.",
            out,
        )
