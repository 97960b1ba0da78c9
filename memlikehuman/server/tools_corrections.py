"""memory_correct and memory_forget."""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from ..records import Scope
from ..shapes import forget_shape
from .app import MAY_HAVE_CHANGED, Holder, MemoryMCPServer, call
from .convert import counted, tool_result
from .models import PersonaId, ProjectId


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
        memory_id: Annotated[str, Field(description="the wrong memory (mem_...)")],
        content: Annotated[str, Field(description="the corrected statement, 1-4,000 characters")],
        reason: Annotated[str, Field(description="why it is corrected, as the user said, 1-4,000 characters")],
        valid_at: Annotated[
            str | None,
            Field(description="ISO 8601 with offset: when the corrected fact became true; default: the original's"),
        ] = None,
        persona_id: PersonaId = "default",
        project_id: ProjectId = "default",
    ) -> Annotated[CallToolResult, CorrectOut]:
        """Fix a wrong memory, only when the user explicitly asks for it.

        Records an attributed correction event with the reason, stores the corrected statement as a
        new memory that takes the original's place, and revokes the original (recall never shows it
        again; memory_read shows it revoked, with the reason and the replacement). Every task
        checkpoint of this scope is invalidated. Core persona entries and emotion records cannot be
        corrected (the error says what to do instead).
        """
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
        record_id: Annotated[
            str, Field(description="an event ID, a correction event ID (corr_...) or a memory ID (mem_...)")
        ],
        also: Annotated[
            bool,
            Field(strict=True, description="true: also delete the records still_said_by names (default: only named)"),
        ] = False,
        persona_id: PersonaId = "default",
        project_id: ProjectId = "default",
    ) -> Annotated[CallToolResult, ForgetOut]:
        """Delete something for good, only when the user explicitly asks for it.

        Deletes the whole source event of the record (a memory ID forgets its entire event), every
        memory made from it that no other event states, every correction connected to those with
        what it made, and memories of other turns whose extraction was shown it and that hold a word
        only it said. A memory another event states too stays, quoted from that event (the warnings
        name it), unless it holds a word only this event said. still_said_by names the other records
        that state it too (a reply that restated it, a memory you gave; not one that shares a word);
        they stay unless also is true. Nothing readable of the deleted text remains in the archive
        file afterwards, and the event is never stored again (memory_record of its ID is a conflict).
        Every task checkpoint of this scope is invalidated and its saved state erased. Copies and
        backups made earlier are not affected. Forgetting the same record again is not_found.
        """
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
