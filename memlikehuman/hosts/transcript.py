"""Reading host transcripts: Claude Code session JSONL (also Codex rollout JSONL).

Claude Code writes one JSON object per line: `type` "user"/"assistant" lines carry `message`
({role, content: str | [blocks]}), `uuid`, `sessionId`, `timestamp`, `isSidechain`, `isMeta`;
other types (summary, system, file-history-snapshot, ...) are skipped. A streamed assistant
reply may span several lines with one `message.id`; their text blocks are joined. User lines that
only carry tool results, meta lines and subagent (sidechain) lines are not messages of the
conversation. Codex lines are `{"type": "response_item", "payload": {"type": "message", ...}}`.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidArgument
from . import markers

# A hook reads a transcript backwards from its end to the last prompt, and no further than these: far
# more than one turn, never a whole disk, and never millions of lines to parse within the host's 10 s.
LIMIT_BYTES = 20_000_000
MAX_LINES = 10_000
CHUNK_BYTES = 1 << 16  # what one read takes, going backwards
TOO_DEEP = "lines nested too deep to read (a tool's input or output)"
_USER = re.compile(rb'"(?:type|role)"\s*:\s*"user"')  # a line that may be a prompt: parsed to tell


@dataclass(frozen=True)
class Message:
    """One user or assistant message of a transcript, injected context stripped."""

    role: str
    text: str
    uuid: str | None
    timestamp: str | None
    session_id: str | None
    line: int


def content_text(content: Any, kinds: tuple[str, ...] = ("text", "input_text", "output_text")) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") in kinds]
    return "\n\n".join(p for p in parts if isinstance(p, str) and p)


def _claude(entry: dict[str, Any], line: int, sidechain: bool) -> tuple[Message, str | None] | None:
    if entry.get("type") not in ("user", "assistant") or entry.get("isMeta"):
        return None
    if entry.get("isSidechain") and not sidechain:
        return None
    message = entry.get("message")
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
        return None
    text = markers.strip(content_text(message.get("content")))
    if not text:
        return None
    found = Message(
        role=message["role"],
        text=text,
        uuid=entry.get("uuid") if isinstance(entry.get("uuid"), str) else None,
        timestamp=entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None,
        session_id=entry.get("sessionId") if isinstance(entry.get("sessionId"), str) else None,
        line=line,
    )
    return found, message.get("id") if isinstance(message.get("id"), str) else None


def _codex(entry: dict[str, Any], line: int) -> Message | None:
    payload = entry.get("payload")
    if entry.get("type") != "response_item" or not isinstance(payload, dict) or payload.get("type") != "message":
        return None
    if payload.get("role") not in ("user", "assistant"):
        return None
    text = markers.strip(content_text(payload.get("content")))
    if not text:
        return None
    stamp = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
    return Message(payload["role"], text, None, stamp, None, line)


def parse_lines(
    lines: Iterable[str], source: str, *, strict: bool, sidechain: bool = False, skipped: Counter[str] | None = None
) -> Iterator[Message]:
    """The messages of transcript lines, in order.

    strict: a line that is not a JSON object raises InvalidArgument naming `source` and the line;
    otherwise it is skipped (a transcript being written may end in a partial line).
    sidechain: also subagent lines (a subagent's own transcript has only those).
    A line nested past what Python's json reads (RecursionError: a tool's input or output thousands of
    levels deep) is skipped in either case, and counted in `skipped` under TOO_DEEP.
    """
    pending: Message | None = None
    pending_id: str | None = None
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except json.JSONDecodeError as exc:
            if strict:
                raise InvalidArgument(f"{source}, line {number}: not JSON ({exc.msg}): is this a transcript?") from None
            continue
        except RecursionError:
            if skipped is not None:
                skipped[TOO_DEEP] += 1
            continue
        if not isinstance(entry, dict):
            if strict:
                raise InvalidArgument(f"{source}, line {number}: not a JSON object: is this a transcript?")
            continue
        parsed = _claude(entry, number, sidechain)
        if parsed is None:
            codex = _codex(entry, number)
            parsed = (codex, None) if codex else None
        if parsed is None:
            continue
        message, message_id = parsed
        if pending and message_id and message_id == pending_id and message.role == pending.role:
            pending = Message(pending.role, f"{pending.text}\n\n{message.text}", *_keep(pending))
            continue
        if pending:
            yield pending
        pending, pending_id = message, message_id
    if pending:
        yield pending


def _keep(message: Message) -> tuple[str | None, str | None, str | None, int]:
    return message.uuid, message.timestamp, message.session_id, message.line


def lines(
    path: str | Path | None, *, limit_bytes: int = LIMIT_BYTES, max_lines: int = MAX_LINES, sidechain: bool = False
) -> list[str]:
    """The lines of a transcript's last turn: from its last user prompt to its end, read backwards from
    the end, at most `max_lines` lines and `limit_bytes` bytes (of a longer turn, its end); [] when the
    file is missing, unreadable or not a regular file. `sidechain`: a subagent's prompts count too.

    A host names the path; whatever it names must not hold the hook: the file is opened without
    blocking (a FIFO would wait for a writer), and anything but a regular file (a FIFO, /dev/zero,
    /dev/urandom, a directory) is not read at all.
    """
    if not path:
        return []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except (OSError, ValueError):
        return []
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return []
        found = _last_turn(fd, info.st_size, limit_bytes, max_lines, sidechain)
    except OSError:
        return []
    finally:
        os.close(fd)
    # As a text file reads (universal newlines): not str.splitlines, which also splits at U+2028 inside JSON.
    return io.StringIO(b"\n".join(reversed(found)).decode("utf-8", errors="replace"), newline=None).readlines()


def _last_turn(fd: int, size: int, limit_bytes: int, max_lines: int, sidechain: bool) -> list[bytes]:
    """The lines (without their "\\n") of the file's first `size` bytes from the last prompt on, last first;
    read backwards a chunk at a time, so a huge transcript costs what its last turn costs."""
    floor, at = max(0, size - limit_bytes), size
    found: list[bytes] = []
    partial: list[bytes] = []  # the pieces of the line whose start is not read yet, last piece first
    while at > floor:
        step = min(CHUNK_BYTES, at - floor)
        at -= step
        pieces = os.pread(fd, step, at).split(b"\n")
        partial.append(pieces.pop())
        if not pieces:
            continue
        pieces.append(b"".join(reversed(partial)))
        partial = [pieces.pop(0)]
        for line in reversed(pieces):
            found.append(line)
            if len(found) >= max_lines or _opens_turn(line, sidechain):
                return found
    if at == 0:  # the first line of the file is whole; after a cut at `limit_bytes` it is not
        found.append(b"".join(reversed(partial)))
    return found[:max_lines]


def _opens_turn(line: bytes, sidechain: bool) -> bool:
    """Whether a transcript line is a user prompt (a message of the conversation, not a tool result)."""
    if not _USER.search(line):
        return False
    try:
        entry = json.loads(line.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):  # a line being written, or nested past the parser's depth
        return False
    if not isinstance(entry, dict):
        return False
    found = _claude(entry, 0, sidechain)
    message = found[0] if found else _codex(entry, 0)
    return message is not None and message.role == "user"


def read(path: str | Path | None, *, sidechain: bool = False) -> list[Message]:
    """The messages of a transcript's last turn (`lines`), leniently; [] when it is missing or unreadable."""
    return list(parse_lines(lines(path, sidechain=sidechain), str(path), strict=False, sidechain=sidechain))


def last_assistant(messages: list[Message]) -> Message | None:
    """The final assistant message of the transcript, if the last message is the assistant's."""
    for message in reversed(messages):
        return message if message.role == "assistant" else None
    return None
