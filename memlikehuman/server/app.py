"""The MCP edge: build_server(), error translation, and the open archive's lifespan."""

from __future__ import annotations

import inspect
import logging
import os
import signal
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, ToolAnnotations
from pydantic import ValidationError

from .. import __version__, instructions
from ..config import Settings
from ..engine import Engine
from ..errors import MemLikeHumanError, Unavailable
from .stdio import AnsweringReadStream

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
MAY_HAVE_CHANGED = (
    "the change may or may not have been made: check with memory_read or memory_recall before you retry,"
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


def _validation_text(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        field = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{field}: {err['msg']}")
    return "invalid_argument: " + "; ".join(parts) + ". Fix these fields and call again."


def without_nulls(arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments without null values (also inside objects): many hosts send null for "not given".

    A null optional argument then takes its default; a null required one is reported as missing.
    """
    return {
        key: without_nulls(value) if isinstance(value, dict) else value
        for key, value in arguments.items()
        if value is not None
    }


def nullable_optionals(schema: dict[str, Any]) -> None:
    """Let the input schema say that null is accepted for every optional argument (it means the default)."""
    for part in [schema, *schema.get("$defs", {}).values()]:
        required = set(part.get("required", ()))
        for key, prop in part.get("properties", {}).items():
            if key in required or "anyOf" in prop and {"type": "null"} in prop["anyOf"]:
                continue
            inner = {k: prop.pop(k) for k in list(prop) if k not in ("default", "description", "title")}
            prop["anyOf"] = [inner, {"type": "null"}]
            prop["description"] = prop.get("description", key.replace("_", " ")) + " (null: the default)"


def _hints(*, read_only: bool, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=False
    )


# What each tool does to the archive, for hosts that gate tool calls by it (Codex runs a read-only tool
# without asking; a destructive one is confirmed). None reaches beyond this machine's archive on its own.
ANNOTATIONS = {
    "memory_recall": _hints(read_only=True, idempotent=True),
    "memory_read": _hints(read_only=True, idempotent=True),
    "session_resume": _hints(read_only=True, idempotent=True),
    "memory_record": _hints(read_only=False, idempotent=True),  # the same event again is a duplicate
    "session_checkpoint": _hints(read_only=False, idempotent=True),
    "memory_correct": _hints(read_only=False, destructive=True),
    "memory_forget": _hints(read_only=False, destructive=True, idempotent=True),
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


class MemoryMCPServer(MCPServer[Any]):
    """MCPServer whose argument-validation failures carry the invalid_argument code."""

    #: persona_id/project_id for tool calls that name none (set from the settings by build_server)
    default_scope: dict[str, str] = {}
    #: what a stop signal undoes (serve installs it; the lifespan adds its steps)
    stopping: Stopping = Stopping()

    def tool(  # type: ignore[override]
        self, name: str | None = None, title: str | None = None, description: str | None = None, **kwargs: Any
    ) -> Any:
        """Like MCPServer.tool, with the docstring dedented into the description the agent reads."""

        def decorate(fn: Callable[..., Any]) -> Any:
            text = description or inspect.cleandoc(fn.__doc__ or "")
            kwargs.setdefault("annotations", ANNOTATIONS.get(name or fn.__name__))
            registered = MCPServer.tool(self, name=name, title=title, description=text, **kwargs)(fn)
            tool = self._tool_manager.get_tool(name or fn.__name__)
            if tool is not None:
                nullable_optionals(tool.parameters)
            return registered

        return decorate

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            raise ToolError(f"not_found: there is no tool named {name!r}; call tools/list for the available tools")
        unknown = sorted(set(arguments or {}) - set(tool.parameters.get("properties", {})))
        if unknown:
            raise ToolError(f"invalid_argument: unknown argument(s) {', '.join(unknown)}: remove them and call again")
        # A scope the call does not name is the installed one (MEMLIKEHUMAN_PERSONA/PROJECT), as the hooks use;
        # a null names none either (hosts send null for "not given").
        defaults = {k: v for k, v in self.default_scope.items() if k in tool.parameters.get("properties", {})}
        arguments = {**defaults, **without_nulls(arguments or {})}
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            log.error("tool %s crashed", name, exc_info=exc.__cause__)
            raise ToolError(f"internal: the tool {name} failed unexpectedly: {MAY_HAVE_CHANGED}") from exc
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(_validation_text(exc.__cause__)) from exc
            raise

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        # The SDK turns an unknown prompt or argument into an internal error: these are the caller's to fix.
        prompt = self._prompt_manager.get_prompt(name)
        if prompt is None:
            raise MCPError(INVALID_PARAMS, f"not_found: there is no prompt named {name!r}; call prompts/list")
        unknown = sorted(set(arguments or {}) - {argument.name for argument in prompt.arguments or []})
        if unknown:
            names = ", ".join(map(repr, unknown))
            raise MCPError(INVALID_PARAMS, f"invalid_argument: unknown argument(s) {names}: remove them and call again")
        return await super().get_prompt(name, arguments, context)

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        try:
            return await super().read_resource(uri, context)
        except ResourceNotFoundError:
            raise MCPError(
                INVALID_PARAMS,
                f"not_found: no resource at {str(uri)[:200]}: read persona://{{persona_id}}/current with a persona_id"
                " of ASCII letters, digits, '.', '_', '-' and ':'",
            ) from None

    async def run_stdio_async(self) -> None:
        """Serve on stdin/stdout; a request the SDK cannot parse gets an error answer (see stdio.py)."""
        async with stdio_server() as (read_stream, write_stream):
            await self._lowlevel_server.run(
                AnsweringReadStream(read_stream, write_stream),
                write_stream,
                self._lowlevel_server.create_initialization_options(),
            )


def _hook_listener(engine: Engine) -> Listener | None:
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


def make_server(settings: Settings) -> tuple[MemoryMCPServer, Holder]:
    """The MCP server for one archive, without tools yet (build_server adds them); the archive opens in
    the lifespan and closes after it."""
    holder = Holder(settings)
    middleware = []
    if settings.extractor == "sampling":
        from .sampling import Bridge

        holder.sampling = Bridge(settings)
        middleware.append(holder.sampling.middleware)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
        engine = Engine(settings)
        holder._engine = engine
        if holder.sampling is not None:
            holder.sampling.opened(engine)
        engine.start_extraction()  # events left pending by an earlier run are extracted again
        log.info("archive open: %s (schema %d)", settings.archive_label, engine.schema_version)
        listener = _hook_listener(engine)
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
    server.stopping = Stopping()
    return server, holder
