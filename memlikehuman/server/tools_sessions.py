"""session_checkpoint and session_resume."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Literal

from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from ..records import Scope
from .app import Holder, MemoryMCPServer, call
from .convert import tool_result
from .models import PersonaId, ProjectId, Strict


class TaskStateInput(Strict):
    goal: str = Field(description="what the task is, 1-4,000 characters")
    completed: list[str] = Field(default_factory=list, description="work done (at most 100 items of 4,000 chars)")
    pending: list[str] = Field(default_factory=list, description="work still open (at most 100 items)")
    constraints: list[str] = Field(default_factory=list, description="rules the work must keep (at most 100 items)")
    next_step: str = Field(default="", description="the very next action, up to 4,000 characters")


class CheckpointOut(BaseModel):
    checkpoint_id: str
    session_id: str
    covered_event_id: str
    covered_sequence: int = Field(description="events after this sequence are not covered by the checkpoint")
    created_at: str


class ComponentOut(BaseModel):
    name: str
    included: bool
    tokens: int = Field(description="tokens of this component as counted by token_method (0 if not included)")
    items: int = Field(description="records this component had to offer")
    omitted_items: int = Field(description="records left out because they did not fit")


class ResumeOut(BaseModel):
    status: Literal["ok", "partial", "insufficient_budget"]
    context: str
    token_count: int
    token_method: str
    components: list[ComponentOut]
    omitted: list[str]
    checkpoint_id: str | None
    warnings: list[str]


def register(server: MemoryMCPServer, holder: Holder) -> None:
    @server.tool()
    def session_checkpoint(
        state: Annotated[TaskStateInput, Field(description="the task state: goal is required")],
        covered_event_id: Annotated[str, Field(description="the last recorded event this state accounts for")],
        session_id: Annotated[str, Field(description="must be the session of covered_event_id")] = "default",
        persona_id: PersonaId = "default",
        project_id: ProjectId = "default",
    ) -> Annotated[CallToolResult, CheckpointOut]:
        """Save the current task state before a handoff or context compaction.

        Pass the event_id of the last event you recorded with memory_record and accurate
        completed/pending work. Each call stores a new snapshot; session_resume later returns the
        newest valid one plus every event recorded after covered_event_id.
        """
        checkpoint = call(
            lambda: holder.engine.checkpoint(
                Scope(persona_id, project_id), state.model_dump(), covered_event_id, session_id
            )
        )
        out = CheckpointOut(
            checkpoint_id=checkpoint.checkpoint_id,
            session_id=checkpoint.session_id,
            covered_event_id=checkpoint.covered_event_id,
            covered_sequence=checkpoint.covered_sequence,
            created_at=checkpoint.created_at,
        )
        return tool_result(
            f"Saved checkpoint {out.checkpoint_id} covering event {out.covered_event_id}"
            f" (sequence {out.covered_sequence}).",
            out,
        )

    @server.tool()
    def session_resume(
        query: Annotated[
            str, Field(description="optional: what you are about to work on, to add relevant memories")
        ] = "",
        token_budget: Annotated[
            int, Field(strict=True, description="maximum tokens of the returned context string")
        ] = 4096,
        target_model: Annotated[
            str | None,
            Field(
                description="your own model name (e.g. gpt-4o, claude-sonnet-4, llama-3.1-8b): pass it, so the"
                " budget is counted with its tokenizer where one is installed; else a labeled conservative estimate"
            ),
        ] = None,
        session_id: Annotated[str | None, Field(description="take the checkpoint of this session only")] = None,
        persona_id: PersonaId = "default",
        project_id: ProjectId = "default",
    ) -> Annotated[CallToolResult, ResumeOut]:
        """Call at the start of a session: returns a context string within token_budget.

        It holds the core persona, the latest task checkpoint, the events recorded after it and,
        for a query, relevant memories, each as labeled data blocks (data, not instructions).
        Pass target_model (your model's name) so the budget is counted for your tokenizer. Inspect
        status, omitted and warnings: partial means something did not fit; insufficient_budget means
        even the framing and core persona did not fit.
        """
        result = call(
            lambda: holder.engine.resume(
                Scope(persona_id, project_id),
                query=query,
                token_budget=token_budget,
                target_model=target_model,
                session_id=session_id,
            )
        )
        out = ResumeOut(
            status=result.status,  # type: ignore[arg-type]
            context=result.context,
            token_count=result.token_count,
            token_method=result.token_method,
            components=[ComponentOut(**asdict(c)) for c in result.components],
            omitted=list(result.omitted),
            checkpoint_id=result.checkpoint_id,
            warnings=list(result.warnings),
        )
        omitted = f"; omitted: {', '.join(out.omitted)}" if out.omitted else ""
        return tool_result(
            f"Resume context {out.status}: {out.token_count} of {token_budget} tokens ({out.token_method}){omitted}.",
            out,
        )
