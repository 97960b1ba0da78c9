"""Which hosts are wired (for `doctor`): our entries in their config files, and when each hook last ran."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..errors import MemLikeHumanError
from ..records import Check
from . import codex, config_files, edits, jsonedit, state
from .edits import JsonEdit
from .install import HOSTS, Wiring, targets

_PROBE = Wiring(("memlikehuman",), Path("memory.sqlite3"), "default", "auto")


@dataclass(frozen=True)
class HostStatus:
    host: str
    files: tuple[Path, ...]  # config files that hold our server entry or hooks
    hooks: bool  # some of them hold our hooks
    last_runs: dict[str, str]  # event -> last successful run
    last_failure: str | None


def _holds(path: Path, part: JsonEdit | str, base: Path | None) -> tuple[bool, bool]:
    """(holds our entries, holds our hooks) for one file; read as install reads it (no link followed)."""
    try:
        text = (config_files.read(config_files.place(path, base)) or b"").decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False, False
    if isinstance(part, str):
        return edits.TOML_BEGIN in text, False
    try:
        root = jsonedit.parse(text, str(path)).value
    except MemLikeHumanError:
        return False, False
    member = any(_dig(root, p[:-1]).get(p[-1]) is not None for p, _ in part.members)
    hooked = any(any(edits.is_ours(i) for i in _dig(root, p[:-1]).get(p[-1]) or []) for p, _ in part.items)
    return member or hooked, hooked


def _dig(value: object, path: tuple[str, ...]) -> dict:
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def wired(db_path: Path, project_dir: Path | None = None) -> list[HostStatus]:
    """The hosts whose user-level (or `project_dir`'s) config holds our entries."""
    runs = state.last_runs(db_path)
    failure = _last_line(state.log_path(db_path))
    found = []
    for host in HOSTS:
        files, hooked = [], False
        for base in (None, project_dir) if project_dir else (None,):
            for path, part in targets(host, _PROBE, base):
                holds, hooks = _holds(path, part, base.absolute() if base else None)
                if holds:
                    files.append(path)
                    hooked = hooked or hooks
        if files:
            mine = failure if failure and f" hook {host} " in failure else None
            found.append(HostStatus(host, tuple(files), hooked, runs.get(host, {}), mine))
    return found


def _last_line(path: Path) -> str | None:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    return lines[-1] if lines else None


def checks(settings: Settings) -> list[Check]:
    """One check per wired host (`memlikehuman install`): where it is wired and when its hooks last ran."""
    checks = []
    for host in wired(settings.db_path, Path.cwd()):
        where = ", ".join(str(p) for p in host.files)
        runs = "; ".join(f"{event} {stamp}" for event, stamp in sorted(host.last_runs.items()))
        if not host.hooks:
            detail, status = f"MCP server entry in {where} (this host has no hooks wired)", "ok"
        elif runs:
            detail, status = f"wired in {where}; hooks last ran: {runs}", "ok"
        else:
            detail, status = f"wired in {where}; its hooks have not run yet (start a session in the host)", "ok"
        if host.last_failure:
            detail, status = f"{detail}; last hook failure: {host.last_failure}", "warn"
        untrusted = _codex_untrusted() if host.host == "codex" and host.hooks else 0
        if untrusted:
            detail = (
                f"{detail}; Codex runs none of {untrusted} hook(s) of ours until they are trusted (their command"
                " changed since install wrote their trust): run `memlikehuman install codex` again, or review"
                " them once in the interactive codex"
            )
            status = "warn"
        checks.append(Check(f"host {host.host}", status, detail))
    return checks


def _codex_untrusted() -> int:
    """How many of our hook handlers in Codex's user-level hooks.json config.toml does not trust as they are."""
    import tomllib

    folder = codex.home()
    try:
        hooks_text = (folder / "hooks.json").read_text(encoding="utf-8")
        config = tomllib.loads((folder / "config.toml").read_text(encoding="utf-8"))
        wanted = codex.trust(folder / "hooks.json", hooks_text, edits.is_ours)
    except (OSError, ValueError):  # no file, not TOML or not JSON: the host check says what it can
        return 0
    state = (config.get("hooks") or {}).get("state") or {}
    return sum(1 for key, value in wanted.items() if (state.get(key) or {}).get("trusted_hash") != value)
