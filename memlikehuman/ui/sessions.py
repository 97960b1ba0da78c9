"""Checkpoints with a session_resume preview, and the core persona with its versions."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse

from ..archive import checkpoints
from ..records import Scope
from ..sessions import context
from ..validate import MAX_BUDGET
from .common import csrf_of, event_link, html, number, param, scope_nav, scope_of
from .html import Safe, el, join, table

CHECKPOINTS_SHOWN = 50


def _checkpoint_rows(request: Request, scope: Scope) -> list[list[object]]:
    db = request.app.state.engine.db
    rows = db.query(
        f"SELECT {checkpoints.COLUMNS} FROM checkpoints WHERE persona_id = ? AND project_id = ?"
        " ORDER BY id DESC LIMIT ?",
        (scope.persona_id, scope.project_id, CHECKPOINTS_SHOWN),
    )
    out: list[list[object]] = []
    for row in rows:
        state = "erased (a forget invalidated it)" if row["state"] is None else row["state"]
        valid = (
            "valid"
            if row["invalidated_at"] is None
            else f"invalidated {row['invalidated_at']}: {row['invalidated_reason']}"
        )
        out.append(
            [
                row["checkpoint_id"],
                row["session_id"],
                event_link(scope, row["covered_event_id"]),
                row["created_at"],
                valid,
                el("code", state),
            ]
        )
    return out


def _resume_form(request: Request, scope: Scope) -> Safe:
    q = request.query_params
    return el(
        "form",
        el("input", type="hidden", name="persona", value=scope.persona_id),
        el("input", type="hidden", name="project", value=scope.project_id),
        el("label", "Token budget ", el("input", type="number", name="budget", value=q.get("budget", "4096"), min="1")),
        el(
            "label",
            " Target model ",
            el("input", type="text", name="model", value=q.get("model", ""), placeholder="gpt-4o"),
        ),
        el("label", " Query ", el("input", type="text", name="q", value=q.get("q", ""))),
        el("label", " Session ", el("input", type="text", name="session", value=q.get("session", ""))),
        el("input", type="hidden", name="preview", value="1"),
        el("button", "Preview session_resume", type="submit", id="resume"),
        method="get",
        action="/checkpoints",
    )


def _resume_preview(request: Request, scope: Scope) -> Safe:
    result = request.app.state.engine.resume(
        scope,
        query=param(request, "q", "") or "",
        token_budget=number(param(request, "budget"), "budget", context.DEFAULT_BUDGET, 1, MAX_BUDGET),
        target_model=param(request, "model") or None,
        session_id=param(request, "session") or None,
    )
    rows = [[c.name, "yes" if c.included else "no", c.tokens, c.items, c.omitted_items] for c in result.components]
    return join(
        el(
            "p",
            f"status {result.status}: {result.token_count:,} tokens ({result.token_method}),"
            f" checkpoint {result.checkpoint_id or 'none'}; omitted: {', '.join(result.omitted) or 'nothing'}.",
        ),
        [el("p", f"Warning: {w}", class_="warning") for w in result.warnings],
        table(["component", "included", "tokens", "items", "omitted items"], rows),
        el("h3", "The context string"),
        el("pre", result.context, class_="original", id="context"),
    )


def checkpoints_page(request: Request) -> HTMLResponse:
    """The scope's checkpoints (state, coverage, validity) and what session_resume would return."""
    scope = scope_of(request.query_params)
    with request.app.state.engine.db.read():
        rows = _checkpoint_rows(request, scope)
    body = join(
        el("h2", f"Checkpoints ({len(rows)}, newest first)"),
        table(["checkpoint", "session", "covers up to", "created", "validity", "saved state"], rows)
        if rows
        else el("p", "None.", class_="muted"),
        el("h2", "What session_resume would return"),
        _resume_form(request, scope),
        _resume_preview(request, scope) if param(request, "preview") == "1" else None,
    )
    return html(f"Checkpoints of {scope.persona_id} / {scope.project_id}", body, nav=scope_nav(scope))


def persona_page(request: Request) -> HTMLResponse:
    """The core persona of a persona, every version of it, and a form to edit it."""
    # The core persona belongs to the persona; the project only keeps the navigation in its scope.
    scope = scope_of(request.query_params)
    persona_id = scope.persona_id
    history = request.app.state.engine.persona_history(persona_id)
    current = history[0] if history else None
    form = el(
        "form",
        el("input", type="hidden", name="csrf", value=csrf_of(request)),
        el("input", type="hidden", name="persona", value=persona_id),
        el("input", type="hidden", name="project", value=scope.project_id),
        el(
            "label",
            "Core persona text",
            el("textarea", current.text if current else "", name="text", rows="8", id="persona-text"),
        ),
        el("button", "Save as a new version", type="submit", id="save-persona"),
        method="post",
        action="/persona",
        class_="change",
    )
    body = join(
        el("h2", f"Current (version {current.version}, set {current.created_at})" if current else "Not set"),
        el("pre", current.text, class_="original", id="persona-current") if current else None,
        el("h2", "Edit"),
        form,
        el("h2", f"Versions ({len(history)})"),
        table(
            ["version", "set", "text"],
            [[v.version, v.created_at, el("pre", v.text)] for v in history],
            id="persona-versions",
        ),
    )
    return html(f"Core persona of {persona_id}", body, nav=scope_nav(scope))
