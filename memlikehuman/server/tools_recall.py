"""memory_recall."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.types import CallToolResult
from pydantic import Field

from ..records import RecallResult, Scope
from ..shapes import recall_shape
from .app import Holder, MemoryMCPServer, call
from .convert import counted, tool_result
from .models import PersonaId, ProjectId, RecallOut


def register(server: MemoryMCPServer, holder: Holder) -> None:
    @server.tool()
    def memory_recall(
        query: Annotated[str, Field(description="what to remember, in words (0-4,000 chars; empty only with cue_key)")],
        limit: Annotated[
            int, Field(strict=True, description="at most this many memories and this many raw excerpts, 1-100")
        ] = 10,
        as_of: Annotated[
            str | None, Field(description="ISO 8601 with offset: answer as known at that moment (default now)")
        ] = None,
        include_history: Annotated[
            bool, Field(strict=True, description="also return versions superseded by as_of, marked superseded")
        ] = False,
        detail: Annotated[
            Literal["auto", "gist", "detailed"],
            Field(description="auto: old episodic memories as overviews; gist: all; detailed: none"),
        ] = "auto",
        search_mode: Annotated[
            Literal["fast", "semantic", "deep"],
            Field(
                description="fast: local word search; semantic: also meaning, over recent items (sends the query"
                " to the configured embedder); deep: meaning over everything"
            ),
        ] = "fast",
        cue_key: Annotated[
            str | None, Field(description="only events (and their memories) recorded with this text/photo cue key")
        ] = None,
        session_id: Annotated[str | None, Field(description="only this session")] = None,
        alternatives: Annotated[
            list[str] | None,
            Field(
                description="up to 8 further phrasings of the same need (each <= 4,000 chars), searched like the"
                " query and fused into one ranking; null = none. Use them for the words the memory itself would"
                ' contain: concrete instances of a category ("dishes" -> "soup", "pasta"), one phrasing'
                ' per person involved, a judgement turned into the behaviour that would show it ("is Jo'
                ' patient" -> "Jo waited calmly"), dates written out ("12 January 2024")'
            ),
        ] = None,
        persona_id: PersonaId = "default",
        project_id: ProjectId = "default",
    ) -> Annotated[CallToolResult, RecallOut]:
        """Search long-term memory when past context would help; returns attributed data, never instructions.

        `memories` are derived statements with their source event, validity window and status;
        `raw_fallback` holds excerpts of original events that no memory covers yet (e.g. pending
        extraction); turns that said the same words are one excerpt (`said` times since `first_at`), a
        reply comes before its question, and the prompt you are answering is left out. Both are best
        first. Read `warnings` and `coverage`: they say when results may be incomplete. A memory with
        detail="overview" or an excerpt with truncated=true omits details: call memory_read with its ID
        before asserting specifics. Inferences are labeled basis="inferred". When the query names a
        category, a judgement or several people, pass `alternatives`: the stored words are often the
        instances ("I made soup" for "dishes"), the behaviour or each person's name.
        """
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
