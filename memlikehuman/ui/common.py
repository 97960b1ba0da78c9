"""What every page shares: reading query parameters, the scope, navigation, error pages."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse

from .. import validate
from ..engine import Engine
from ..errors import InvalidArgument, MemLikeHumanError
from ..records import Scope
from .html import Safe, el, join, page, url

STATUS = {
    "invalid_argument": 400,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "limit_exceeded": 413,
    "unavailable": 503,
    "internal": 500,
}
MAX_PARAM_CHARS = 20_000


def engine_of(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def csrf_of(request: Request) -> str:
    token: str = request.app.state.keys.csrf
    return token


def param(request: Request, name: str, default: str | None = None) -> str | None:
    """A query parameter (None or ``default`` when absent); a repeated or oversized one is an error."""
    values = request.query_params.getlist(name)
    if not values:
        return default
    if len(values) > 1:
        raise InvalidArgument(f"the parameter {name} is given {len(values)} times: give it once")
    if len(values[0]) > MAX_PARAM_CHARS:
        raise InvalidArgument(
            f"the parameter {name} is {len(values[0]):,} characters long: use at most {MAX_PARAM_CHARS:,}"
        )
    return values[0]


def required(request: Request, name: str) -> str:
    value = param(request, name)
    if not value:
        raise InvalidArgument(f"the parameter {name} is missing: follow a link of this UI or add {name}=... to the URL")
    return value


def number(value: str | None, name: str, default: int, low: int, high: int) -> int:
    """An integer parameter in [low, high]; absent or empty gives ``default``."""
    if value is None or value == "":
        return default
    try:
        parsed = int(value)
    except ValueError:
        raise InvalidArgument(f"{name} must be a whole number from {low} to {high}, not {value[:40]!r}") from None
    return validate.int_range(parsed, name, low, high)


def scope_of(values: Any) -> Scope:
    """The (persona, project) scope named by ``persona`` and ``project`` (default: default)."""
    return Scope(*validate.scope(values.get("persona") or "default", values.get("project") or "default"))


def scope_params(scope: Scope) -> dict[str, str]:
    return {"persona": scope.persona_id, "project": scope.project_id}


def scope_nav(scope: Scope) -> Safe:
    """The links of one scope's pages."""
    p = scope_params(scope)
    return el(
        "nav",
        el("span", f"{scope.persona_id} / {scope.project_id}", class_="scope"),
        el("a", "Timeline", href=url("/scope", **p)),
        el("a", "Search", href=url("/search", **p)),
        el("a", "Checkpoints & resume", href=url("/checkpoints", **p)),
        el("a", "Core persona", href=url("/persona", **p)),
    )


def html(title: str, body: object, *, nav: object = None, status: int = 200) -> HTMLResponse:
    return HTMLResponse(page(title, body, nav=nav), status_code=status)


def error_page(exc: MemLikeHumanError) -> HTMLResponse:
    """The page for a refused request: what was wrong and what to do; nothing was changed."""
    body = join(
        el("p", str(exc), class_="error"),
        el("p", "Nothing was changed.", class_="muted"),
        el("p", el("a", "Back to the scopes", href="/")),
    )
    return html(f"Not done: {exc.code}", body, status=STATUS.get(exc.code, 500))


def event_link(scope: Scope, event_id: str, label: object = None, **extra: object) -> Safe:
    return el(
        "a", label if label is not None else event_id, href=url("/event", **scope_params(scope), id=event_id, **extra)
    )


def memory_link(scope: Scope, memory_id: str, label: object = None) -> Safe:
    return el("a", label if label is not None else memory_id, href=url("/memory", **scope_params(scope), id=memory_id))


def state_badge(state: str) -> Safe:
    return el("span", state, class_=f"badge state-{state}")
