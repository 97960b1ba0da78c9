"""Codex's config.toml: our block, what headless runs need, and the trust of our hooks.

Checked against Codex CLI 0.171.0 run for real (tests/hosts_real, docs/hosts.md):
- **Hook trust.** Codex runs a hook of hooks.json only once it is trusted, and `codex exec` says
  nothing. Trust is `[hooks.state."<realpath of hooks.json>:<event>:<group>:<handler>"] trusted_hash`
  in config.toml, the SHA-256 of the handler as Codex describes it (`trusted_hash`): install writes
  it for our own hooks, so a changed command (another archive) is trusted again by the next install.
- **Approval.** `exec` refuses a tool that needs approval; our block approves our server's tools
  (`default_tools_approval_mode = "approve"`): the agent forgets or corrects only when asked to.
- **Start-up.** `exec` gives optional MCP servers 1 s by default before the turn starts without
  them; install sets `mcp_optional_startup_grace_ms` (a top-level key, so outside our block) when
  the file does not. A server that fails costs nothing; `required = true` would fail every run.
- Hooks are on by default: no `[features]` line (`codex_hooks` is deprecated and warned about).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ..text.digest import sha256_hex

GRACE_MS = 5000
GRACE_KEY = "mcp_optional_startup_grace_ms"
GRACE_LINE = f"{GRACE_KEY} = {GRACE_MS}  # added by `memlikehuman install codex`; uninstall removes it"
_TABLE = re.compile(r"^[ \t]*\[", re.MULTILINE)
# Events whose hooks take no matcher, and those whose timeout Codex clamps to 1-3 s.
_NO_MATCHER = frozenset({"user_prompt_submit", "stop", "interrupt"})
_CLAMPED = frozenset({"session_end", "interrupt"})


def home() -> Path:
    """$CODEX_HOME when set, else ~/.codex (where Codex reads its user config and hooks)."""
    chosen = os.environ.get("CODEX_HOME")
    return Path(chosen).expanduser() if chosen else Path.home() / ".codex"


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def trusted_hash(event: str, command: str, timeout: int | None = None, matcher: str | None = None) -> str:
    """What Codex 0.171.0 stores as a handler's trusted_hash: SHA-256 of the handler's JSON description."""
    name = _snake(event)
    seconds = 600 if timeout is None else timeout
    if name in _CLAMPED:
        seconds = min(max(seconds, 1), 3)
    handler = {"async": False, "command": command, "timeout": max(1, seconds), "type": "command"}
    described: dict[str, Any] = {"event_name": name, "hooks": [handler]}
    if matcher is not None and name not in _NO_MATCHER:
        described["matcher"] = matcher
    text = json.dumps(described, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + sha256_hex(text.encode("utf-8"))


def trust(hooks_path: Path, hooks_text: str, ours: Any) -> dict[str, str]:
    """The trust entries (key -> hash) of the hook handlers `ours(group)` selects in a hooks.json text."""
    where = os.path.realpath(hooks_path)
    found: dict[str, str] = {}
    for event, groups in (json.loads(hooks_text).get("hooks") or {}).items():
        for i, group in enumerate(groups if isinstance(groups, list) else []):
            if not isinstance(group, dict) or not ours(group):
                continue
            for j, handler in enumerate(group.get("hooks") or []):
                if isinstance(handler, dict) and handler.get("type") == "command":
                    key = f"{where}:{_snake(event)}:{i}:{j}"
                    found[key] = trusted_hash(event, handler["command"], handler.get("timeout"), group.get("matcher"))
    return found


def string(value: str) -> str:
    """A TOML basic string."""
    return json.dumps(value, ensure_ascii=False)


def block(server: dict[str, Any], trusted: dict[str, str]) -> str:
    """Our block's body: the server (its tools approved), its environment, the trust of our hooks."""
    args = ", ".join(string(a) for a in server["args"])
    lines = ["[mcp_servers.memlikehuman]", f"command = {string(server['command'])}", f"args = [{args}]"]
    lines += ['default_tools_approval_mode = "approve"', "", "[mcp_servers.memlikehuman.env]"]
    lines += [f"{key} = {string(value)}" for key, value in server["env"].items()]
    for key, value in trusted.items():
        lines += ["", f"[hooks.state.{string(key)}]", f"trusted_hash = {string(value)}"]
    return "\n".join(lines) + "\n"


def with_grace(text: str, record: dict[str, Any]) -> str:
    """The file's text with the start-up grace key on its first line (a top-level key must come before
    any table, and the first line is never inside a value), unless the file sets one (noted in `record`)."""
    import tomllib

    if GRACE_KEY in tomllib.loads(text):
        return text
    record["grace_line"] = True
    return GRACE_LINE + "\n" + text


def without_grace(text: str) -> str:
    """The file's text without the grace line install added."""
    return (
        text.removeprefix(GRACE_LINE + "\n") if text.startswith(GRACE_LINE) else text.replace(GRACE_LINE + "\n", "", 1)
    )


def trusted_keys(text: str) -> set[str]:
    """The [hooks.state."..."] tables a config text already holds (ours are not written twice)."""
    import tomllib

    state = (tomllib.loads(text).get("hooks") or {}).get("state") or {}
    return set(state) if isinstance(state, dict) else set()


def check_installed(text: str, source: str) -> None:
    """The installed text parses, with our server and the grace as top-level keys; else InvalidArgument."""
    import tomllib

    from ..errors import InvalidArgument

    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidArgument(f"install would leave {source} unreadable ({exc}): nothing was written") from None
    if "memlikehuman" not in (parsed.get("mcp_servers") or {}) or GRACE_KEY not in parsed:
        raise InvalidArgument(
            f"install could not place its entries in {source} as Codex reads them: nothing was written"
        )


def sections(text: str) -> list[tuple[str, list[str]]]:
    """The lines of a block by table: (header line, or "" before the first; the lines under it)."""
    found: list[tuple[str, list[str]]] = [("", [])]
    for line in text.splitlines():
        if line.lstrip().startswith("["):
            found.append((line.strip(), []))
        else:
            found[-1][1].append(line)
    return found


def _key(line: str) -> str | None:
    name, equals, _ = line.partition("=")
    return name.strip() if equals and not line.lstrip().startswith("#") else None


def merged(new: str, old: str, generated: str) -> str:
    """Our new block with what the user added to the old one kept: lines and tables that the block
    generated last time did not hold. A key the user set in one of our tables wins over ours."""
    before = {header: set(lines) for header, lines in sections(generated)}
    added: dict[str, list[str]] = {}
    for header, lines in sections(old):
        extra = [line for line in lines if line.strip() and line not in before.get(header, set())]
        if extra or (header and header not in before):
            added.setdefault(header, []).extend(extra)
    out: list[str] = []
    for header, lines in sections(new):
        theirs = added.pop(header, [])
        keys = {_key(line) for line in theirs} - {None}
        kept = [line for line in lines if _key(line) not in keys]
        body = [*kept[: _last_filled(kept)], *theirs, *kept[_last_filled(kept) :]]
        out += ([header] if header else []) + body
    for header, lines in added.items():
        out += ["", header, *lines]
    return "\n".join(out).strip("\n") + "\n"


def _last_filled(lines: list[str]) -> int:
    """The index after the last non-blank line (where lines go that join a table)."""
    for index in range(len(lines), 0, -1):
        if lines[index - 1].strip():
            return index
    return 0


_SUBTABLE = re.compile(
    r"^[ \t]*\[[ \t]*mcp_servers[ \t]*\.[ \t]*[\"']?memlikehuman[\"']?[ \t]*\.[^\n]*\n?", re.MULTILINE
)


def without_our_subtables(text: str) -> str:
    """The text without tables under [mcp_servers.memlikehuman.*] outside our block (a user's per-tool
    settings): once our server is gone, Codex refuses a config that still has them."""
    while match := _SUBTABLE.search(text):
        rest = _TABLE.search(text, match.end())
        end = rest.start() if rest else len(text)
        text = text[: match.start()] + text[end:]
    return text
