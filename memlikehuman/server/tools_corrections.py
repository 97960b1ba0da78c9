"""memory_correct and memory_forget."""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from ..records import Scope
from ..shapes import forget_shape
from .app import MAY_HAVE_CHANGED, Holder, MemoryMCPServer, call
from .convert import counted, tool_result
from .models import TEXT, WHEN, PersonaId, ProjectId


class CorrectOut(BaseModel):
    replacement_id: str = Field(description="the new memory that holds the corrected statement")
    revoked_ids: list[str] = Field(description="memories revoked by this correction")
    correction_event_id: str = Field(description="the recorded correction event (corr_...)")
    invalidated_checkpoints: int = Field(description="task checkpoints of this scope invalidated by the correction")


class ForgetOut(BaseModel):
    deleted_event_ids: list[str] = Field(description="the source event and connected correction events")
    deleted_memory_ids: list[str] = Field(
        description="every memory no remaining event states, their corrections' memories, and memories that"
        " hold a word only the deleted records said"
    )
    invalidated_checkpoints: int = Field(description="task checkpoints of this scope invalidated by the deletion")
    still_said_by: list[str] = Field(
        default_factory=list,
        description="other events and memories of this scope that state the forgotten text too (they hold two or"
        " more of its uncommon words: a reply that restated it, a memory you gave; one shared word is not"
        " enough): not deleted unless also was true; forget them too when the user wants the fact gone",
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="e.g. a memory that stays because another event states it too, or another process kept the"
        " write-ahead log busy, so old page images of the deleted text stay in the -wal file until its next"
        " checkpoint",
    )


def register(server: MemoryMCPServer, holder: Holder) -> None:
    @server.tool()
    def memory_correct(
        memory_id: str,
        content: Annotated[str, Field(description="the corrected statement", json_schema_extra=TEXT)],
        reason: Annotated[str, Field(description="why, as the user said", json_schema_extra=TEXT)],
        valid_at: Annotated[
            str | None, Field(description=f"{WHEN}: when it became true; default the original's")
        ] = None,
        persona_id: PersonaId = "default",
        project_id: ProjectId = "default",
    ) -> Annotated[CallToolResult, CorrectOut]:
        """Replace a wrong memory, only when the user explicitly asks: the original is revoked and every
        checkpoint of the scope invalidated."""
        # Engine.correct also embeds the correction event and its replacement in the background.
        scope = Scope(persona_id, project_id)
        result = call(lambda: holder.engine.correct(scope, memory_id, content, reason, valid_at))
        out = CorrectOut(
            replacement_id=result.replacement_id,
            revoked_ids=list(result.revoked_ids),
            correction_event_id=result.correction_event_id,
            invalidated_checkpoints=result.invalidated_checkpoints,
        )
        return tool_result(
            f"Corrected {memory_id}: replacement {result.replacement_id}, correction event"
            f" {result.correction_event_id}; {counted(result.invalidated_checkpoints, 'checkpoint')} invalidated.",
            out,
        )

    @server.tool()
    def memory_forget(
        record_id: Annotated[str, Field(description="event or memory ID")],
        also: Annotated[bool, Field(strict=True, description="also delete what still_said_by names")] = False,
        persona_id: PersonaId = "default",
        project_id: ProjectId = "default",
    ) -> Annotated[CallToolResult, ForgetOut]:
        """Delete a record's whole source event and all derived from it for good, only when the user explicitly
        asks; invalidates the scope's checkpoints. still_said_by names other records that state it too."""
        scope = Scope(persona_id, project_id)
        engine = holder.engine
        # Engine.forget also drops the vectors held in memory and wakes the indexer.
        result = call(lambda: engine.forget(scope, record_id, also=also), MAY_HAVE_CHANGED)
        warnings = result.warnings
        out = ForgetOut(**forget_shape(result))
        still = f" Still said by: {', '.join(result.still_said_by)}." if result.still_said_by else ""
        note = "".join(f" Warning: {w}." for w in warnings)
        return tool_result(
            f"Forgot {counted(len(result.deleted_event_ids), 'event')} and"
            f" {counted(len(result.deleted_memory_ids), 'memory', 'memories')};"
            f" {counted(result.invalidated_checkpoints, 'checkpoint')} invalidated.{still}{note}",
            out,
        )
