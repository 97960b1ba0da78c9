"""Which scope a command works on: --persona/--project as given, else the project the hooks record into here.

The rule (README, "Command line"): without --project, a command takes MEMLIKEHUMAN_PROJECT when it
names a project (`auto`: this folder's), else this folder's project as the hooks name it
(text/projects.project_name: the top folder of the git work tree holding the working directory, else
that directory itself). The home folder and the file-system root are no project folder: there a
command keeps its own default, the `default` scope (recall, retry) or every scope (stats,
export, extract). When the folder chose the project, the command says so on stderr, once, after it
succeeded (cli/main.py): a failed command prints its one coded error line and nothing else. `forget`
needs none of this: an ID names one record, whatever its scope (cli/forget.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from .. import config, validate
from ..records import Scope
from ..text.projects import AUTO, project_name
from .common import as_usage, say_after, usage_error

EVERY = "--all for every scope"
F = TypeVar("F", bound=Callable[..., Any])


def project_value(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--project as the hooks read it: `auto` is the stable name of the current directory (its git work
    tree's top folder; docs/hosts.md, "Scope"), anything else the project ID itself."""
    if value is None or value.strip().lower() != AUTO:
        return value
    return project_name(Path.cwd())


def scope_options(otherwise: str = "default", persona: str = "", project: str = "") -> Callable[[F], F]:
    """--persona and --project of a command that works on one scope; `otherwise`: what it takes without
    --project outside a project folder. `persona`, `project`: other help texts."""
    persona = persona or "Persona of the scope (default: $MEMLIKEHUMAN_PERSONA, else default)."
    project = project or (
        "Project of the scope (`auto`: this folder's, as the hooks name it; default: $MEMLIKEHUMAN_PROJECT,"
        f" else this folder's, else {otherwise})."
    )

    def add(fn: F) -> F:
        fn = click.option("--project", "project_id", default=None, callback=project_value, help=project)(fn)
        return click.option("--persona", "persona_id", default=None, help=persona)(fn)

    return add


def default_project(settings: config.Settings) -> tuple[str | None, bool]:
    """The project of a command without --project, and whether this folder chose it (else the setting).

    None in the home folder or the file-system root without MEMLIKEHUMAN_PROJECT: no project folder."""
    here = project_name(Path.cwd())
    if settings.project_id != "default":  # a name, or `auto` already resolved to this folder's
        return settings.project_id, settings.project_id == here
    return (None, False) if here == "default" else (here, True)


def _chosen(settings: config.Settings, also: str = "") -> str | None:
    """default_project, said on stderr when the folder chose it (``also``: a further way out, e.g. EVERY)."""
    project, from_folder = default_project(settings)
    if from_folder:
        ways = ", ".join(part for part in ("--project default for the default scope", also) if part)
        say_after(f"memlikehuman: project {project!r} (this folder; {ways})")
    return project


def check_scope(persona_id: str | None, project_id: str | None) -> None:
    """Exit 2 for a --persona or --project the tools would refuse, before anything is opened."""
    with as_usage():
        if persona_id is not None:
            validate.persona_id(persona_id)
        if project_id is not None:
            validate.identifier(project_id, "project_id")


def one_scope(settings: config.Settings, persona_id: str | None, project_id: str | None, also: str = "") -> Scope:
    """The one scope of recall and retry: as given, else MEMLIKEHUMAN_PERSONA and the project of
    this folder (default_project), else `default`."""
    scope = Scope(persona_id or settings.persona_id, project_id or _chosen(settings, also) or "default")
    check_scope(scope.persona_id, scope.project_id)
    return scope


def some_scopes(
    settings: config.Settings, persona_id: str | None, project_id: str | None, all_scopes: bool
) -> tuple[str | None, str | None]:
    """The (persona, project) filter of stats, export and extract (None: any): --all is every scope;
    without --project, the project of this folder (default_project), else every project."""
    if all_scopes:
        if persona_id is not None or project_id is not None:
            usage_error("use either --all or --persona/--project, not both")
        return None, None
    project = project_id if project_id is not None else _chosen(settings, EVERY)
    check_scope(persona_id, project)
    return persona_id, project


def scopes_hint(engine: Any, persona_id: str, project_id: str) -> str:
    """For a search that found its scope empty: which scopes hold events, and this folder's project."""
    held = [s for s in engine.stats().scopes if s.events]
    here = project_name(Path.cwd())
    shown = ", ".join(f"--persona {s.persona_id} --project {s.project_id} ({s.events:,})" for s in held[:8])
    more = f" and {len(held) - 8} more (memlikehuman stats)" if len(held) > 8 else ""
    where = f"; this folder's project (--project auto) is {here}" if here != project_id else ""
    if not held:
        return f"the archive holds no events yet{where}"
    return f"no events in persona {persona_id!r}, project {project_id!r}; events are in: {shown}{more}{where}"
