"""MEMLIKEHUMAN_EXTRACTOR=sampling: the connected client's model makes the memories (MCP sampling/createMessage).

When a server may ask (read from mcp 2.3's code; docs/decisions/2026-12-03-memories-by-the-hosts-model.md):

- MCP up to 2025-11-25 (the ``initialize`` handshake, what hosts speak today): once the client has
  sent ``notifications/initialized``, the server may send requests of its own at any time on the
  connection. If the client declared the ``sampling`` capability, the background extraction worker
  asks it from its own threads (``SamplingExtractor``: the request is sent on the server's event
  loop, bounded by MEMLIKEHUMAN_TIMEOUT); memory_record waits for it no longer than
  MEMLIKEHUMAN_EXTRACTION_WAIT, as for every extractor.
- MCP 2026-07-28: there is no channel for a server's own requests; a server asks only by answering
  one of the client's calls with an ``InputRequiredResult`` that the client fulfils and sends again.
  memory_record does so for its own event when MEMLIKEHUMAN_EXTRACTION_WAIT is above 0 (the call
  then lasts as long as the client's model takes: tools_events.py); otherwise events stay pending.

A client that declares no sampling gets no request: its events stay pending, and the first recall
(and `stats`, `doctor`) says what to configure instead. A refusal, an error or a timeout of the
client is a transient failure: the worker tries again a few times with a backoff (archive/claims.py).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import warnings
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError
from mcp_types import (
    ClientCapabilities,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    InputRequiredResult,
    ModelHint,
    ModelPreferences,
    SamplingCapability,
    SamplingMessage,
    TextContent,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..config import Settings
from ..engine import Engine, Extractor
from ..errors import Transient
from ..records import RecordResult, Scope

log = logging.getLogger("memlikehuman.sampling")

# Sampling is deprecated as of MCP 2026-07-28 (SEP-2577); hosts of today implement it, and the SDK's
# warning would only reach stderr on every request.
warnings.simplefilter("ignore", MCPDeprecationWarning)

MAX_TOKENS = 4_096  # an answer of 30 memories with their quotes fits
SAMPLING = ClientCapabilities(sampling=SamplingCapability())
TIMED_OUT = -32001  # the SDK's code for a request that got no answer in time


# The answer's JSON schema rides along in the request's metadata ("passed through to the LLM provider"):
# a client whose model can be held to a schema may use it; MCP sampling has no field of its own for it.
SCHEMA_KEY = "memlikehuman/responseSchema"


def request(system: str, user: str, model: str | None, schema: dict[str, Any] | None = None) -> CreateMessageRequest:
    """The sampling request for one extraction prompt; the model name is only a hint."""
    hints = ModelPreferences(hints=[ModelHint(name=model)]) if model else None
    return CreateMessageRequest(
        params=CreateMessageRequestParams(
            messages=[SamplingMessage(role="user", content=TextContent(type="text", text=user))],
            system_prompt=system,
            max_tokens=MAX_TOKENS,
            temperature=0,
            include_context="none",
            model_preferences=hints,
            metadata={SCHEMA_KEY: schema} if schema else None,
        )
    )


def answer_text(result: CreateMessageResult | CreateMessageResultWithTools) -> str:
    """The text of the client's answer ("" for an image or audio answer: extraction then fails)."""
    content = result.content
    blocks = content if isinstance(content, list) else [content]
    return "".join(block.text for block in blocks if isinstance(block, TextContent))


def offers_sampling(session: ServerSession) -> bool:
    return bool(session.check_client_capability(SAMPLING))


class SamplingExtractor(Extractor):
    """Asks the client over its connection, from any thread but the event loop's."""

    needs_network = False

    def __init__(self, session: ServerSession, token: Any, timeout: float, model: str | None) -> None:
        self.session, self.token, self.timeout, self.model = session, token, timeout, model
        self.model_id = "sampling"
        self._answered = threading.local()  # the model of this thread's last answer (two worker threads)

    @property
    def label(self) -> str:  # type: ignore[override]
        """sampling:<the model that gave this thread's last answer> (read after complete, in its thread)."""
        model = getattr(self._answered, "model", "")
        return f"sampling:{model[:100]}" if model else "sampling"

    def complete(self, system: str, user: str, schema: dict[str, Any]) -> str:
        """The client's answer; Transient when it refuses, fails or does not answer within the timeout."""
        try:
            result = anyio.from_thread.run(self._ask, system, user, schema, token=self.token)
        except NoBackChannelError:
            raise Transient("the MCP client takes no requests from the server on this connection") from None
        except MCPError as exc:
            if exc.error.code == TIMED_OUT:
                raise Transient(
                    f"the MCP client did not answer the sampling request within {self.timeout:g} s"
                    " (MEMLIKEHUMAN_TIMEOUT)"
                ) from None
            raise Transient(
                f"the MCP client refused the sampling request ({exc.error.code}: {exc.error.message})"
            ) from None
        except Exception as exc:  # the edge's top level for this call: the loop gone, a malformed answer
            raise Transient(f"the MCP client's answer could not be read ({type(exc).__name__}: {exc})") from None
        self._answered.model = result.model or ""
        return answer_text(result)

    async def _ask(self, system: str, user: str, schema: dict[str, Any]) -> CreateMessageResult:
        with anyio.fail_after(self.timeout + 1):  # the SDK's own timeout comes first; this one is a backstop
            result = await self.session.send_request(
                request(system, user, self.model, schema),
                CreateMessageResult,
                request_read_timeout_seconds=self.timeout,
            )
        return result


class Bridge:
    """Connects the client's session to the engine once the client is initialized (legacy MCP)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.token: Any = None
        self.engine: Engine | None = None
        # Only the scopes this client works in go to it: the server's own, and those it records in.
        self.scopes: list[Scope] = [Scope(settings.persona_id, settings.project_id)]
        self.modern_noted = False
        # The SDK handles `notifications/initialized` beside the calls that follow it: a memory_record
        # sent right after it could otherwise look for the extractor before `initialized` has set it.
        self._handshake = False
        self._settled = threading.Event()

    def opened(self, engine: Engine) -> None:
        """In the lifespan, on the event loop: the loop's token lets worker threads send requests on it."""
        self.token, self.engine = anyio.lowlevel.current_token(), engine

    async def middleware(self, ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method == "initialize":  # handled inline: nothing after it is read before this returns
            self._handshake = True
        elif ctx.method == "notifications/initialized":
            try:
                # In a thread: starting the worker takes the archive's write lock (claims of dead processes).
                await anyio.to_thread.run_sync(self.initialized, ctx.session)
            finally:
                self._settled.set()
        return result

    def settle(self) -> None:
        """Before a memory_record that may wait for its extraction: once the client has begun the
        handshake, wait (at most MEMLIKEHUMAN_EXTRACTION_WAIT) until its `initialized` notification has been
        acted on."""
        if self._handshake and self.settings.extraction_wait > 0:
            self._settled.wait(self.settings.extraction_wait)

    def seen(self, scope: Scope) -> None:
        """A scope this client records in: the worker may ask the client about its events."""
        if scope not in self.scopes:
            self.scopes.append(scope)

    def initialized(self, session: ServerSession) -> None:
        engine = self.engine
        if engine is None:
            return
        protocol, sampling = str(session.protocol_version), offers_sampling(session)
        engine.client_seen(_client_name(session), protocol, sampling, modern=False)
        if not sampling:
            log.warning("the MCP client does not offer sampling: events stay pending")
            return
        extractor = SamplingExtractor(session, self.token, self.settings.timeout, self.settings.extractor_model or None)
        engine.use_extractor(extractor, lambda: list(self.scopes))
        log.info("extraction through the MCP client's sampling (protocol %s)", protocol)

    def modern_call(self, ctx: Any) -> bool:
        """For a call of MCP 2026-07-28: whether memory_record may ask the client's model inside it."""
        caps = getattr(ctx, "client_capabilities", None)
        sampling = caps is not None and caps.sampling is not None
        if not self.modern_noted and self.engine is not None:
            self.modern_noted = True
            self.engine.client_seen("the MCP client", str(ctx.protocol_version), sampling, modern=True)
        return sampling and self.settings.extraction_wait > 0


def _state(raw: str | None) -> dict[str, Any]:
    try:
        state = json.loads(raw or "{}")
    except ValueError:
        return {}
    return state if isinstance(state, dict) else {}


def is_modern(ctx: Any) -> bool:
    return getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS


def _client_name(session: ServerSession) -> str:
    params = getattr(session, "client_params", None)
    info = getattr(params, "client_info", None)
    return f"{info.name} {info.version}" if info is not None else "the MCP client"


KEY = "memlikehuman.extract"


def in_call(bridge: Bridge, engine: Engine, ctx: Any, result: RecordResult) -> RecordResult | InputRequiredResult:
    """memory_record under MCP 2026-07-28: ask the client's model inside this call, or take its answer.

    The first round records the event (already done: ``result``) and answers with the extraction
    prompt as an input request; the client asks its model and sends the same call again with the
    answer, which is checked and stored like any extractor's (the event's extraction: complete or
    failed). Any other call, and a client without sampling, gets ``result`` unchanged.
    """
    if not is_modern(ctx) or result.extraction_state == "complete" or not bridge.modern_call(ctx):
        return result
    answered = (ctx.input_responses or {}).get(KEY)
    if not isinstance(answered, CreateMessageResult | CreateMessageResultWithTools):
        if ctx.request_state is not None:
            return result  # asked once in this call, and no answer came: the event stays pending
        system, user, schema, shown = engine.extraction_prompt(result.sequence)
        # What the prompt showed goes round with it: the aliases of the answer mean those memories.
        state = json.dumps({"sequence": result.sequence, "duplicate": result.duplicate, "shown": shown})
        model = bridge.settings.extractor_model or None
        return InputRequiredResult(input_requests={KEY: request(system, user, model, schema)}, request_state=state)
    first = _state(ctx.request_state)
    label = f"sampling:{answered.model[:100]}" if answered.model else "sampling"
    echoed = first.get("shown")
    pinned = echoed if isinstance(echoed, list) and all(isinstance(i, int) for i in echoed) else []
    outcome = engine.extract_answer(result.sequence, answer_text(answered), label, pinned)
    return dataclasses.replace(
        result,
        duplicate=bool(first.get("duplicate", result.duplicate)),
        extraction_state=outcome.state,
        memory_ids=outcome.memory_ids,
        error=outcome.error,
        warnings=(*result.warnings, *outcome.warnings),
    )
