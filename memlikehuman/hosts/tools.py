"""Tool calls and subagent replies: what the hooks record besides prompts and final replies.

Off by default; `MEMLIKEHUMAN_HOOK_RECORD` (or the hook's `--record`, written by `install --record`)
names the parts: `assistant` (final replies, the default), `tools`, `subagents` (docs/hosts.md).

A tool call is one event with role `tool`: its name, its input and its result, each cut to a few
thousand characters, injected context stripped. Its event ID carries the host's ID of the call
(`tool_use_id`, Codex's `call_id`), so the same call seen twice (a re-run, or both the turn-end scan
of the transcript and a per-call hook) is stored once. Calls of the memory tools themselves are not
recorded: their results are the archive's own text, and storing them would feed memories back in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from . import markers

PARTS = ("assistant", "tools", "subagents")
DEFAULT = frozenset({"assistant"})
INPUT_CHARS = 2_000
RESULT_CHARS = 4_000
# Our own MCP tools (tools.md): their results are archive text, never recorded back.
MEMORY_TOOLS = frozenset(
    {"memory_record", "memory_recall", "memory_read", "memory_correct", "memory_forget"}
    | {"session_checkpoint", "session_resume"}
)


class ToolCall(NamedTuple):
    """One tool call with its result (None: the result was not seen)."""

    call_id: str | None
    name: str
    input: Any
    result: Any


def parts(raw: str | None) -> frozenset[str]:
    """The parts a comma-separated setting names (`none` or empty: nothing at turn end)."""
    if raw is None:
        return DEFAULT
    names = {name.strip().lower() for name in raw.split(",") if name.strip()}
    names.discard("none")
    unknown = sorted(names - set(PARTS))
    if unknown:
        raise ValueError(
            f"MEMLIKEHUMAN_HOOK_RECORD names {', '.join(unknown)}: use a comma-separated list of"
            f" {', '.join(PARTS)}, or none"
        )
    return frozenset(names)


def is_memory_tool(name: str, server: str | None = None) -> bool:
    """A call of MemLikeHuman's own tools (Claude Code `mcp__memlikehuman__...`, Cursor `MCP:memlikehuman:...`)."""
    return "memlikehuman" in name.lower() or (server or "").lower() == "memlikehuman" or name in MEMORY_TOOLS


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit:,} more characters not recorded]"


def _text(value: Any) -> str:
    if value is None:
        return "(not recorded)"
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(block, dict) for block in value):
        from .transcript import content_text

        joined = content_text(value)
        if joined:
            return joined
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def render(call: ToolCall) -> str:
    """The event text of a call: name, input and result, injected context stripped, each part cut."""
    head = f"tool call {call.name}" + (f" ({call.call_id})" if call.call_id else "")
    given = markers.strip(_text(call.input))
    result = markers.strip(_text(call.result))
    return f"{head}\ninput: {_cut(given, INPUT_CHARS)}\nresult: {_cut(result, RESULT_CHARS)}"


def from_payload(payload: dict[str, Any]) -> ToolCall | None:
    """The call a per-call hook reports (Claude Code/Codex PostToolUse, Gemini AfterTool, Cursor postToolUse)."""
    name = payload.get("tool_name")
    if not isinstance(name, str) or not name:
        return None
    context = payload.get("mcp_context")
    server = context.get("server_name") if isinstance(context, dict) else None
    if is_memory_tool(name, server if isinstance(server, str) else None):
        return None
    result = next((payload[k] for k in ("tool_response", "tool_output", "result_json") if k in payload), None)
    call_id = payload.get("tool_use_id")
    return ToolCall(call_id if isinstance(call_id, str) and call_id else None, name, payload.get("tool_input"), result)


def last_turn(lines: Iterable[str]) -> list[ToolCall]:
    """The tool calls since the last user prompt of a Claude Code transcript or a Codex rollout."""
    calls: dict[str, ToolCall] = {}
    for entry in _entries(lines):
        for kind, key, call in _items(entry):
            if kind == "prompt":
                calls.clear()
            elif kind == "call" and call is not None:
                calls[key] = call
            elif kind == "result" and key in calls and call is not None:
                calls[key] = calls[key]._replace(result=call.result)
    return [call for call in calls.values() if not is_memory_tool(call.name)]


def _entries(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    for raw in lines:
        try:
            entry = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            continue  # a line being written, not ours to read, or nested past what json reads
        if isinstance(entry, dict) and not entry.get("isSidechain") and not entry.get("isMeta"):
            yield entry


def _items(entry: dict[str, Any]) -> Iterator[tuple[str, str, ToolCall | None]]:
    """("prompt" | "call" | "result", call ID, call) for each relevant part of one transcript line."""
    from .transcript import content_text

    message = entry.get("message")
    if entry.get("type") in ("user", "assistant") and isinstance(message, dict):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if entry["type"] == "user" and content_text(content):
            yield "prompt", "", None
        for block in (b for b in blocks if isinstance(b, dict)):
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                yield "call", block["id"], ToolCall(block["id"], str(block.get("name", "?")), block.get("input"), None)
            elif block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                yield "result", block["tool_use_id"], ToolCall(None, "", None, block.get("content"))
        return
    payload = entry.get("payload")
    if entry.get("type") != "response_item" or not isinstance(payload, dict):
        return
    kind, call_id = payload.get("type"), payload.get("call_id")
    if kind == "message" and payload.get("role") == "user":
        yield "prompt", "", None
    elif kind in ("function_call", "custom_tool_call", "local_shell_call") and isinstance(call_id, str):
        given = payload.get("arguments", payload.get("input", payload.get("action")))
        yield "call", call_id, ToolCall(call_id, str(payload.get("name", "shell")), _json_or_text(given), None)
    elif kind in ("function_call_output", "custom_tool_call_output") and isinstance(call_id, str):
        yield "result", call_id, ToolCall(None, "", None, payload.get("output"))


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return value
    return value
