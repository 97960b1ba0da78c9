"""Browsing pages: the scopes and latest events, one scope's timeline, search."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse

from ..admin import stats
from ..records import Scope
from ..retrieval.recall import DETAILS, MODES
from . import counts as count
from .common import (
    event_link,
    html,
    memory_link,
    number,
    param,
    scope_nav,
    scope_of,
    scope_params,
    state_badge,
)
from .html import Safe, clip, el, join, table, url

RECENT = 20
TIMELINE_PAGE = 50
SESSIONS_SHOWN = 30
EXCERPT = 400
_EVENT_ROW = (
    "sequence, event_id, persona_id, project_id, session_id, role, source, category, kind,"
    f" substr(text, 1, {EXCERPT + 1}) AS start, length(text) AS chars, occurred_at, extraction_state"
)


def _scope_row(s: stats.ScopeStats) -> list[object]:
    scope = Scope(s.persona_id, s.project_id)
    return [
        el("a", s.persona_id, href=url("/persona", persona=s.persona_id)),
        el("a", s.project_id, href=url("/scope", **scope_params(scope))),
        s.events,
        s.extraction_pending,
        s.extraction_failed,
        s.memories_current,
        s.memories_superseded,
        s.memories_revoked,
        f"{s.checkpoints_valid} / {s.checkpoints_invalidated}",
        el("a", "search", href=url("/search", **scope_params(scope))),
    ]


def _event_cells(row: dict[str, Any], *, with_scope: bool) -> list[object]:
    scope = Scope(row["persona_id"], row["project_id"])
    text = clip(row["start"], EXCERPT) + (f" [{row['chars']:,} characters]" if row["chars"] > EXCERPT else "")
    cells: list[object] = [row["occurred_at"][:19].replace("T", " ")]
    if with_scope:
        cells.append(f"{row['persona_id']} / {row['project_id']}")
    cells += [
        row["session_id"],
        f"{row['role']} via {row['source']}" + (" (correction)" if row["kind"] == "correction" else ""),
        state_badge(row["extraction_state"]),
        event_link(scope, row["event_id"], text),
    ]
    if "memories" in row:
        cells.insert(-1, row["memories"])
    return cells


def home(request: Request) -> HTMLResponse:
    """The scopes with their counts, and the most recent events of the whole archive."""
    db = request.app.state.engine.db
    with db.read():
        counts = count.scopes(db)
        recent = db.query(f"SELECT {_EVENT_ROW} FROM events ORDER BY sequence DESC LIMIT ?", (RECENT,))
        personas = db.query("SELECT DISTINCT persona_id FROM persona_versions ORDER BY persona_id")
    headers = ["persona", "project", "events", "pending", "failed", "current", "superseded", "revoked"]
    body = join(
        el("h2", "Scopes"),
        table([*headers, "checkpoints valid / invalidated", ""], [_scope_row(s) for s in counts])
        if counts
        else el("p", "The archive holds no events yet."),
        el("h2", f"Most recent events ({len(recent)})"),
        table(
            ["when", "scope", "session", "from", "extraction", "text"],
            [_event_cells(r, with_scope=True) for r in recent],
        ),
        el("h2", "Core personas"),
        el(
            "p",
            [
                join(el("a", row["persona_id"], href=url("/persona", persona=row["persona_id"])), " ")
                for row in personas
            ],
        )
        if personas
        else el("p", "No core persona is set.", class_="muted"),
        el("p", f"Archive: {db.path}", class_="muted"),
    )
    return html("What is remembered", body)


def timeline(request: Request) -> HTMLResponse:
    """One scope's events, newest first, grouped by session, with their extraction state; paged."""
    scope = scope_of(request.query_params)
    session = param(request, "session")
    before = number(param(request, "before"), "before", 0, 0, 2**62)
    db = request.app.state.engine.db
    where = "persona_id = ? AND project_id = ?" + (" AND session_id = ?" if session else "")
    params: tuple[Any, ...] = (scope.persona_id, scope.project_id, *((session,) if session else ()))
    with db.read():
        counts = count.scopes(db, scope)
        sessions = db.query(
            "SELECT session_id, count(*) AS n, max(sequence) AS last FROM events"
            " WHERE persona_id = ? AND project_id = ?"
            " GROUP BY session_id ORDER BY last DESC LIMIT ?",
            (scope.persona_id, scope.project_id, SESSIONS_SHOWN),
        )
        rows = db.query(
            f"SELECT {_EVENT_ROW}, (SELECT count(*) FROM memories m WHERE m.event_sequence = e.sequence) AS memories"
            f" FROM events e WHERE {where}"
            + (" AND sequence < ?" if before else "")
            + " ORDER BY sequence DESC LIMIT ?",
            (*params, *((before,) if before else ()), TIMELINE_PAGE),
        )
    s = counts[0] if counts else stats.ScopeStats(scope.persona_id, scope.project_id)
    summary = el(
        "p",
        f"{s.events:,} events ({s.extraction_pending:,} pending, {s.extraction_failed:,} failed extraction);"
        f" memories: {s.memories_current:,} current, {s.memories_superseded:,} superseded, {s.memories_revoked:,}"
        f" revoked; checkpoints: {s.checkpoints_valid:,} valid, {s.checkpoints_invalidated:,} invalidated.",
    )
    session_links = el(
        "p",
        "Sessions (latest first): ",
        el("a", "all", href=url("/scope", **scope_params(scope))),
        [
            join(
                " · ",
                el(
                    "a",
                    f"{r['session_id']} ({r['n']:,})",
                    href=url("/scope", **scope_params(scope), session=r["session_id"]),
                ),
            )
            for r in sessions
        ],
    )
    more = (
        el(
            "p",
            el(
                "a",
                "Older events →",
                href=url("/scope", **scope_params(scope), session=session, before=rows[-1]["sequence"]),
            ),
        )
        if len(rows) == TIMELINE_PAGE
        else None
    )
    body = join(summary, session_links, el("h2", f"Session {session}" if session else "Timeline"), _grouped(rows), more)
    return html(f"Timeline of {scope.persona_id} / {scope.project_id}", body, nav=scope_nav(scope))


def _grouped(rows: list[dict[str, Any]]) -> Safe:
    """Consecutive events of one session under one heading."""
    if not rows:
        return el("p", "No events here.", class_="muted")
    groups: list[list[dict[str, Any]]] = []
    for row in rows:
        if groups and groups[-1][0]["session_id"] == row["session_id"]:
            groups[-1].append(row)
        else:
            groups.append([row])
    headers = ["when", "session", "from", "extraction", "memories", "text"]
    return join(
        el(
            "section",
            el("h3", f"session {group[0]['session_id']}", class_="session"),
            table(headers, [_event_cells(r, with_scope=False) for r in group]),
        )
        for group in groups
    )


def _search_form(request: Request, scope: Scope) -> Safe:
    q = request.query_params
    mode = q.get("mode") or "fast"
    detail = q.get("detail") or "auto"
    return el(
        "form",
        el("input", type="hidden", name="persona", value=scope.persona_id),
        el("input", type="hidden", name="project", value=scope.project_id),
        el("label", "Query ", el("input", type="search", name="q", value=q.get("q", ""), size="60", id="q")),
        el("label", " Mode ", el("select", [el("option", m, value=m, selected=m == mode) for m in MODES], name="mode")),
        el(
            "label",
            " Detail ",
            el("select", [el("option", d, value=d, selected=d == detail) for d in DETAILS], name="detail"),
        ),
        el(
            "label",
            " As of ",
            el("input", type="text", name="as_of", value=q.get("as_of", ""), placeholder="2026-05-01T00:00:00Z"),
        ),
        el(
            "label",
            el("input", type="checkbox", name="history", value="1", checked=q.get("history") == "1"),
            " include history",
        ),
        el("button", "Search", type="submit", id="search"),
        method="get",
        action="/search",
        class_="search",
    )


def search(request: Request) -> HTMLResponse:
    """memory_recall in a form: the three modes, as_of and include_history, through recall()."""
    scope = scope_of(request.query_params)
    query = param(request, "q", "") or ""
    form = _search_form(request, scope)
    if not query:
        return html(f"Search {scope.persona_id} / {scope.project_id}", form, nav=scope_nav(scope))
    result = request.app.state.engine.recall(
        scope,
        query,
        limit=number(param(request, "limit"), "limit", 20, 1, 100),
        as_of=param(request, "as_of") or None,
        include_history=param(request, "history") == "1",
        detail=param(request, "detail") or "auto",
        search_mode=param(request, "mode") or "fast",
    )
    memory_rows = [
        [
            f"{hit.score:.3f}",
            hit.status + (", overview" if hit.detail == "overview" else ""),
            el("span", m.basis, class_=f"badge basis-{m.basis}"),
            m.kind,
            memory_link(scope, m.memory_id, m.content),
            f"{m.valid_from[:10]} .. {(m.valid_to or 'now')[:10]}",
            event_link(scope, m.event_id, f"{m.source} ({m.role}) {m.occurred_at[:16]}"),
        ]
        for hit in result.memories
        for m in [hit.memory]
    ]
    raw_rows = [
        [
            f"{hit.score:.3f}",
            event_link(scope, hit.event.event_id),
            hit.event.occurred_at[:16],
            f"{hit.event.source} ({hit.event.role})",
            hit.excerpt + (" [truncated]" if hit.truncated else ""),
        ]
        for hit in result.raw_fallback
    ]
    cov = result.coverage
    body = join(
        form,
        el(
            "p",
            f"{result.search_mode} search as of {result.as_of}: {cov.events_in_scope:,} events in scope,"
            f" {cov.events_pending:,} pending and {cov.events_failed:,} failed extraction,"
            f" {cov.events_without_vectors:,} without vectors.",
            class_="muted",
        ),
        [el("p", f"Warning: {w}", class_="warning") for w in result.warnings],
        el("h2", f"Memories ({len(memory_rows)})"),
        table(["score", "status", "basis", "kind", "memory", "valid", "source"], memory_rows, id="memories")
        if memory_rows
        else el("p", "No memory matches.", class_="muted"),
        el("h2", f"Original events ({len(raw_rows)})"),
        table(["score", "event", "when", "from", "excerpt"], raw_rows, id="raw")
        if raw_rows
        else el("p", "No event matches.", class_="muted"),
    )
    return html(f"Search {scope.persona_id} / {scope.project_id}", body, nav=scope_nav(scope))
