"""Which scope a host's hooks and its MCP server share: decided once, at install.

The rule (docs/hosts.md, "Scope"): persona `default` unless `install --persona` says otherwise;
project = the stable name of the project directory (its git work tree's top folder when there is
one): the folder name, made safe, plus 8 hex digits of its absolute path, so two folders that are
both called `app` never share memories. A user-level install writes `auto`, resolved at run time
from the hook payload's working directory (hooks) or the process's working directory (server).
"""

from __future__ import annotations

import re
from pathlib import Path

from .digest import sha256_hex

AUTO = "auto"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def project_root(directory: Path) -> Path:
    """The top folder of the git work tree holding `directory`, else `directory` itself."""
    start = directory.expanduser().resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def project_name(directory: Path) -> str:
    """The stable project ID of a directory; `default` for the file-system root and the home folder."""
    root = project_root(directory)
    if root == Path(root.anchor) or root == Path.home().resolve():
        return "default"
    name = _UNSAFE.sub("-", root.name).strip("-.")[:100] or "project"
    digest = sha256_hex(str(root).encode("utf-8", "surrogatepass"))[:8]
    return f"{name}-{digest}"


def resolve_project(configured: str | None, cwd: str | None) -> str:
    """The project of one hook run: the configured ID, or for `auto`/none the payload's directory."""
    if configured and configured != AUTO:
        return configured
    if cwd:
        return project_name(Path(cwd))
    return "default"
