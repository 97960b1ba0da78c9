"""History import: Claude Code transcripts, a ChatGPT export and a Claude.ai export, as events.

Every message becomes one event with its original time, its role (user/assistant) and its
conversation as the session, made storable as the hooks make what they get (`as_stored`): a lone
surrogate as U+FFFD, over 200,000 characters in parts, an odd session ID as its readable key.
Event IDs are stable (the export's message IDs; for Claude Code the same content-derived IDs the
hooks use), so a second import adds nothing and an import after the hooks recorded a session adds
only what they missed. The whole file is read and checked first and
then written in one transaction: a file with a problem names the file and line and imports nothing.

ChatGPT (`conversations.json`): a list of conversations, each a `mapping` tree of message nodes
(`parent`, `children`) with `current_node` the leaf the user last saw. The current branch (root to
`current_node`) is imported; the messages of other branches (edits, regenerations) are counted.
Claude.ai (`conversations.json`): a list of conversations with `chat_messages` (`sender` human or
assistant, `text`/`content`, `created_at`, `attachments`/`files`). Attachments, images, tool and
system messages are skipped and counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import clock
from ..errors import InvalidArgument, MemLikeHumanError
from ..records import HistoryMessage, HistoryReport
from ..text import nesting
from ..text.projects import project_name
from . import markers, storable
from . import transcript as transcripts
from .hook import event_id as hook_event_id

FORMATS = ("claude-code", "chatgpt", "claude-ai")


def detect(path: Path) -> str:
    """The format of a history file (or `export` for a memlikehuman export); InvalidArgument if unknown."""
    if path.is_dir():
        return "claude-code"
    with path.open("rb") as stream:
        head = stream.read(65_536).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if head.startswith("["):
        if '"mapping"' in head:
            return "chatgpt"
        if '"chat_messages"' in head:
            return "claude-ai"
    elif head.startswith("{"):
        first = head.split("\n", 1)[0]
        if '"memlikehuman-export"' in first:
            return "export"
        if '"sessionId"' in head or '"type": "summary"' in first or '"type":"summary"' in first:
            return "claude-code"
    raise InvalidArgument(
        f"{path}: cannot tell which kind of file this is: pass --format (export, {', '.join(FORMATS)})"
    )


def _iso(value: Any, where: Where) -> str | None:
    if value is None or value == "":
        return None
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return clock.stamp(datetime.fromtimestamp(float(value), UTC).isoformat(), "time")
        return clock.stamp(str(value), "time")
    except (MemLikeHumanError, ValueError, OverflowError, OSError):
        raise InvalidArgument(f"{where}: the time {value!r} is not a timestamp") from None


class _At:
    """`FILE, line N`: the line where an ID first appears in the raw file (1 when it cannot be found).

    Worked out only when an error names it: a search of the whole file for every message would make
    reading an export quadratic in its size."""

    def __init__(self, path: Path, raw: str, needle: str) -> None:
        self.path, self.raw, self.needle = path, raw, needle

    def __str__(self) -> str:
        at = self.raw.find(json.dumps(self.needle)) if self.needle else -1
        line = self.raw.count("\n", 0, at) + 1 if at >= 0 else 1
        return f"{self.path}, line {line}"


Where = str | _At  # a place in a file, for error messages


def _load_json(path: Path) -> tuple[Any, str]:
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"cannot read {path} ({exc}): check the path") from None
    try:
        return json.loads(raw), raw
    except json.JSONDecodeError as exc:
        raise InvalidArgument(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except RecursionError:  # Python's json gives up near a thousand levels
        raise InvalidArgument(
            f"{path}: nested {nesting.depth(raw):,} levels deep, too deep to read: is this the service's own export?"
        ) from None


def as_stored(
    source: str, ids: tuple[str, str | None], role: str, text: str, when: str | None, project: str | None = None
) -> list[HistoryMessage]:
    """One message as the hooks store it (hosts/storable.py): a lone surrogate as U+FFFD, over 200,000
    characters in parts, a session ID that is no valid identifier as its readable key.

    `ids`: the session's and the message's own ID in the export; a message without one (Claude Code)
    gets the hooks' content-derived event ID, so an import after the hooks finds what they stored."""
    session, message = storable.session_key(ids[0]), ids[1]
    pieces = storable.parts(text)
    found = []
    for number, part in enumerate(pieces, start=1):
        if message is None:
            eid = hook_event_id(source, session, role, part)
        else:
            own = storable.session_key(message) + (f":part-{number}" if len(pieces) > 1 else "")
            eid = storable.event_id(source, session, own)
        found.append(HistoryMessage(eid, session, role, part, when, source, project))
    return found


# -- ChatGPT -----------------------------------------------------------------------------------------


def chatgpt(path: Path, report: HistoryReport) -> Iterator[HistoryMessage]:
    data, raw = _load_json(path)
    if not isinstance(data, list):
        raise InvalidArgument(f"{path}, line 1: expected a list of conversations (ChatGPT's conversations.json)")
    for index, conv in enumerate(data):
        where = _At(path, raw, str(conv.get("id", "")) if isinstance(conv, dict) else "")
        if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
            raise InvalidArgument(f"{where}: conversation {index} has no `mapping` of messages")
        session = str(conv.get("conversation_id") or conv.get("id") or f"chatgpt-{index}")
        mapping: dict[str, Any] = conv["mapping"]
        branch = _current_branch(mapping, conv.get("current_node"), _At(path, raw, session))
        report.conversations += 1
        on_branch = set(branch)
        report.skipped["messages on other branches (edits, regenerations)"] += sum(
            1
            for key, node in mapping.items()
            if key not in on_branch and isinstance(node, dict) and node.get("message")
        )
        for key in branch:
            message = mapping[key].get("message")
            if not isinstance(message, dict):
                continue
            yield from _chatgpt_message(message, session, conv, report, _At(path, raw, key))


def _current_branch(mapping: dict[str, Any], leaf: Any, where: Where) -> list[str]:
    if not isinstance(leaf, str) or leaf not in mapping:
        # No current_node: follow the last child from the root down.
        roots = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("parent")]
        if not roots:
            raise InvalidArgument(f"{where}: the conversation's message tree has no root")
        leaf = roots[0]
        while mapping.get(leaf, {}).get("children"):
            leaf = mapping[leaf]["children"][-1]
    path: list[str] = []
    node: Any = leaf
    while node is not None:
        if node not in mapping or node in path:
            raise InvalidArgument(f"{where}: the message tree is broken at node {node!r}")
        path.append(node)
        node = mapping[node].get("parent")
    return path[::-1]


def _chatgpt_message(
    message: dict[str, Any], session: str, conv: dict[str, Any], report: HistoryReport, where: Where
) -> list[HistoryMessage]:
    role = (message.get("author") or {}).get("role")
    if role not in ("user", "assistant"):
        if role not in ("system", "tool"):
            raise InvalidArgument(f"{where}: a message has no author role (user, assistant, system or tool)")
        report.skipped[f"{role} messages"] += 1
        return []
    content = message.get("content") or {}
    parts = content.get("parts") if isinstance(content, dict) else None
    if content.get("content_type") not in ("text", "multimodal_text") or not isinstance(parts, list):
        report.skipped[f"{content.get('content_type', 'unknown')} content"] += 1
        return []
    attachments = [p for p in parts if not isinstance(p, str)]
    report.skipped["attachments (images, files)"] += len(attachments)
    report.skipped["attachments (images, files)"] += len((message.get("metadata") or {}).get("attachments") or [])
    text = markers.strip("\n".join(p for p in parts if isinstance(p, str)))
    if not text:
        report.skipped["empty messages"] += 1
        return []
    when = _iso(message.get("create_time"), where) or _iso(conv.get("create_time"), where)
    return as_stored("chatgpt", (session, str(message.get("id"))), role, text, when)


# -- Claude.ai ----------------------------------------------------------------------------------------


def claude_ai(path: Path, report: HistoryReport) -> Iterator[HistoryMessage]:
    data, raw = _load_json(path)
    if not isinstance(data, list):
        raise InvalidArgument(f"{path}, line 1: expected a list of conversations (Claude.ai's conversations.json)")
    for index, conv in enumerate(data):
        session = str(conv.get("uuid") or f"claude-ai-{index}") if isinstance(conv, dict) else ""
        where = _At(path, raw, session)
        if not isinstance(conv, dict) or not isinstance(conv.get("chat_messages"), list):
            raise InvalidArgument(f"{where}: conversation {index} has no `chat_messages`")
        report.conversations += 1
        for number, message in enumerate(conv["chat_messages"]):
            mid = str(message.get("uuid") or number) if isinstance(message, dict) else ""
            here = _At(path, raw, mid)
            if not isinstance(message, dict) or message.get("sender") not in ("human", "assistant"):
                raise InvalidArgument(f"{here}: a message's sender is not human or assistant")
            report.skipped["attachments (images, files)"] += len(message.get("attachments") or [])
            report.skipped["attachments (images, files)"] += len(message.get("files") or [])
            text = message.get("text") or transcripts.content_text(message.get("content"))
            text = markers.strip(text if isinstance(text, str) else "")
            if not text:
                report.skipped["empty messages"] += 1
                continue
            role = "user" if message["sender"] == "human" else "assistant"
            when = _iso(message.get("created_at"), here) or _iso(conv.get("created_at"), here)
            yield from as_stored("claude-ai", (session, mid), role, text, when)


# -- Claude Code ------------------------------------------------------------------------------------------


def claude_code(path: Path, report: HistoryReport) -> Iterator[HistoryMessage]:
    files = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
    if not files:
        raise InvalidArgument(f"{path}: no Claude Code transcripts (*.jsonl) in this folder")
    for file in files:
        try:
            with file.open(encoding="utf-8", errors="replace") as stream:  # as the hooks read it (transcript.py)
                lines = list(stream)
        except OSError as exc:
            raise InvalidArgument(f"cannot read {file} ({exc}): check the file") from None
        project = _transcript_project(lines)
        report.conversations += 1
        for message in transcripts.parse_lines(lines, str(file), strict=True, skipped=report.skipped):
            when = _iso(message.timestamp, f"{file}, line {message.line}")
            session = (message.session_id or file.stem, None)
            yield from as_stored("claude-code", session, message.role, message.text, when, project)


def _transcript_project(lines: list[str]) -> str | None:
    for line in lines[:50]:
        try:
            cwd = json.loads(line).get("cwd")
        except (ValueError, AttributeError, RecursionError):
            continue
        if isinstance(cwd, str) and cwd:
            return project_name(Path(cwd))
    return None


READERS: dict[str, Callable[[Path, HistoryReport], Iterator[HistoryMessage]]] = {
    "claude-code": claude_code,
    "chatgpt": chatgpt,
    "claude-ai": claude_ai,
}


def read(path: Path, fmt: str) -> tuple[list[HistoryMessage], HistoryReport]:
    """Every message of the file, checked; raises InvalidArgument naming the file and line."""
    report = HistoryReport()
    return list(READERS[fmt](path, report)), report
