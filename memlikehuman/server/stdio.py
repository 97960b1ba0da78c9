"""The stdio read side, with an answer for requests the SDK cannot parse.

The SDK's stdio reader validates each line with a strict JSON parser and, when that fails, passes
the error on to a handler that only logs it at debug level: the host never gets an answer and
waits until its own timeout. The usual such line is valid JSON with an unpaired UTF-16 surrogate
escape (``"\\ud83d"``), which a JavaScript host writes when it cuts a string inside an emoji. Such a
request is answered here with an ``invalid_argument`` error that says what to fix. A line that is
not JSON at all cannot be answered (its ID is unknown); it is logged as a warning on stderr.

A ``tools/call`` or ``prompts/get`` whose ``name`` is not a string or whose ``arguments`` is not an
object (or, for a prompt, holds a value that is not a string), or a ``resources/read`` without a
string ``uri``, parses as JSON-RPC, but the SDK answers it with a bare "Invalid request parameters":
it gets a coded answer here that names the field.
"""

from __future__ import annotations

import json
import logging
from types import TracebackType
from typing import Any

import anyio
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_PARAMS, INVALID_REQUEST, ErrorData, JSONRPCError, JSONRPCRequest
from pydantic import ValidationError

log = logging.getLogger("memlikehuman.server")

SURROGATE_MESSAGE = (
    "invalid_argument: the request contains an unpaired UTF-16 surrogate escape (such as \\ud83d, half of an"
    " emoji cut in two): send valid Unicode text"
)


def rejection(exc: Exception) -> JSONRPCError | None:
    """The error answer to an unparseable line, or None when it has no request ID to answer to."""
    line = _line(exc)
    try:
        message = json.loads(line) if line is not None else None
    except ValueError:
        message = None
    request_id = message.get("id") if isinstance(message, dict) and "method" in message else None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str) or not _valid_unicode(request_id):
        log.warning("dropped a message that is not valid JSON-RPC: %s", str(exc).splitlines()[0][:300])
        return None
    if _valid_unicode(message):
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


class AnsweringReadStream:
    """Wraps the SDK's stdio read stream: unparseable requests are answered on the write stream."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if isinstance(item, SessionMessage):
                answer = malformed_call(item.message)
                if answer is None:
                    return item
            elif not isinstance(item, Exception):
                return item
            else:
                answer = rejection(item)
            if answer is not None:
                await self._write.send(SessionMessage(answer))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> AnsweringReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweringReadStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
