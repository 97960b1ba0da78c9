"""What each host sends to a hook and what it expects back, normalized to five steps.

Steps: `start` (session start), `prompt` (a prompt was submitted), `reply` (the assistant
answered: Stop / afterAgentResponse / AfterAgent), `compact` (before compaction), `end`, and the
two that record only when configured (tools.py): `tool` (a tool call finished) and `subagent`.
Field names per host are in docs/hosts.md with the sources they were checked against.
"""

from __future__ import annotations

import json
import os
from typing import Any, NamedTuple

from .storable import readable_key, session_key

HOSTS = ("claude-code", "codex", "cursor", "gemini")

_EVENTS: dict[str, dict[str, str]] = {
    "claude-code": {
        "SessionStart": "start",
        "UserPromptSubmit": "prompt",
        "Stop": "reply",
        "PreCompact": "compact",
        "SessionEnd": "end",
        "PostToolUse": "tool",
        "SubagentStop": "subagent",
    },
    "cursor": {
        "sessionStart": "start",
        "beforeSubmitPrompt": "prompt",
        "afterAgentResponse": "reply",
        "stop": "reply",
        "preCompact": "compact",
        "sessionEnd": "end",
        "postToolUse": "tool",
    },
    "gemini": {
        "SessionStart": "start",
        "BeforeAgent": "prompt",
        "AfterAgent": "reply",
        "PreCompress": "compact",
        "SessionEnd": "end",
        "AfterTool": "tool",
    },
}
_EVENTS["codex"] = dict(_EVENTS["claude-code"])


def events_of(host: str) -> dict[str, str]:
    """The host's hook event names and the step each one runs."""
    return _EVENTS[host]


class HookInput(NamedTuple):
    """One hook call, normalized (a named tuple: cheaper to define than a dataclass on the hook path)."""

    host: str
    event: str  # the host's own event name
    step: str  # start | prompt | reply | compact | end | tool | subagent | "" (not handled)
    session_id: str
    turn_id: str | None  # the host's ID of this prompt/turn, when it sends one
    cwd: str | None
    transcript_path: str | None
    source: str | None  # SessionStart: startup | resume | clear | compact
    prompt: str | None
    reply: str | None  # the assistant's final message, when the payload carries it
    agent_id: str | None = None  # SubagentStop: the subagent's ID
    agent_transcript_path: str | None = None  # SubagentStop: the subagent's own transcript
    payload: dict[str, Any] | None = None  # the payload as sent (the tool step reads its tool fields)


def _str(payload: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def session_of(payload: dict[str, Any], parent: int | None = None) -> str:
    """The session a hook call belongs to (docs/hosts.md, "Sessions"): the host's session ID (a number as
    its digits), else a key of the transcript's path, else one of the process that started the hook
    (`parent`, default this process's parent); made storable (storable.session_key)."""
    for key in ("session_id", "conversation_id", "sessionId"):
        value = payload.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str) and value:
            return session_key(value)
    transcript = _str(payload, "transcript_path")
    if transcript:
        name = transcript.rsplit("/", 1)[-1].removesuffix(".jsonl")
        return readable_key(name or "transcript", transcript)
    return _host_process(os.getppid() if parent is None else parent)


def _host_process(parent: int) -> str:
    """`process-PID-START`: the process that started this hook (the host, or a shell it started for the
    call) and its start time (so a later process with the same ID is another)."""
    try:
        with open(f"/proc/{parent}/stat", "rb") as stat:
            started = stat.read().rsplit(b")", 1)[1].split()[19].decode()  # field 22, starttime
    except (OSError, IndexError, UnicodeDecodeError):
        started = "0"
    return f"process-{parent}-{started}"


def parse(host: str, payload: dict[str, Any], event: str | None, parent: int | None = None) -> HookInput:
    """Normalize a payload; `event` (the --event option) wins over the payload's hook_event_name; `parent`:
    the process that started the hook (default: this process's parent)."""
    name = event or _str(payload, "hook_event_name", "hookEventName") or ""
    roots = payload.get("workspace_roots")
    first_root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else None
    cwd = _str(payload, "cwd") or first_root
    return HookInput(
        host=host,
        event=name,
        step=_EVENTS[host].get(name, ""),
        session_id=session_of(payload, parent),
        turn_id=_str(payload, "prompt_id", "turn_id", "generation_id"),
        cwd=cwd,
        transcript_path=_str(payload, "transcript_path"),
        source=_str(payload, "source", "trigger"),
        prompt=_str(payload, "prompt"),
        reply=_str(payload, "last_assistant_message", "prompt_response", "text"),
        agent_id=_str(payload, "agent_id"),
        agent_transcript_path=_str(payload, "agent_transcript_path"),
        payload=payload,
    )


# Hosts whose prompt hook cannot hand the model any context: their prompt step only records.
NO_PROMPT_CONTEXT = frozenset({"cursor"})
# Hosts whose resumed conversation no longer holds the context our hooks handed (Gemini CLI keeps the
# turns of a resumed chat, not its hook context): a resumed session starts as a new one does.
CONTEXT_LOST_ON_RESUME = frozenset({"gemini"})


def output(hook: HookInput, context: str | None) -> str:
    """What the host expects on stdout for this event; `context` is the model-visible text, if any."""
    if hook.host == "cursor":
        # Every Cursor event gets an object that lets the agent go on; sessionStart may add context
        # (Cursor has no prompt-time context channel).
        shown = {"additional_context": context} if hook.step == "start" and context else {}
        return json.dumps({"continue": True, **shown}, ensure_ascii=False)
    if hook.step in ("start", "prompt") and context:
        return json.dumps(
            {"hookSpecificOutput": {"hookEventName": hook.event, "additionalContext": context}}, ensure_ascii=False
        )
    # Gemini parses stdout as JSON on exit 0; Claude Code and Codex accept empty output.
    return json.dumps({}) if hook.host == "gemini" else ""


def fallback_output(host: str, event: str | None) -> str:
    """The do-nothing answer after a failure (a malformed payload, an unknown event): lets the host go on
    as if no hook had run."""
    if host == "cursor":
        return json.dumps({"continue": True})
    if host == "gemini":
        return json.dumps({})  # Gemini parses stdout as JSON on exit 0
    return ""
