"""Record pages: an event with its memories' quotes marked in its text, a memory with its versions."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse

from .. import clock
from ..archive import memories
from ..archive.connection import Connection
from ..errors import InvalidArgument
from ..records import Event, Memory, Scope
from . import highlight
from .common import csrf_of, event_link, html, memory_link, number, param, required, scope_nav, scope_of, scope_params
from .html import Safe, el, join, table, url

PAGE_CHARS = 10_000
VERSIONS_SHOWN = 100


def _of_event(db: Connection, sequence: int) -> list[Memory]:
    rows = db.query(memories.MEMORY_SELECT + " WHERE m.event_sequence = ? ORDER BY m.id", (sequence,))
    return [memories.from_row(row) for row in rows]


def _facts(pairs: list[tuple[str, object]]) -> Safe:
    return el("dl", [join(el("dt", k), el("dd", v)) for k, v in pairs], class_="facts")


def _event_facts(scope: Scope, event: Event, corrected: str | None) -> Safe:
    cues = ", ".join(f"{c.kind}:{c.key}" + (f" ({c.label})" if c.label else "") for c in event.cues) or "none"
    return _facts(
        [
            ("event", event.event_id),
            ("scope", f"{event.persona_id} / {event.project_id}"),
            ("session", el("a", event.session_id, href=url("/scope", **scope_params(scope), session=event.session_id))),
            ("from", f"{event.role} via {event.source} ({event.category})"),
            ("occurred", event.occurred_at),
            ("recorded", event.recorded_at),
            ("extraction", event.extraction_state + (f": {event.extraction_error}" if event.extraction_error else "")),
            ("cues", cues),
            *([("corrects", memory_link(scope, corrected))] if corrected else []),
        ]
    )


def event(request: Request) -> HTMLResponse:
    """The original text (paged), its derived memories, and each memory's quote marked in the text."""
    scope = scope_of(request.query_params)
    event_id = required(request, "id")
    offset = number(param(request, "offset"), "offset", 0, 0, 10**9)
    engine = request.app.state.engine
    db = engine.db
    with db.read():
        read = engine.read(scope, event_id, offset=offset, max_chars=PAGE_CHARS)
        found = _of_event(db, read.event.sequence)
        corrected = db.scalar(
            "SELECT m.memory_id FROM corrections c JOIN memories m ON m.id = c.original_id WHERE c.event_sequence = ?",
            (read.event.sequence,),
        )
    ev, pg = read.event, read.page
    spans = {m.memory_id: highlight.find(ev.text, m.quote, m.memory_id) for m in found}
    page_of = {mid: (s.start // PAGE_CHARS) * PAGE_CHARS for mid, s in spans.items() if s}
    rows = [
        [
            memory_link(scope, m.memory_id, m.content),
            el("span", m.basis, class_=f"badge basis-{m.basis}"),
            m.kind,
            _status(m),
            el(
                "a",
                "quote in text",
                href=url("/event", **scope_params(scope), id=ev.event_id, offset=page_of[m.memory_id])
                + f"#q-{m.memory_id}",
            )
            if m.memory_id in page_of
            else el("span", "quote not found in the text", class_="warning"),
        ]
        for m in found
    ]
    pager = join(
        el(
            "a",
            "← previous part",
            href=url("/event", **scope_params(scope), id=ev.event_id, offset=max(0, pg.offset - PAGE_CHARS)),
        )
        if pg.offset
        else None,
        f" characters {pg.offset:,}–{pg.offset + len(pg.text):,} of {pg.total_chars:,} ",
        el("a", "next part →", href=url("/event", **scope_params(scope), id=ev.event_id, offset=pg.next_offset))
        if pg.next_offset is not None
        else None,
    )
    body = join(
        _event_facts(scope, ev, corrected),
        el("h2", "Original text"),
        el("p", pager, class_="pager") if pg.total_chars > PAGE_CHARS else None,
        el("div", highlight.marked(pg.text, pg.offset, [s for s in spans.values() if s]), class_="original", id="text"),
        el("h2", f"Memories derived from it ({len(found)})"),
        table(["memory", "basis", "kind", "status", ""], rows, id="derived")
        if rows
        else el("p", "None.", class_="muted"),
        el(
            "p",
            el(
                "a",
                "Forget this event…",
                href=url("/forget", **scope_params(scope), id=ev.event_id),
                class_="danger",
                id="forget",
            ),
        ),
    )
    return html(f"Event {ev.event_id}", body, nav=scope_nav(scope))


def versions(db: Connection, memory: Memory) -> list[Memory]:
    """The versions of the fact: the memories of its subject timeline and of its correction chain."""
    scope = (memory.persona_id, memory.project_id)
    found: dict[str, Memory] = {memory.memory_id: memory}
    if memory.subject is not None:
        rows = db.query(
            memories.MEMORY_SELECT
            + " WHERE m.persona_id = ? AND m.project_id = ? AND m.subject = ? ORDER BY m.id LIMIT ?",
            (*scope, memory.subject, VERSIONS_SHOWN),
        )
        found.update((row["memory_id"], memories.from_row(row)) for row in rows)
    frontier = [memory.rowid]
    while frontier and len(found) < VERSIONS_SHOWN:
        rowid = frontier.pop()
        rows = db.query(
            memories.MEMORY_SELECT
            + " WHERE m.replaced_by = ? OR m.id = (SELECT replaced_by FROM memories WHERE id = ?)",
            (rowid, rowid),
        )
        for row in rows:
            if row["memory_id"] not in found:
                found[row["memory_id"]] = memories.from_row(row)
                frontier.append(row["id"])
    return sorted(found.values(), key=lambda m: (m.valid_from, m.rowid))


def _correct_form(request: Request, scope: Scope, m: Memory) -> Safe:
    if m.revoked_at:
        return el("p", "This memory was corrected; correct its replacement instead.", class_="muted")
    return el(
        "form",
        el("input", type="hidden", name="csrf", value=csrf_of(request)),
        el("input", type="hidden", name="persona", value=scope.persona_id),
        el("input", type="hidden", name="project", value=scope.project_id),
        el("input", type="hidden", name="memory_id", value=m.memory_id),
        el("label", "Corrected statement", el("textarea", m.content, name="content", rows="3", id="content")),
        el("label", "Reason (as the person said)", el("input", type="text", name="reason", id="reason", size="60")),
        el(
            "label",
            "Valid from (optional, ISO 8601)",
            el("input", type="text", name="valid_at", placeholder=m.valid_from),
        ),
        el("button", "Correct", type="submit", id="correct"),
        method="post",
        action="/correct",
        class_="change",
    )


def _quote_link(scope: Scope, event: Event, m: Memory) -> Safe:
    span = highlight.find(event.text, m.quote, m.memory_id)
    if span is None:
        return el("span", "(not found in its event's text)", class_="warning")
    offset = (span.start // PAGE_CHARS) * PAGE_CHARS
    href = url("/event", **scope_params(scope), id=event.event_id, offset=offset) + f"#q-{m.memory_id}"
    return el("a", "show it in its event", href=href, id="quote-link")


def memory(request: Request) -> HTMLResponse:
    """A memory: validity window, basis, kind, its versions (superseded, corrected) and its source."""
    scope = scope_of(request.query_params)
    memory_id = required(request, "id")
    engine = request.app.state.engine
    with engine.db.read():
        read = engine.read(scope, memory_id, max_chars=1)
        m = read.memory
        if m is None:
            raise InvalidArgument(f"{memory_id!r} is an event ID, not a memory ID (mem_...): open it as an event")
        chain = versions(engine.db, m)
    facts = _facts(
        [
            ("memory", m.memory_id),
            ("status", _status(m)),
            ("content", m.content),
            ("quote", join(el("q", m.quote), " ", _quote_link(scope, read.event, m))),
            ("kind", m.kind),
            ("basis", el("span", m.basis, class_=f"badge basis-{m.basis}")),
            ("subject", m.subject or "none (not a single-valued fact)"),
            ("valid", f"from {m.valid_from} to {m.valid_to or 'now (open)'}"),
            ("recorded", m.recorded_at),
            *([("revoked", f"{m.revoked_at}: {m.revoke_reason}")] if m.revoked_at else []),
            *([("replaced by", memory_link(scope, m.replaced_by))] if m.replaced_by else []),
            *([("supersedes", memory_link(scope, m.supersedes))] if m.supersedes else []),
            *([("superseded by", memory_link(scope, m.superseded_by))] if m.superseded_by else []),
            ("source", event_link(scope, m.event_id, f"{m.event_id}: {m.role} via {m.source}, {m.occurred_at}")),
        ]
    )
    rows = [
        [
            "this" if v.memory_id == m.memory_id else memory_link(scope, v.memory_id, "open"),
            _status(v) + (f" → {v.replaced_by}" if v.replaced_by else ""),
            v.content,
            f"{v.valid_from[:19]} .. {(v.valid_to or 'now')[:19]}",
            event_link(scope, v.event_id),
        ]
        for v in chain
    ]
    body = join(
        facts,
        el("h2", f"Versions of this fact ({len(chain)})"),
        table(["", "status", "content", "valid", "source event"], rows, id="versions"),
        el("h2", "Correct it"),
        _correct_form(request, scope, m),
        el(
            "p",
            el(
                "a",
                "Forget it (with its whole source event)…",
                href=url("/forget", **scope_params(scope), id=m.memory_id),
                class_="danger",
            ),
        ),
    )
    return html(f"Memory {m.memory_id}", body, nav=scope_nav(scope))


def _status(memory: Memory) -> str:
    """Its status now: a version whose successor starts later is still current (as memory_read says)."""
    return memory.status(clock.now_stamp())
