"""Where the server departs from the MCP SDK's defaults, and why: each override in this one module.

tests/test_sdk_pins.py pins the SDK behaviour each part works around: when an SDK release changes
it, a pin fails, and the workaround can go (or must change). The parts:
- `MemoryMCPServer.tool`: the agent reads the docstring on one line, the input schema is the lean one
  (`lean_schema`: a host sends it with every model request, and pydantic's titles, `$defs` and
  `anyOf` with null only cost tokens), and each tool gets its MCP annotations. Reads the SDK's
  private `_tool_manager`.
- `MemoryMCPServer.call_tool`: an unknown tool or argument, and arguments that fail validation, get a
  tools.md code (the SDK's own messages have none); nulls mean "the default" (`without_nulls`); a
  tool that crashes is `internal`, never a traceback. Reads `_tool_manager`.
- `get_prompt`, `read_resource`: an unknown prompt, argument or URI is the caller's to fix
  (`invalid_argument`/`not_found`), where the SDK answers an internal error or an uncoded one.
  Reads `_prompt_manager`.
- `run_stdio_async` with `AnsweringReadStream`: the SDK's stdio reader drops a line it cannot parse
  (a lone UTF-16 surrogate escape, which JavaScript hosts write when they cut a string inside an
  emoji) and the host waits until its own timeout; such a request gets an `invalid_argument` answer,
  and so does one nested deeper than DEEPEST levels (read without overflowing Python's own parser).
  A `tools/call` or `prompts/get` whose `name` or `arguments` has the wrong JSON type, or a
  `resources/read` without a string `uri`, gets a coded answer that names the field, where the SDK
  answers a bare "Invalid request parameters". Reads `_lowlevel_server`.
- `AnsweringReadStream` and `AnsweredWriteStream` (`Unanswered`): the SDK cancels every call in flight
  when stdin ends, so calls a host wrote right before closing it go unanswered; the end of stdin is
  passed on only once every request read has been answered (at most EOF_ANSWER_SECONDS).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    ToolAnnotations,
)
from pydantic import ValidationError

from ..text import nesting

MAY_HAVE_CHANGED = (
    "the change may or may not have been made: check with memory_read or memory_recall before you retry,"
    " and report the failure with the server's stderr log"
)

log = logging.getLogger("memlikehuman.server")

# How long the end of stdin waits for the answers to the calls read before it (a call that needs the
# client, gone with stdin, would otherwise hold the exit for ever); later the SDK cancels what still runs.
EOF_ANSWER_SECONDS = 30.0


DEEPEST = 100  # levels of arrays and objects a request may nest (the SDK's parser stops near 200)

SURROGATE_MESSAGE = (
    "invalid_argument: the request contains an unpaired UTF-16 surrogate escape (such as \\ud83d, half of an"
    " emoji cut in two): send valid Unicode text"
)


def rejection(exc: Exception) -> JSONRPCError | None:
    """The error answer to an unparseable line, or None when it has no request ID to answer to."""
    line = _line(exc)
    levels = nesting.depth(line) if line is not None else 0
    message = _read(line)
    request_id = message.get("id") if isinstance(message, dict) and "method" in message else None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str) or not _valid_unicode(request_id):
        log.warning("dropped a message that is not valid JSON-RPC: %s", str(exc).splitlines()[0][:300])
        return None
    if levels > DEEPEST:
        error = ErrorData(
            code=INVALID_PARAMS,
            message=f"invalid_argument: the request is nested {levels:,} levels deep: send arguments nested"
            f" at most {DEEPEST} levels deep",
        )
    elif _valid_unicode(message):
        error = ErrorData(code=INVALID_REQUEST, message=f"invalid request: {str(exc).splitlines()[0][:300]}")
    else:
        error = ErrorData(code=INVALID_PARAMS, message=SURROGATE_MESSAGE)
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


def malformed_call(message: Any) -> JSONRPCError | None:
    """The error answer to a tools/call, prompts/get or resources/read with badly typed params, else None."""
    if not isinstance(message, JSONRPCRequest):
        return None
    problem = _params_problem(message.method, message.params or {})
    if problem is None:
        return None
    return JSONRPCError(jsonrpc="2.0", id=message.id, error=ErrorData(code=INVALID_PARAMS, message=problem))


def _params_problem(method: str, params: dict[str, Any]) -> str | None:
    if method == "resources/read":
        if not isinstance(params.get("uri"), str):
            return "invalid_argument: params.uri must be a string such as persona://default/current"
        return None
    if method not in ("tools/call", "prompts/get"):
        return None
    listing = "tools/list" if method == "tools/call" else "prompts/list"
    arguments = params.get("arguments")
    if not isinstance(params.get("name"), str):
        return f"invalid_argument: params.name must be a string: call {listing} for the names"
    if arguments is not None and not isinstance(arguments, dict):
        return "invalid_argument: params.arguments must be a JSON object of named arguments: send {} for none"
    if method == "prompts/get":
        wrong = sorted(k for k, v in (arguments or {}).items() if not isinstance(v, str))
        if wrong:
            return f"invalid_argument: prompt arguments are strings; {', '.join(map(repr, wrong))} is not"
    return None


def _read(line: str | None) -> Any:
    """The JSON value of a rejected line (None: it is none). Python's json raises RecursionError near a
    thousand levels: a line nested deeper is read with its levels below the request's own as null."""
    if line is None:
        return None
    try:
        try:
            return json.loads(line)
        except RecursionError:
            return json.loads(nesting.outline(line, 1))
    except ValueError:
        return None


def _line(exc: Exception) -> str | None:
    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors()
    value = errors[0].get("input") if errors and errors[0].get("type") == "json_invalid" else None
    return value if isinstance(value, str) else None


def _valid_unicode(value: Any) -> bool:
    """False when any string in the decoded JSON value (keys included) holds a lone surrogate."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Unanswered:
    """The IDs of the requests passed to the server and not answered yet (one event loop: no lock)."""

    def __init__(self) -> None:
        self._ids: set[Any] = set()
        self._changed = anyio.Event()

    def asked(self, message: Any) -> None:
        if isinstance(message, JSONRPCRequest):
            self._ids.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            self.answered((message.params or {}).get("requestId"))  # a cancelled request gets no answer

    def answered(self, request_id: Any) -> None:
        self._ids.discard(request_id)
        self._changed.set()

    async def all_answered(self, seconds: float) -> None:
        """Wait until no request is left unanswered, at most `seconds`."""
        with anyio.move_on_after(seconds):
            while self._ids:
                self._changed = anyio.Event()
                await self._changed.wait()
        if self._ids:
            log.warning("stdin ended with %d call(s) still running after %ds: cancelled", len(self._ids), seconds)


class Wrapped:
    """A stream around one of the SDK's: closing it (also by leaving `async with`) closes that one."""

    _inner: Any

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class AnsweredWriteStream(Wrapped):
    """Wraps the SDK's stdio write stream: each answer written is crossed off `Unanswered`."""

    def __init__(self, inner: Any, unanswered: Unanswered) -> None:
        self._inner = inner
        self._unanswered = unanswered

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            self._unanswered.answered(message.id)


class AnsweringReadStream(Wrapped):
    """Wraps the SDK's stdio read stream: unparseable requests are answered on the write stream, and
    the end of the stream is passed on once every request read has its answer (`Unanswered`)."""

    def __init__(self, inner: Any, write: Any, unanswered: Unanswered | None = None) -> None:
        self._inner = inner
        self._write = write
        self._unanswered = unanswered or Unanswered()

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            try:
                item = await self._inner.receive()
            except anyio.EndOfStream:
                await self._unanswered.all_answered(EOF_ANSWER_SECONDS)
                raise
            if isinstance(item, SessionMessage):
                answer = malformed_call(item.message)
                if answer is None:
                    self._unanswered.asked(item.message)
                    return item
            elif not isinstance(item, Exception):
                return item
            else:
                answer = rejection(item)
            if answer is not None:
                await self._write.send(SessionMessage(answer))

    def __aiter__(self) -> AnsweringReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


# -- the tools, prompts and resources -------------------------------------------------------------


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


def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema as the agent reads it: `$defs` inlined, no titles, each optional argument as its type.

    Null stays accepted for every optional argument (`without_nulls`); the schema just does not spell
    it out, nor the null default of an argument whose default is "not given". Unknown fields stay
    refused, inside objects too, without `additionalProperties: false` saying so. Validation is the
    tool function's own (pydantic), whatever the schema says.
    """
    defs = schema.get("$defs", {})
    return {
        key: _lean(value, defs) if key == "properties" else value
        for key, value in schema.items()
        if key not in ("$defs", "title")
    }


def _lean(properties: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    return {name: _lean_property(prop, defs) for name, prop in properties.items()}


def _lean_property(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    prop = _inlined(prop, defs)
    options = [option for option in prop.pop("anyOf", []) if option != {"type": "null"}]
    if len(options) == 1:
        prop = {**_inlined(options[0], defs), **prop}
    elif options:
        prop["anyOf"] = options
    if "default" in prop and prop["default"] is None:
        del prop["default"]
    if "items" in prop:
        prop["items"] = _lean_property(prop["items"], defs)
    if "properties" in prop:
        prop["properties"] = _lean(prop["properties"], defs)
    return {key: value for key, value in prop.items() if key not in ("title", "additionalProperties")}


def _inlined(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """The property with a `$ref` to `$defs` replaced by what it names (our models hold no cycles)."""
    ref = prop.get("$ref", "")
    if not ref.startswith("#/$defs/"):
        return dict(prop)
    rest = {key: value for key, value in prop.items() if key != "$ref"}
    return {**defs[ref.removeprefix("#/$defs/")], **rest}


class MemoryMCPServer(MCPServer[Any]):
    """MCPServer whose argument-validation failures carry the invalid_argument code."""

    #: persona_id/project_id for tool calls that name none (set from the settings by build_server)
    default_scope: dict[str, str] = {}
    #: MCP tool annotations by tool name (app.ANNOTATIONS), given to each tool as it is registered
    annotations: dict[str, ToolAnnotations] = {}
    #: what a stop signal undoes (app.Stopping: serve installs it, the lifespan adds its steps)
    stopping: Any = None

    def tool(  # type: ignore[override]
        self, name: str | None = None, title: str | None = None, description: str | None = None, **kwargs: Any
    ) -> Any:
        """Like MCPServer.tool, with the docstring on one line as the description the agent reads."""

        def decorate(fn: Callable[..., Any]) -> Any:
            text = description or " ".join((fn.__doc__ or "").split())
            kwargs.setdefault("annotations", self.annotations.get(name or fn.__name__))
            registered = MCPServer.tool(self, name=name, title=title, description=text, **kwargs)(fn)
            tool = self._tool_manager.get_tool(name or fn.__name__)
            if tool is not None:
                tool.parameters = lean_schema(tool.parameters)
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
        """Serve on stdin/stdout; a request the SDK cannot parse gets an error answer, and every request
        read before stdin ends gets its answer before the server stops (AnsweringReadStream)."""
        await self.run_lines()

    async def run_lines(self, lines: Any = None, out: Any = None) -> None:
        """One session over the SDK's stdio transport: on stdin/stdout, or on `lines` (an async iterator
        of JSON-RPC lines) and `out` (async `write(text)` and `flush()`), as server/warm.py's sockets give them."""
        unanswered = Unanswered()
        async with stdio_server(lines, out) as (read_stream, write_stream):
            await self._lowlevel_server.run(
                AnsweringReadStream(read_stream, write_stream, unanswered),
                AnsweredWriteStream(write_stream, unanswered),
                self._lowlevel_server.create_initialization_options(),
            )
