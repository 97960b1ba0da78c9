"""The MCP edge: build_server(), error translation, and the open archive's lifespan."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, ToolAnnotations

from .. import __version__, instructions
from ..config import Settings
from ..engine import Engine
from ..errors import MemLikeHumanError, Unavailable
from .sdk import MAY_HAVE_CHANGED as MAY_HAVE_CHANGED  # re-exported: the tools name it
from .sdk import MemoryMCPServer

if TYPE_CHECKING:
    from ..hosts.channel import Listener
    from .sampling import Bridge

log = logging.getLogger("memlikehuman.server")
T = TypeVar("T")

INSTRUCTIONS = instructions.SERVER


# Each module registers its tools (and resources/prompts) on the server.
class Holder:
    """Where tools find the engine the lifespan opened."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._engine: Engine | None = None
        self.sampling: Bridge | None = None  # MEMLIKEHUMAN_EXTRACTOR=sampling (server/sampling.py)

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise Unavailable("the archive is not open yet (the server is starting or stopping): retry in a moment")
        return self._engine


READ_ONLY = "nothing was changed; retry once, and if it fails again report it with the server's stderr log"
RECORDED = (
    "the event may already be stored: call memory_record again with the same event_id (a duplicate is safe),"
    " and report the failure with the server's stderr log"
)


def call(fn: Callable[[], T], after_failure: str = READ_ONLY) -> T:
    """Run a core call; domain errors become coded tool errors, anything else `internal`.

    ``after_failure`` tells the agent what an unexpected failure means for this call and what to do.
    """
    try:
        return fn()
    except MemLikeHumanError as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        log.exception("unexpected failure")
        raise ToolError(f"internal: an unexpected error occurred: {after_failure}") from exc


# JSON-RPC codes for domain errors raised by resources and prompts (tools answer with isError results).
UNAVAILABLE = -32000  # JSON-RPC's range for server-defined errors: the archive or a provider is unavailable


def protocol_error(exc: MemLikeHumanError) -> MCPError:
    """A resource or prompt failure as a JSON-RPC error whose message starts with the tools.md code."""
    code = {"internal": INTERNAL_ERROR, "unavailable": UNAVAILABLE}.get(exc.code, INVALID_PARAMS)
    return MCPError(code=code, message=str(exc))


def _hints(*, read_only: bool, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
    return ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent)


# What each tool does to the archive, for hosts that gate tool calls by it (Codex runs a read-only tool
# without asking). A repeated checkpoint is a new snapshot: not idempotent. Whether a call reaches
# beyond this machine depends on the providers configured (tool_annotations).
ANNOTATIONS = {
    "memory_recall": _hints(read_only=True, idempotent=True),
    "memory_read": _hints(read_only=True, idempotent=True),
    "session_resume": _hints(read_only=True, idempotent=True),
    "memory_record": _hints(read_only=False, idempotent=True),  # the same event again is a duplicate
    "session_checkpoint": _hints(read_only=False),
    "memory_correct": _hints(read_only=False, destructive=True),
    "memory_forget": _hints(read_only=False, destructive=True, idempotent=True),
}
# The tools that send text to a provider: the extractor (record, correct) and the embedder (recall, resume).
_EXTRACTING = frozenset({"memory_record", "memory_correct"})
_EMBEDDING = frozenset({"memory_recall", "session_resume"})


def tool_annotations(settings: Settings) -> dict[str, ToolAnnotations]:
    """ANNOTATIONS with openWorldHint: true where the configured providers are remote (an OpenAI-compatible
    API, a host CLI), false where everything stays on this machine."""
    remote_extractor = settings.extractor in ("openai", "command")
    remote_embedder = settings.embedder == "openai"
    return {
        name: hints.model_copy(
            update={
                "open_world_hint": (name in _EXTRACTING and remote_extractor)
                or (name in _EMBEDDING and remote_embedder)
            }
        )
        for name, hints in ANNOTATIONS.items()
    }


class Stopping:
    """What a stop signal undoes before the process exits: the hooks' socket, then the open archive.

    The host ends a stdio server with SIGINT, then SIGTERM (Claude Code: 100 ms later). The SDK's
    stdin reader is a thread blocked in read(), so the event loop cannot wind down while the host keeps
    the pipe open: the handler runs these steps (in reverse order of `add`, for at most
    STOP_SECONDS, in a thread of their own since a tool call may hold the archive) and exits at once.
    Everything committed is durable before that (SQLite and PostgreSQL commit synchronously).
    """

    STOP_SECONDS = 0.8

    def __init__(self) -> None:
        self._steps: list[Callable[[], None]] = []
        self._stopping = False

    def add(self, step: Callable[[], None]) -> None:
        self._steps.append(step)

    def discard(self, step: Callable[[], None]) -> None:
        if step in self._steps:
            self._steps.remove(step)

    def install(self) -> None:
        """Handle SIGINT and SIGTERM (main thread only)."""
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, self._on_signal)

    def _on_signal(self, number: int, frame: Any) -> None:
        if self._stopping:  # a second signal (Claude Code: SIGINT, then SIGTERM 100 ms later) while stopping
            return
        self._stopping = True

        def run_steps() -> None:
            for step in reversed(list(self._steps)):
                try:
                    step()
                except Exception:  # a step that fails must not keep the next from running
                    log.exception("stopping: a clean-up step failed")

        worker = threading.Thread(target=run_steps, name="memlikehuman-stop", daemon=True)
        worker.start()
        worker.join(self.STOP_SECONDS)
        os._exit(0)  # stopped as asked: the host ends its servers this way


def hook_listener(engine: Engine) -> Listener | None:
    """The socket the prompt hooks of this archive ask for semantic context (hosts/prompt_context.py)."""
    from ..hosts import channel, prompt_context

    if engine.settings.embedder == "none":
        return None  # the hooks' own fast search is all this server could offer
    listener = channel.Listener(prompt_context.target(engine.settings), lambda r: prompt_context.answer(engine, r))

    def warm_then_listen() -> None:
        # The socket appears once this server can answer at once: a hook never spends its wait on a
        # server still loading its embedder while a warm one of the same archive runs.
        prompt_context.warm(engine)
        path = listener.start()
        if path is not None:
            log.debug("answering the prompt hooks of this archive on %s", path)

    threading.Thread(target=warm_then_listen, name="memlikehuman-warm", daemon=True).start()
    return listener


def make_server(settings: Settings, shared: Engine | None = None) -> tuple[MemoryMCPServer, Holder]:
    """The MCP server for one archive, without tools yet (build_server adds them); the archive opens in
    the lifespan and closes after it. With `shared`, every session uses that open archive (the warm
    process's, server/warm.py), which its owner closes."""
    holder = Holder(settings)
    middleware = []
    if settings.extractor == "sampling" and shared is None:
        from .sampling import Bridge

        holder.sampling = Bridge(settings)
        middleware.append(holder.sampling.middleware)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
        if shared is not None:
            holder._engine = shared
            yield {"engine": shared}
            return
        engine = Engine(settings)
        holder._engine = engine
        if holder.sampling is not None:
            holder.sampling.opened(engine)
        engine.start_extraction()  # events left pending by an earlier run are extracted again
        log.info("archive open: %s (schema %d)", settings.archive_label, engine.schema_version)
        listener = hook_listener(engine)
        steps = [engine.close, *([listener.close] if listener is not None else [])]
        for step in steps:
            server.stopping.add(step)
        try:
            yield {"engine": engine}
        finally:
            for step in steps:
                server.stopping.discard(step)
            if listener is not None:
                listener.close()
            holder._engine = None
            engine.close()

    server = MemoryMCPServer(
        name="memlikehuman", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan, middleware=middleware
    )
    server.default_scope = {"persona_id": settings.persona_id, "project_id": settings.project_id}
    server.annotations = tool_annotations(settings)
    server.stopping = Stopping()
    return server, holder
