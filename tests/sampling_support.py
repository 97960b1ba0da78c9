"""MCP clients with a sampling callback, over real stdio, for the sampling extractor's tests."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from anyio.from_thread import start_blocking_portal
from conftest import SyncClient
from mcp import Client, StdioServerParameters
from mcp_types import CreateMessageRequestParams, CreateMessageResult, ErrorData, TextContent

from memlikehuman.server.app import MemoryMCPServer

Callback = Callable[[Any, CreateMessageRequestParams], Awaitable[CreateMessageResult | ErrorData]]

_EVENT = re.compile(r"<<<BEGIN DATA (\w+) EVENT[^>]*>>>\n[^\n]*\n(.*?)\n<<<END DATA \1>>>", re.S)


def event_texts(params: CreateMessageRequestParams) -> list[str]:
    """The EVENT blocks' texts of an extraction prompt (one, or several in a batch)."""
    prompt = params.messages[0].content
    assert isinstance(prompt, TextContent)
    return [match.group(2) for match in _EVENT.finditer(prompt.text)]


def answer(text: str, model: str = "host-model-1") -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(type="text", text=text), model=model)


def quoting_model(asked: list[CreateMessageRequestParams]) -> Callback:
    """A "host model" that remembers each event's first sentence, quoting it exactly."""

    async def callback(ctx: Any, params: CreateMessageRequestParams) -> CreateMessageResult | ErrorData:
        asked.append(params)
        items = []
        for number, text in enumerate(event_texts(params), start=1):
            first = re.split(r"(?<=[.!?])\s", text.strip())[0]
            item = {"content": f"The user said: {first}", "quote": first, "kind": "fact", "basis": "stated"}
            items.append({**item, "subject": None, "valid_from": None, "gist": None, "event": number})
        return answer("```json\n" + json.dumps({"memories": items}) + "\n```")

    return callback


async def refusing(ctx: Any, params: CreateMessageRequestParams) -> ErrorData:
    return ErrorData(code=-1, message="User rejected sampling request")


async def hanging(ctx: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
    await anyio.sleep(3600)
    raise AssertionError("unreachable")


@contextmanager
def sampling_client(
    target: MemoryMCPServer | StdioServerParameters, callback: Callback | None, mode: str = "legacy"
) -> Iterator[SyncClient]:
    """A blocking client of a server in this process or over stdio (conftest.connected) that answers the
    server's sampling requests with `callback`; None declares no sampling capability."""
    client = Client(target, sampling_callback=callback, mode=mode)  # type: ignore[arg-type]
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(client) as opened:
        yield SyncClient(portal, opened)
