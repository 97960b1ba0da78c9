"""`memlikehuman install HOST` / `uninstall HOST`: which files of each host get which entries.

A plan is a list of file changes (before/after text); `apply` writes them after a backup of each
existing file, and keeps the record of what was created (edits.py). docs/hosts.md lists every file.
"""

from __future__ import annotations

import difflib
import shlex
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import files, validate
from ..errors import InvalidArgument
from ..text.projects import AUTO, project_name
from . import codex, config_files, edits, tools
from .edits import JsonEdit

HOSTS = ("claude-code", "claude-desktop", "codex", "cursor", "vscode", "gemini")
SERVER = "memlikehuman"
HOOK_EVENTS = {
    "claude-code": ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"),
    "codex": ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"),
    "cursor": ("sessionStart", "beforeSubmitPrompt", "afterAgentResponse", "preCompact", "sessionEnd"),
    "gemini": ("SessionStart", "BeforeAgent", "AfterAgent", "PreCompress", "SessionEnd"),
}
# Installed only when `install --record` names the part. Claude Code and Codex tool calls are read from
# the transcript at turn end (no hook per call); Cursor and Gemini CLI report each call to a hook.
RECORD_EVENTS = {
    "tools": {"cursor": ("postToolUse",), "gemini": ("AfterTool",)},
    "subagents": {"claude-code": ("SubagentStop",), "codex": ("SubagentStop",)},
}
# `install HOST --extract-with host`: the host's own model makes the memories (docs/hosts.md,
# "Memories made by the host's model"): its CLI run headless (providers/command.py), or MCP sampling
# where the host's client offers it. Hosts missing here have neither.
EXTRACT_WITH_HOST = {
    "claude-code": {"MEMLIKEHUMAN_EXTRACTOR": "command", "MEMLIKEHUMAN_EXTRACTOR_COMMAND": "claude-code"},
    "codex": {"MEMLIKEHUMAN_EXTRACTOR": "command", "MEMLIKEHUMAN_EXTRACTOR_COMMAND": "codex"},
    "gemini": {"MEMLIKEHUMAN_EXTRACTOR": "command", "MEMLIKEHUMAN_EXTRACTOR_COMMAND": "gemini"},
    "vscode": {"MEMLIKEHUMAN_EXTRACTOR": "sampling"},
}
# A CLI run costs seconds and a model call: the short turns that queue up behind one go along with it,
# and it gets the time a cold start and a batch take (a run killed at the timeout is paid and retried).
EXTRACT_BATCH = "6"
EXTRACT_TIMEOUT = "180"
HOOK_TIMEOUT_SECONDS = 10
# Claude Code asks before every MCP tool call, and `claude -p` (nobody to ask) refuses it: install allows
# the tools that delete nothing; memory_correct and memory_forget keep asking (docs/hosts.md).
CLAUDE_ALLOWED = tuple(
    f"mcp__{SERVER}__{tool}"
    for tool in ("memory_record", "memory_recall", "memory_read", "session_checkpoint", "session_resume")
)
# Gemini CLI versions that keep hooks behind a setting read this one (docs/hosts.md, "Gemini CLI").
GEMINI_ENABLE = (("hooksConfig", "enabled"), True)


@dataclass(frozen=True)
class Wiring:
    """What every entry names: the program, the archive and the scope."""

    program: tuple[str, ...]  # the absolute path of `memlikehuman` (or python -m memlikehuman)
    db: Path | str  # an archive file, or a PostgreSQL URL (kept as written)
    persona: str
    project: str  # a project ID, or `auto`
    record: str | None = None  # `--record` of the hook commands (tools.parts); None: the default
    extraction: tuple[tuple[str, str], ...] = ()  # `--extract-with`: the server entry's extractor settings
    memory_file: Path | None = None  # `--memory-file`: the host's memory file the start and end hooks keep current

    def events(self, host: str, every: bool = False) -> tuple[str, ...]:
        """The host's hook events; with `every`, also those of parts not recorded (uninstall)."""
        chosen = set(tools.PARTS) if every else tools.parts(self.record)
        extra = [event for part in tools.PARTS if part in chosen for event in RECORD_EVENTS.get(part, {}).get(host, ())]
        return (*HOOK_EVENTS[host], *extra)

    def server(self) -> dict[str, Any]:
        env = {"MEMLIKEHUMAN_DB": str(self.db), "MEMLIKEHUMAN_PERSONA": self.persona}
        env["MEMLIKEHUMAN_PROJECT"] = self.project
        env.update(self.extraction)
        return {"command": self.program[0], "args": [*self.program[1:], "serve"], "env": env}

    def hook(self, host: str) -> str:
        options = ["--db", str(self.db), "--persona", self.persona, "--project", self.project]
        options += ["--record", self.record] if self.record is not None else []
        options += ["--memory-file", str(self.memory_file)] if self.memory_file is not None else []
        return shlex.join([*self.program, "hook", host, *options])


@dataclass(frozen=True)
class Change:
    """One config file before and after (None: the file does not exist / is removed)."""

    where: config_files.Place
    before: str | None
    after: str | None
    record: dict[str, Any]

    @property
    def path(self) -> Path:
        return self.where.path

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        label_old = str(self.path) if self.before is not None else "/dev/null"
        label_new = str(self.path) if self.after is not None else "/dev/null"
        return "".join(difflib.unified_diff(old, new, label_old, label_new))


def program() -> tuple[str, ...]:
    """The absolute command that runs this installation of memlikehuman."""
    script = Path(sys.executable).with_name("memlikehuman")
    if script.exists():
        return (str(script.absolute()),)
    found = shutil.which("memlikehuman")
    return (str(Path(found).absolute()),) if found else (str(Path(sys.executable).absolute()), "-m", "memlikehuman")


def extraction(host: str, extract_with: str | None) -> tuple[tuple[str, str], ...]:
    """The server entry's extractor settings for `--extract-with` (None or `none`: nothing is added).

    Raises InvalidArgument for a host whose model cannot be asked from here.
    """
    if extract_with in (None, "none"):
        return ()
    if extract_with != "host":
        raise InvalidArgument(f"--extract-with must be host or none, not {extract_with!r}")
    env = EXTRACT_WITH_HOST.get(host)
    if env is None:
        raise InvalidArgument(
            f"{host} has no headless CLI and its MCP client offers no sampling (docs/hosts.md): install without"
            " --extract-with; the agent can give memory_record its memories"
        )
    command = env["MEMLIKEHUMAN_EXTRACTOR"] == "command"
    batch = {"MEMLIKEHUMAN_EXTRACTION_BATCH": EXTRACT_BATCH, "MEMLIKEHUMAN_TIMEOUT": EXTRACT_TIMEOUT} if command else {}
    return tuple({**env, **batch}.items())


def check_persona(persona: str) -> None:
    """Refuse a persona that is not a valid persona_id before install writes it into a host's config,
    where it would make every hook and tool call fail later (uninstall takes any: it only removes)."""
    try:
        validate.persona_id(persona)
    except InvalidArgument as exc:
        raise InvalidArgument(f"--persona: {exc.message}") from None


def wiring(
    db: Path | str,
    persona: str,
    project_dir: Path | None,
    record: str | None = None,
    extraction: tuple[tuple[str, str], ...] = (),
    memory_file: Path | None = None,
) -> Wiring:
    """The entries' contents: persona as given, project = the directory's stable name or `auto`.

    Raises InvalidArgument when `record` names an unknown part.
    """
    project = project_name(project_dir) if project_dir is not None else AUTO
    if record is not None:
        try:
            record = ",".join(sorted(tools.parts(record))) or "none"
        except ValueError as exc:
            raise InvalidArgument(f"--record: {exc}") from None
    archive = db if isinstance(db, str) else db.expanduser().absolute()
    return Wiring(program(), archive, persona, project, record, extraction, memory_file)


def _app_dir(name: str) -> Path:
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / name
    if sys.platform == "win32":
        return home / "AppData" / "Roaming" / name
    return home / ".config" / name


def _group(host: str, command: str) -> dict[str, Any]:
    if host == "cursor":
        return {"command": command}
    entry: dict[str, Any] = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECONDS}
    if host == "gemini":
        entry.update(name=SERVER, timeout=HOOK_TIMEOUT_SECONDS * 1000)  # Gemini CLI counts milliseconds
    return {"hooks": [entry]}


def _hooks(host: str, w: Wiring, every: bool) -> tuple[tuple[tuple[str, ...], Any], ...]:
    item = _group(host, w.hook(host))
    return tuple((("hooks", event), item) for event in w.events(host, every))


def targets(
    host: str, w: Wiring, project_dir: Path | None, hooks: bool = True, every: bool = False
) -> list[tuple[Path, JsonEdit | str]]:
    """Each file of the host and our part of it (a JsonEdit, or the TOML block for Codex).

    every: the hook items of every event we may have installed (what uninstall looks for).
    """
    home, base = Path.home(), project_dir.absolute() if project_dir else None
    server = ((("mcpServers", SERVER), w.server()),)
    hook_items = _hooks(host, w, every) if hooks and host in HOOK_EVENTS else ()
    if host == "claude-code":
        mcp = base / ".mcp.json" if base else home / ".claude.json"
        settings = base / ".claude" / "settings.local.json" if base else home / ".claude" / "settings.json"
        # alwaysLoad: `claude -p` waits for our server (up to its 5 s connect timeout) before the first
        # request, so the first turn has the memory tools; a server that fails costs nothing (docs/hosts.md).
        loaded = ((("mcpServers", SERVER), {**w.server(), "alwaysLoad": True}),)
        allowed = tuple((("permissions", "allow"), tool) for tool in CLAUDE_ALLOWED)
        return [(mcp, JsonEdit(members=loaded)), (settings, JsonEdit(items=(*hook_items, *allowed)))]
    if host == "claude-desktop":
        return [(_app_dir("Claude") / "claude_desktop_config.json", JsonEdit(members=server))]
    if host == "codex":
        folder = base / ".codex" if base else codex.home()
        # hooks.json first: the block of config.toml trusts the hooks as that file then holds them.
        codex_hooks: list[tuple[Path, JsonEdit | str]] = [(folder / "hooks.json", JsonEdit(items=hook_items))]
        return [*(codex_hooks if hook_items else []), (folder / "config.toml", SERVER)]
    if host == "cursor":
        folder = base / ".cursor" if base else home / ".cursor"
        hooks_file = (folder / "hooks.json", JsonEdit(items=hook_items, root=(("version", 1),)))
        return [(folder / "mcp.json", JsonEdit(members=server)), *([hooks_file] if hook_items else [])]
    if host == "vscode":
        path = base / ".vscode" / "mcp.json" if base else _app_dir("Code") / "User" / "mcp.json"
        return [(path, JsonEdit(members=((("servers", SERVER), {"type": "stdio", **w.server()}),)))]
    if host == "gemini":
        path = (base or home) / ".gemini" / "settings.json"
        return [(path, JsonEdit(members=server, items=hook_items, flags=(GEMINI_ENABLE,) if hook_items else ()))]
    raise InvalidArgument(f"unknown host {host!r}: use one of {', '.join(HOSTS)}")


def _read(where: config_files.Place, verb: str) -> str | None:
    """The file's text as it is on disk (its line endings kept: it is written back byte for byte)."""
    try:
        data = config_files.read(where)
        return None if data is None else data.decode("utf-8")
    except files.LinkRefused as exc:
        raise _refused(exc, verb) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"cannot read {where.path} ({exc}): fix its permissions or encoding") from None


def _refused(exc: files.LinkRefused, verb: str) -> InvalidArgument:
    return InvalidArgument(
        f"{exc.path} is a symbolic link; {verb} never reads or writes a config file, its backup or its folder"
        f" through a link (a project's files could send the write elsewhere): remove it and run {verb} again"
    )


def plan(host: str, w: Wiring, project_dir: Path | None, *, remove: bool, hooks: bool = True) -> list[Change]:
    """The file changes install (or, with remove, uninstall) would make; nothing is written.

    Raises InvalidArgument when a config, its backup or a folder of it below the project is a link."""
    records = edits.load_records()
    changes: list[Change] = []
    verb = "uninstall" if remove else "install"
    base = project_dir.absolute() if project_dir else None
    for path, part in targets(host, w, project_dir, hooks=hooks or remove, every=remove):
        where = config_files.place(path, base)
        before = _read(where, verb)
        try:
            config_files.check(backup_place(where))
        except files.LinkRefused as exc:
            raise _refused(exc, verb) from None
        record = dict(records.get(str(path), {}))
        if remove:
            if before is None:
                continue
            after = (
                edits.toml_uninstall(before, str(path), record)
                if isinstance(part, str)
                else edits.json_uninstall(before, part, str(path), record)
            )
        elif isinstance(part, str):
            trusted = _trusted(changes) if project_dir is None else {}
            after = edits.toml_install(before, w.server(), trusted, str(path), record)
        else:
            after = edits.json_install(before, part, str(path), record)
        changes.append(Change(where, before, after, record))
    return changes


def _trusted(changes: list[Change]) -> dict[str, str]:
    """Codex's trust entries for our hooks, as the hooks.json planned before config.toml will hold them."""
    hooks = next((c for c in changes if c.path.name == "hooks.json" and c.after is not None), None)
    return codex.trust(hooks.path, hooks.after, edits.is_ours) if hooks is not None and hooks.after else {}


BACKUP_SUFFIX = ".memlikehuman-backup"


def backup_place(where: config_files.Place) -> config_files.Place:
    """The one backup of a config file: as it was before memlikehuman first changed it."""
    return where.beside(BACKUP_SUFFIX)


def apply(changes: Iterable[Change], *, remove: bool) -> list[Path]:
    """Write the changes; return the backups made.

    A file that existed before memlikehuman first touched it gets one backup, made then and kept: a
    later install or uninstall never adds another, and a file install created gets none. When an
    uninstall gives a file back exactly as its backup holds it, the backup goes (nothing is lost).
    Raises InvalidArgument when a link appeared meanwhile (nothing is written through it)."""
    records = edits.load_records()
    backups = []
    for change in changes:
        if not change.changed:
            continue
        try:
            backups += _write(change, records, remove=remove)
        except files.LinkRefused as exc:
            raise _refused(exc, "uninstall" if remove else "install") from None
        if remove:
            records.pop(str(change.path), None)
        else:
            records[str(change.path)] = change.record
    edits.save_records(records)
    return backups


def _write(change: Change, records: dict[str, Any], *, remove: bool) -> list[Path]:
    """Back the file up (once), then write or remove it; return the backup made, if one was."""
    backup = backup_place(change.where)
    made = []
    ours = bool(records.get(str(change.path), change.record).get("created_file"))
    if change.before is not None and not ours and config_files.create(backup, change.before.encode("utf-8")):
        made.append(backup.path)
    if change.after is None:
        config_files.remove(change.where)
    else:
        config_files.write(change.where, change.after.encode("utf-8"))
    if remove and change.after is not None and config_files.read(backup) == change.after.encode("utf-8"):
        config_files.remove(backup)  # the file is back as the backup holds it: nothing is lost
    return made
