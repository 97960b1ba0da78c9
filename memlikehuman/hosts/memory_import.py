"""`import --format claude-md|agents-md|gemini-md|cursor-rules`: a host's memory file as reference events.

Each item of the file (memory_items.py) becomes one event: role `user` (the user wrote these lines for
their agents), category `reference` (a document's words: the extractor writes "the file says ...",
recall and the prompt hook label it `reference`), source `FILE:FIRST-LAST` (the item's lines when it
was first imported), session `FILE~<digest of its path>` (one session per file). Its event ID names the
file and the scope (16 hex digits of a digest of both) and the item's text (32 hex digits of its
SHA-256; the second of two identical items gets `:2`): an item that only moved keeps its event, a changed
item is a new one. The file's events that are no longer among its items are withdrawn after the new ones
are stored (admin/history_store.py: forgotten, and free to come back). An item forgotten with memory_forget
stays out, as in every import (history_store.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import files, validate
from ..errors import InvalidArgument
from ..records import HistoryMessage, HistoryReport, Scope
from ..text.digest import sha256_hex
from . import config_files, memory_items, storable
from .memory_files import absolute, id_prefix

if TYPE_CHECKING:
    from ..engine import Engine

Progress = Callable[[int], None] | None
FORMATS = ("claude-md", "agents-md", "gemini-md", "cursor-rules")


_NAMES = {"CLAUDE.md": "claude-md", "CLAUDE.local.md": "claude-md", "MEMORY.md": "claude-md"}
_NAMES |= {"AGENTS.md": "agents-md", "AGENTS.override.md": "agents-md", "GEMINI.md": "gemini-md"}


def detect(path: Path) -> str | None:
    """The format a memory file's name says (None: it says none): the hosts' own names, `*.mdc`, `.cursor/rules`."""
    if path.suffix == ".mdc" or (path.name == "rules" and path.parent.name == ".cursor"):
        return "cursor-rules"
    return _NAMES.get(path.name)


@dataclass(frozen=True)
class MemoryFile:
    """One file read: where it is, its session, the prefix of its items' event IDs, its items as messages."""

    path: Path
    session_id: str
    prefix: str
    messages: list[HistoryMessage]


def read(source: Path, fmt: str, scope: Scope) -> list[MemoryFile]:
    """The file (for cursor-rules also a folder of `*.mdc` rules), its items as messages. Below the current
    directory no folder of it is followed through a link, nor the rules folder itself, nor below it.

    Raises InvalidArgument naming the file (and line) when a file cannot be read, is a link, is not UTF-8
    or holds an item over the event limit."""
    path, here = absolute(source), absolute(Path.cwd())
    if fmt == "cursor-rules" and path.is_dir():
        try:
            config_files.check(config_files.place(path, here))
        except files.LinkRefused as exc:
            raise _link(exc) from None
        rules = sorted(p for p in path.rglob("*.mdc"))
        if not rules:
            raise InvalidArgument(f"{path}: no Cursor rules (*.mdc) in this folder")
        return [_one(rule, path, fmt, scope) for rule in rules]
    return [_one(path, here, fmt, scope)]


def _one(path: Path, base: Path | None, fmt: str, scope: Scope) -> MemoryFile:
    data = _bytes(path, base)
    found = memory_items.items(data, str(path), front_matter=fmt == "cursor-rules")
    session, prefix = storable.readable_key(path.name, str(path)), id_prefix(scope, path)
    seen: Counter[str] = Counter()
    messages = []
    for item in found:
        lines = f"{item.first}" if item.first == item.last else f"{item.first}-{item.last}"
        if len(item.text) > validate.MAX_EVENT_CHARS:
            raise InvalidArgument(
                f"{path}, lines {lines}: an item of {len(item.text):,} characters; the limit is"
                f" {validate.MAX_EVENT_CHARS:,}: split it"
            )
        digest = sha256_hex(item.text.encode("utf-8"))[:32]
        seen[digest] += 1
        eid = prefix + digest + (f":{seen[digest]}" if seen[digest] > 1 else "")
        name = validate.CONTROL.sub("?", path.name)[: 255 - len(lines)]
        messages.append(HistoryMessage(eid, session, "user", item.text, None, f"{name}:{lines}", None, "reference"))
    return MemoryFile(path, session, prefix, messages)


def store(
    engine: Engine, read_files: list[MemoryFile], scope: Scope, *, dry_run: bool = False, progress: Progress = None
) -> HistoryReport:
    """Store the files' items in one transaction and withdraw each file's items that are gone from it
    (admin/history_store.py). Raises what Engine.import_history raises."""
    report = HistoryReport(conversations=len(read_files))
    report.replacing.update((f.session_id, f.prefix) for f in read_files)
    messages = [m for f in read_files for m in f.messages]
    engine.import_history(messages, report, scope.persona_id, scope.project_id, dry_run=dry_run, progress=progress)
    return report


def _bytes(path: Path, base: Path | None) -> bytes:
    """The file's bytes, read without following a link at it (nor, below `base`, at a folder of it)."""
    try:
        data = config_files.read(config_files.place(path, base))
    except files.LinkRefused as exc:
        raise _link(exc) from None
    except OSError as exc:
        raise InvalidArgument(f"cannot read {path} ({exc.strerror or exc}): check the path") from None
    if data is None:
        raise InvalidArgument(f"cannot read {path} (no such file): check the path")
    return data


def _link(exc: files.LinkRefused) -> InvalidArgument:
    return InvalidArgument(
        f"{exc.path} is a symbolic link; import reads a memory file only where it is, never through a link"
        " (a repository's link could point at any file of yours): import the file it points to"
    )
