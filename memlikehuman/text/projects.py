"""Which scope a host's hooks and its MCP server share: decided once, at install.

The rule (docs/hosts.md, "Scope"): persona `default` unless `install --persona` says otherwise;
project = the stable name of the project directory (its git work tree's top folder when there is
one): the folder name, made safe, plus 8 hex digits of its absolute path, so two folders that are
both called `app` never share memories. A user-level install writes `auto`, resolved at run time
from the hook payload's working directory (hooks) or the process's working directory (server).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .digest import sha256_hex

AUTO = "auto"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def project_root(directory: Path) -> Path:
    """The top folder of the git work tree holding `directory`, else `directory` itself (made absolute).

    Never raises for the path's form: a host may name a directory no file system can hold (a NUL, a
    name over 255 bytes); it holds no work tree, and its name still names the project."""
    try:
        start = directory.expanduser().resolve()
    except (OSError, ValueError, RuntimeError):  # RuntimeError: a symlink loop, or no home for "~"
        start = Path(os.path.abspath(directory))
    for candidate in (start, *start.parents):
        if _exists(candidate / ".git"):
            return candidate
    return start


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def project_name(directory: Path, home: Path | None = None) -> str:
    """The stable project ID of a directory; `default` for the file-system root and the home folder
    (`home`, default this process's)."""
    root = project_root(directory)
    if root == Path(root.anchor) or root == (Path.home() if home is None else home).resolve():
        return "default"
    name = _UNSAFE.sub("-", root.name).strip("-.")[:100] or "project"
    digest = sha256_hex(str(root).encode("utf-8", "surrogatepass"))[:8]
    return f"{name}-{digest}"


def resolve_project(configured: str | None, cwd: str | None, home: Path | None = None) -> str:
    """The project of one hook run: the configured ID, or for `auto`/none the payload's directory."""
    if configured and configured != AUTO:
        return configured
    if cwd:
        return project_name(Path(cwd), home)
    return "default"
