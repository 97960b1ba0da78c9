"""Adding and removing our entries in one host config file, and the record of what was added.

JSON files: our MCP server entry is one member (`mcpServers.memlikehuman`, ...), our hooks are
items appended to the host's per-event arrays, other items (Claude Code's `permissions.allow` entries)
too; parents that did not exist are created and noted, and so are the plain items install appended
(an entry the user had already stays the user's).
TOML (Codex): one block between marker comments, appended at the end. The record
(`<user data dir>/memlikehuman/installs.json`) says, per file, whether install created the file and
which parents; uninstall removes exactly those, so the file is as it was before install.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import platformdirs

from .. import files
from ..errors import Conflict, InvalidArgument
from . import codex, jsonedit

HOOK_MARK = " hook "  # our hook commands run `<memlikehuman> hook HOST`
TOML_BEGIN = "# >>> memlikehuman (added by `memlikehuman install codex`; `memlikehuman uninstall codex` removes it)"
TOML_END = "# <<< memlikehuman"
# The line install wrote under [features] before Codex turned hooks on by default (0.171: `codex_hooks`
# is deprecated): uninstall still removes it where an older install added it.
FEATURE_LINE = "codex_hooks = true  # added by `memlikehuman install codex`; uninstall removes it"


@dataclass(frozen=True)
class JsonEdit:
    """Our part of one JSON file: members to set and hook items to append, by key path."""

    members: tuple[tuple[tuple[str, ...], Any], ...] = ()  # (path to the member, value)
    items: tuple[tuple[tuple[str, ...], Any], ...] = ()  # (path to the array, item)
    root: tuple[tuple[str, Any], ...] = ()  # members a new file starts with, e.g. Cursor's "version": 1
    # Settings our hooks need (Gemini's hooksConfig.enabled): set unless the file already has that value;
    # only what install set (noted in the record) is removed or restored by uninstall.
    flags: tuple[tuple[tuple[str, ...], Any], ...] = ()


def records_path() -> Path:
    """Where install notes what it created, per config file."""
    return Path(platformdirs.user_data_dir("memlikehuman", appauthor=False)) / "installs.json"


def load_records() -> dict[str, Any]:
    try:
        data = json.loads(records_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_records(records: dict[str, Any]) -> None:
    """Replace the record (0600, its folders 0700). Raises OSError."""
    path = records_path()
    files.private_dirs(path.parent)
    files.write_private(path, json.dumps(records, indent=1, sort_keys=True) + "\n")


def is_ours(item: Any) -> bool:
    """A hook item (Claude Code/Codex/Gemini group or Cursor entry) that runs `memlikehuman ... hook`."""
    commands = [item.get("command")] if isinstance(item, dict) else []
    if isinstance(item, dict) and isinstance(item.get("hooks"), list):
        commands += [h.get("command") for h in item["hooks"] if isinstance(h, dict)]
    return any(isinstance(c, str) and "memlikehuman" in c and HOOK_MARK in c for c in commands)


# -- JSON ----------------------------------------------------------------------------------------


def _walk(text: str, path: tuple[str, ...], source: str) -> jsonedit.Node | None:
    node: jsonedit.Node | None = jsonedit.parse(text, source)
    for key in path:
        node = node.get(key) if node is not None and isinstance(node.value, dict) else None
    return node


def _ensure(text: str, path: tuple[str, ...], source: str, unit: str, created: list[str]) -> str:
    """Create the missing objects along `path` (noting them in `created`)."""
    for depth in range(len(path)):
        parent = _walk(text, path[:depth], source)
        assert parent is not None
        if not isinstance(parent.value, dict):
            raise Conflict(f"{source}: {'.'.join(path[:depth]) or 'the document'} is not an object: fix the file")
        if parent.get(path[depth]) is None:
            text = jsonedit.insert_member(text, parent, path[depth], {}, unit)
            created.append(".".join(path[: depth + 1]))
    return text


def json_install(text: str | None, edit: JsonEdit, source: str, record: dict[str, Any]) -> str:
    """The file's text with our entries in it (idempotent); `record` notes what was created."""
    created: list[str] = record.setdefault("created", [])
    if text is None or not text.strip():
        record.setdefault("created_file", text is None)
        record.setdefault("blank_file", text)  # an existing blank file comes back as it was
        text = "{}\n"
        for key, value in edit.root:
            text = jsonedit.insert_member(text, jsonedit.parse(text, source), key, value, "  ")
    root = jsonedit.parse(text, source)
    if not isinstance(root.value, dict):
        raise Conflict(f"{source}: the document is not a JSON object: fix the file, then install again")
    unit = jsonedit.indent_unit(text, root)
    for path, value in edit.members:
        text = _set_member(text, path, value, source, unit, record)[0]
    text = _set_flags(text, edit, source, unit, record)
    for path, item in edit.items:
        array = _walk(text, path, source)
        if array is None:
            parent_path, key = path[:-1], path[-1]
            text = _ensure(text, parent_path, source, unit, created)
            parent = _walk(text, parent_path, source)
            assert parent is not None
            text = jsonedit.insert_member(text, parent, key, [], unit)
            created.append(".".join(path))
            array = _walk(text, path, source)
        assert array is not None
        if not isinstance(array.value, list):
            raise Conflict(f"{source}: {'.'.join(path)} is not a list: fix the file, then install again")
        if item in array.value:
            continue
        # Our older entries (another path or option) are replaced, not duplicated.
        text = _remove_items(text, path, source, lambda v: is_ours(v))
        array = _walk(text, path, source)
        assert array is not None
        text = jsonedit.append_item(text, array, item, unit)
        if not is_ours(item):
            record.setdefault("appended", {}).setdefault(".".join(path), []).append(item)
    return text


def _set_member(
    text: str, path: tuple[str, ...], value: Any, source: str, unit: str, record: dict[str, Any]
) -> tuple[str, bool]:
    """Set one member, an other value replaced in place and noted in record["replaced"]; return the
    text and whether it changed."""
    text = _ensure(text, path[:-1], source, unit, record["created"])
    parent = _walk(text, path[:-1], source)
    assert parent is not None
    current = parent.get(path[-1])
    if current is not None and current.value == value:
        return text, False
    dotted = ".".join(path)
    inserted: list[str] = record.setdefault("inserted", [])
    if current is None:
        inserted.append(dotted)
        return jsonedit.insert_member(text, parent, path[-1], value, unit), True
    if dotted not in inserted:  # our own older value (another archive path) is simply updated
        record.setdefault("replaced", {}).setdefault(dotted, current.value)
    return jsonedit.replace_value(text, current, value, unit), True


def _unset_member(text: str, path: tuple[str, ...], source: str, record: dict[str, Any]) -> str:
    """Remove our member, or put back in its place the value it replaced."""
    parent = _walk(text, path[:-1], source)
    current = parent.get(path[-1]) if parent is not None and isinstance(parent.value, dict) else None
    if parent is None or current is None:
        return text
    replaced = record.get("replaced", {})
    if ".".join(path) in replaced:
        unit = jsonedit.indent_unit(text, jsonedit.parse(text, source))
        return jsonedit.replace_value(text, current, replaced[".".join(path)], unit)
    index = [k for k, _, _ in parent.members].index(path[-1])
    return jsonedit.remove_child(text, parent, index)


def _set_flags(text: str, edit: JsonEdit, source: str, unit: str, record: dict[str, Any]) -> str:
    ours: list[str] = record.setdefault("flags", [])
    for path, value in edit.flags:
        # Already so (the user's own setting, or ours from an earlier install): left alone.
        text, changed = _set_member(text, path, value, source, unit, record)
        if changed and ".".join(path) not in ours:
            ours.append(".".join(path))
    return text


def _remove_items(text: str, path: tuple[str, ...], source: str, match: Callable[[Any], bool]) -> str:
    while True:
        array = _walk(text, path, source)
        if array is None or not isinstance(array.value, list):
            return text
        hits = [i for i, node in enumerate(array.items) if match(node.value)]
        if not hits:
            return text
        text = jsonedit.remove_child(text, array, hits[-1])


def json_uninstall(text: str, edit: JsonEdit, source: str, record: dict[str, Any]) -> str | None:
    """The file's text without our entries (None: delete the file, install created it)."""
    for path, _ in edit.members:
        text = _unset_member(text, path, source, record)
    appended = record.get("appended", {})
    for path, _ in edit.items:
        text = _remove_items(text, path, source, partial(_installed, appended.get(".".join(path), [])))
    for dotted in record.get("flags", []):
        text = _unset_member(text, tuple(dotted.split(".")), source, record)
    for dotted in sorted(record.get("created", []), key=lambda p: -p.count(".")):
        text = _drop_if_empty(text, tuple(dotted.split(".")), source)
    remaining = jsonedit.parse(text, source).value
    if remaining in (dict(edit.root), {}):
        if record.get("created_file"):
            return None
        if isinstance(record.get("blank_file"), str):
            return str(record["blank_file"])
    return text


def _installed(appended: list[Any], value: Any) -> bool:
    """An item install put there: a hook of ours (any version), or a plain item it appended."""
    return is_ours(value) or value in appended


def _drop_if_empty(text: str, path: tuple[str, ...], source: str) -> str:
    parent = _walk(text, path[:-1], source)
    node = _walk(text, path, source)
    if parent is None or node is None or node.value not in ({}, []):
        return text
    index = [k for k, _, _ in parent.members].index(path[-1])
    return jsonedit.remove_child(text, parent, index)


# -- TOML (Codex) ----------------------------------------------------------------------------------

_TOML_BLOCK = re.compile(rf"\n*{re.escape(TOML_BEGIN)}\n.*?{re.escape(TOML_END)}\n?", re.DOTALL)


def toml_install(
    text: str | None, server: dict[str, Any], trusted: dict[str, str], source: str, record: dict[str, Any]
) -> str:
    """The TOML text with our block at its end (an older block of ours replaced, the lines a user added to
    it kept), the trust of our hooks that the file does not already hold, and the start-up grace key
    (hosts/codex.py). The result must parse, else InvalidArgument: nothing is written."""
    if text is None:
        record["created_file"] = True
        text = ""
    crlf = "\r\n" in text
    text = text.replace("\r\n", "\n")
    found = _TOML_BLOCK.search(text)
    old = found.group(0).strip("\n").removeprefix(TOML_BEGIN).removesuffix(TOML_END).strip("\n") + "\n" if found else ""
    text = _TOML_BLOCK.sub("", text)
    _check_toml(text, source)
    if re.search(r"^\s*\[\s*mcp_servers\s*\.\s*[\"']?memlikehuman[\"']?\s*\]", text, re.MULTILINE):
        raise Conflict(
            f"{source} already has an [mcp_servers.memlikehuman] table that install did not write:"
            " remove it (or rename it), then install again"
        )
    block = codex.block(server, {k: v for k, v in trusted.items() if k not in codex.trusted_keys(text)})
    # An older release rewrote the whole block: with no record of what it wrote, nothing in it is the user's.
    body = codex.merged(block, old, record.get("block", old)) if found else block
    record["block"] = block
    if "newline" not in record:
        record["newline"] = text.endswith("\n") or not text
    text = codex.with_grace(text, record)
    separator = "" if not text else "\n" if text.endswith("\n") else "\n\n"
    out = f"{text}{separator}{TOML_BEGIN}\n{body}{TOML_END}\n"
    codex.check_installed(out, source)
    return out.replace("\n", "\r\n") if crlf else out


def _check_toml(text: str, source: str) -> None:
    import tomllib

    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidArgument(f"{source} is not valid TOML ({exc}): fix the file, then install again") from None


def toml_uninstall(text: str, source: str, record: dict[str, Any]) -> str | None:
    """The TOML text without our block, the grace line install added, the feature line an older install
    added, and tables under [mcp_servers.memlikehuman.*] (which Codex refuses once our server is gone)
    (None: delete the file, install created it)."""
    crlf = "\r\n" in text
    text = text.replace("\r\n", "\n")
    if record.get("feature_line"):
        ours = FEATURE_LINE + "\n" if FEATURE_LINE + "\n" in text else "\n" + FEATURE_LINE
        text = text.replace(ours, "", 1)
    if record.get("grace_line"):
        text = codex.without_grace(text)
    start = text.find(TOML_BEGIN)
    if start < 0:
        return text.replace("\n", "\r\n") if crlf else text
    end = text.find(TOML_END, start)
    end = len(text) if end < 0 else end + len(TOML_END)
    if text.startswith("\n", end):
        end += 1
    before = text[:start]
    if before.endswith("\n\n"):
        before = before[:-1]  # the blank line install put before the block
    if not record.get("newline", True) and before.endswith("\n"):
        before = before[:-1]
    remaining = codex.without_our_subtables(before + text[end:])
    if record.get("created_file") and not remaining.strip():
        return None
    return remaining.replace("\n", "\r\n") if crlf else remaining
