"""memory_recall."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.types import CallToolResult
from pydantic import Field

from ..records import RecallResult, Scope
from ..shapes import recall_shape
from ..validate import MAX_LIMIT, MAX_QUERY_CHARS
from .app import Holder, MemoryMCPServer, call
from .convert import counted, tool_result
from .models import WHEN, PersonaId, ProjectId, RecallOut, at_most, between, chars


def register(server: MemoryMCPServer, holder: Holder) -> None:
    @server.tool()
    def memory_recall(
        query: Annotated[str, Field(description="empty only with cue_key", json_schema_extra=chars(MAX_QUERY_CHARS))],
        limit: Annotated[int, Field(strict=True, json_schema_extra=between(1, MAX_LIMIT))] = 10,
        as_of: Annotated[str | None, Field(description=f"{WHEN}: as known then; default now")] = None,
        include_history: Annotated[bool, Field(strict=True, description="add superseded versions")] = False,
        detail: Annotated[
            Literal["auto", "gist", "detailed"], Field(description="auto: old episodes as overviews")
        ] = "auto",
        search_mode: Annotated[
            Literal["fast", "semantic", "deep"],
            Field(description="fast: local words; semantic (recent), deep (all): by meaning, via the embedder"),
        ] = "fast",
        cue_key: Annotated[str | None, Field(description="only what was recorded with this cue")] = None,
        session_id: str | None = None,
        alternatives: Annotated[
            list[Annotated[str, Field(json_schema_extra=chars(MAX_QUERY_CHARS))]] | None,
            Field(
                description="more phrasings in the memory's own words: instances of a category, each person,"
                " dates written out",
                json_schema_extra=at_most(8),
            ),
        ] = None,
        persona_id: PersonaId = "default",
        project_id: ProjectId = "default",
    ) -> Annotated[CallToolResult, RecallOut]:
        """Search long-term memory when past context would help: attributed memories and raw_fallback
        excerpts, best first, with coverage warnings. memory_read an overview or a truncated excerpt before
        asserting its details."""
        result = call(
            lambda: holder.engine.recall(
                Scope(persona_id, project_id),
                query,
                limit=limit,
                as_of=as_of,
                include_history=include_history,
                detail=detail,
                search_mode=search_mode,
                cue_key=cue_key,
                session_id=session_id,
                alternatives=alternatives,
                answering=True,
            )
        )
        return tool_result(_summary(result), recall_out(result))


def recall_out(result: RecallResult) -> RecallOut:
    return RecallOut.model_validate(recall_shape(result))


def _summary(result: RecallResult) -> str:
    text = (
        f"{counted(len(result.memories), 'memory', 'memories')} and {counted(len(result.raw_fallback), 'raw excerpt')}"
        f" ({result.search_mode} search, as of {result.as_of})."
    )
    if result.warnings:
        text += f" {counted(len(result.warnings), 'warning')}: read `warnings`."
    return text
