"""The changes a person makes: correct a memory, forget a record (after a preview), edit the core persona.

Each goes through the same core operation as the MCP tools and the CLI (Engine.correct,
Engine.forget, personas.set_text). A change is a POST of a form of this UI: the Guard checked its
origin, ``read_form`` checks its CSRF token and its shape before anything is done.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse

from ..archive.connection import Connection
from ..archive.memories import MEMORY_PREFIX
from ..errors import Forbidden, InvalidArgument, LimitExceeded
from ..records import Preview, Scope
from .common import csrf_of, event_link, html, memory_link, required, scope_nav, scope_of, scope_params
from .html import Safe, clip, el, join, table, url
from .security import same

MAX_FORM_BYTES = 1_000_000  # a 20,000-character persona is at most ~180 kB percent-encoded
FORM_TYPE = "application/x-www-form-urlencoded"


async def read_form(request: Request, fields: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, str]:
    """The posted form: urlencoded, UTF-8, each field at most once, the CSRF token of this run.

    Raises Forbidden (no or wrong CSRF token), LimitExceeded (over 1 MB) or InvalidArgument.
    """
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != FORM_TYPE:
        raise InvalidArgument(f"a change is posted as {FORM_TYPE}: use the forms of this UI")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise LimitExceeded(f"the form is over {MAX_FORM_BYTES:,} bytes: send less text")
    try:
        pairs = parse_qsl(body.decode("ascii"), keep_blank_values=True, strict_parsing=bool(body), errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise InvalidArgument("the form is not valid urlencoded UTF-8: use the forms of this UI") from None
    form: dict[str, str] = {}
    for name, value in pairs:
        if name in form:
            raise InvalidArgument(f"the form field {name} is given twice: give it once")
        form[name] = value
    if not same(form.get("csrf"), csrf_of(request)):
        raise Forbidden("the form lacks this run's CSRF token: reload the page of this UI and submit it again")
    missing = [name for name in fields if not form.get(name)]
    if missing:
        raise InvalidArgument(f"the form field {', '.join(missing)} is missing or empty: fill it in")
    unknown = set(form) - {"csrf", *fields, *optional}
    if unknown:
        raise InvalidArgument(f"unknown form fields {', '.join(sorted(unknown))[:200]}: use the forms of this UI")
    return form


def _done(title: str, scope: Scope, rows: list[tuple[str, object]], links: object) -> HTMLResponse:
    facts = el("dl", [join(el("dt", k), el("dd", v)) for k, v in rows], class_="facts", id="result")
    return html(title, join(facts, el("p", links)), nav=scope_nav(scope))


def _ids(scope: Scope, ids: tuple[str, ...], link: object) -> object:
    return join([join(link(scope, i), " ") for i in ids]) if ids else "none"  # type: ignore[operator]


async def correct(request: Request) -> HTMLResponse:
    """memory_correct from the memory page's form; shows the tool's result fields."""
    form = await read_form(request, ("persona", "project", "memory_id", "content", "reason"), ("valid_at",))
    scope = scope_of(form)
    engine = request.app.state.engine
    result = await run_in_threadpool(
        engine.correct, scope, form["memory_id"], form["content"], form["reason"], form.get("valid_at") or None
    )
    return _done(
        f"Corrected {form['memory_id']}",
        scope,
        [
            ("replacement_id", memory_link(scope, result.replacement_id)),
            ("revoked_ids", _ids(scope, result.revoked_ids, memory_link)),
            ("correction_event_id", event_link(scope, result.correction_event_id)),
            ("invalidated_checkpoints", result.invalidated_checkpoints),
        ],
        memory_link(scope, result.replacement_id, "Open the new version"),
    )


def _event_rows(db: Connection, scope: Scope, event_ids: tuple[str, ...]) -> list[list[object]]:
    rows = []
    for event_id in event_ids:
        row = db.one(
            "SELECT kind, role, source, substr(text, 1, 301) AS start, length(text) AS chars FROM events"
            " WHERE event_id = ? AND persona_id = ? AND project_id = ?",
            (event_id, scope.persona_id, scope.project_id),
        )
        if row is not None:
            rows.append(
                [
                    event_link(scope, event_id),
                    row["kind"],
                    f"{row['role']} via {row['source']}",
                    f"{row['chars']:,}",
                    clip(row["start"]),
                ]
            )
    return rows


def _memory_rows(db: Connection, scope: Scope, memory_ids: tuple[str, ...]) -> list[list[object]]:
    rows = []
    for memory_id in memory_ids:
        row = db.one("SELECT content, kind, basis FROM memories WHERE memory_id = ?", (memory_id,))
        if row is not None:
            rows.append([memory_link(scope, memory_id), row["kind"], row["basis"], clip(row["content"])])
    return rows


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _confirm(request: Request, scope: Scope, plan: Preview, wider: Preview | None) -> object:
    """The form that forgets exactly what ``plan`` shows; with ``wider`` (the plan with ``also``) a second
    button forgets the records that still say it too, exactly what ``wider`` shows."""
    label = f"Forget {_count(len(plan.event_ids), 'event')} and {_count(len(plan.memory_ids), 'memory', 'memories')}"
    second = ""
    if wider is not None:
        second = join(
            el("input", type="hidden", name="also_events", value="\n".join(wider.event_ids)),
            el("input", type="hidden", name="also_memories", value="\n".join(wider.memory_ids)),
            el(
                "button",
                f"Forget {_count(len(wider.event_ids), 'event')} and"
                f" {_count(len(wider.memory_ids), 'memory', 'memories')}: with what still says it",
                type="submit",
                name="also",
                value="1",
                id="confirm-forget-also",
                class_="danger",
            ),
        )
    return el(
        "form",
        el("input", type="hidden", name="csrf", value=csrf_of(request)),
        el("input", type="hidden", name="persona", value=scope.persona_id),
        el("input", type="hidden", name="project", value=scope.project_id),
        el("input", type="hidden", name="id", value=plan.record_id),
        el("input", type="hidden", name="events", value="\n".join(plan.event_ids)),
        el("input", type="hidden", name="memories", value="\n".join(plan.memory_ids)),
        el("button", label, type="submit", id="confirm-forget", class_="danger"),
        second,
        method="post",
        action="/forget",
        class_="change",
    )


def _still_said(db: Connection, scope: Scope, plan: Preview) -> object:
    """The records that state the forgotten text too (kept unless the second button is used)."""
    events = _event_rows(db, scope, tuple(i for i in plan.still_said_by if not i.startswith(MEMORY_PREFIX)))
    found = _memory_rows(db, scope, tuple(i for i in plan.still_said_by if i.startswith(MEMORY_PREFIX)))
    return join(
        el("h2", f"Still said by ({len(events) + len(found)}): other records that state it too"),
        el("p", "They stay unless you forget them too (the second button below).", class_="muted"),
        table(["event", "kind", "from", "characters", "text"], events, id="still-said-events") if events else "",
        table(["memory", "kind", "basis", "content"], found, id="still-said-memories") if found else "",
    )


def forget_preview(request: Request) -> HTMLResponse:
    """Exactly what forgetting a record deletes and which checkpoints it invalidates, with a confirm button;
    the records that still say it, with a second button that forgets them too."""
    scope = scope_of(request.query_params)
    record_id = required(request, "id")
    engine = request.app.state.engine
    db = engine.db
    with db.read():
        plan = engine.forget_preview(scope, record_id)
        wider = engine.forget_preview(scope, record_id, also=True) if plan.still_said_by else None
        event_rows = _event_rows(db, scope, plan.event_ids)
        memory_rows = _memory_rows(db, scope, plan.memory_ids)
        still = _still_said(db, scope, plan) if plan.still_said_by else ""
    stays = [[memory_link(scope, m), event_link(scope, e)] for m, e in plan.requoted]
    body = join(
        el(
            "p",
            "Forgetting deletes, with no readable trace left in the archive file"
            " (earlier copies and backups are not affected):",
        ),
        el("h2", f"Events ({len(event_rows)}): the source event and every connected correction"),
        table(["event", "kind", "from", "characters", "text"], event_rows, id="forget-events"),
        el("h2", f"Memories ({len(memory_rows)}) made from them"),
        table(["memory", "kind", "basis", "content"], memory_rows, id="forget-memories")
        if memory_rows
        else el("p", "None.", class_="muted"),
        join(
            el("h2", f"Memories that stay ({len(stays)}): another event states them too, and they are quoted from it"),
            table(["memory", "now quoted from"], stays, id="forget-requoted"),
        )
        if stays
        else "",
        el(
            "h2",
            f"Checkpoints invalidated ({len(plan.checkpoint_ids)}):"
            " every valid one of this scope, its saved state erased",
        ),
        el("p", ", ".join(plan.checkpoint_ids) or "none"),
        still,
        _confirm(request, scope, plan, wider),
        el("p", el("a", "Cancel", href=url("/scope", **scope_params(scope)))),
    )
    return html(f"Forget {record_id}?", body, nav=scope_nav(scope))


async def forget_record(request: Request) -> HTMLResponse:
    """memory_forget after its preview: deletes only what the preview showed; shows the tool's result fields."""
    optional = ("events", "memories", "also", "also_events", "also_memories")
    form = await read_form(request, ("persona", "project", "id"), optional)
    scope = scope_of(form)
    also = bool(form.get("also"))
    events, memory_ids = (
        (form.get("also_events"), form.get("also_memories")) if also else (form.get("events"), form.get("memories"))
    )
    if not events:
        raise InvalidArgument("the form lacks the previewed events: open the forget preview and confirm there")
    expected = Preview(
        record_id=form["id"],
        event_ids=tuple(events.split("\n")),
        memory_ids=tuple(i for i in (memory_ids or "").split("\n") if i),
        checkpoint_ids=(),
    )
    engine = request.app.state.engine
    result = await run_in_threadpool(lambda: engine.forget(scope, form["id"], expected, also=also))
    warnings = result.warnings
    return _done(
        f"Forgot {form['id']}",
        scope,
        [
            ("deleted_event_ids", ", ".join(result.deleted_event_ids)),
            ("deleted_memory_ids", ", ".join(result.deleted_memory_ids) or "none"),
            ("invalidated_checkpoints", result.invalidated_checkpoints),
            ("still_said_by", _ids(scope, result.still_said_by, _record_link)),
            ("warnings", "; ".join(warnings) or "none"),
        ],
        el("a", "Back to the timeline", href=url("/scope", **scope_params(scope))),
    )


def _record_link(scope: Scope, record_id: str) -> object:
    return memory_link(scope, record_id) if record_id.startswith(MEMORY_PREFIX) else event_link(scope, record_id)


async def set_persona(request: Request) -> HTMLResponse:
    """The core persona edit (personas.set_text, as `memlikehuman persona set`): a new version when it changed."""
    form = await read_form(request, ("persona", "text"), ("project",))
    scope = scope_of(form)
    persona_id = scope.persona_id
    version, changed = await run_in_threadpool(request.app.state.engine.set_persona, persona_id, form["text"])
    return _done(
        f"Core persona of {persona_id}: " + ("saved" if changed else "unchanged"),
        scope,
        [("version", version.version), ("set", version.created_at), ("text", el("pre", version.text))],
        el("a", "Back to the core persona", href=url("/persona", **scope_params(scope))),
    )


__all__ = ["Safe", "correct", "forget_preview", "forget_record", "read_form", "set_persona"]
