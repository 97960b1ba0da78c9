"""Markup where escaping is the default: every ``str`` is text, only ``Safe`` is markup.

Nothing from the archive can become HTML by accident: ``el`` escapes each child and attribute
value unless it is a ``Safe`` built by ``el`` itself (or one of the literal constants here).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from urllib.parse import urlencode

VOID = frozenset({"br", "hr", "input", "link", "meta", "img"})


class Safe(str):
    """A string that is already markup: ``el`` inserts it as is."""

    __slots__ = ()


def esc(value: object) -> str:
    """Escape a value as text (quotes too, so it is safe inside attributes)."""
    return html.escape(str(value), quote=True)


def _children(children: Iterable[object]) -> Iterable[str]:
    for child in children:
        if child is None or child is False:
            continue
        if isinstance(child, Safe):
            yield child
        elif isinstance(child, str | int | float):
            yield esc(child)
        else:
            yield from _children(child)  # type: ignore[arg-type]


def _attrs(attrs: Mapping[str, object]) -> str:
    parts = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        key = name.rstrip("_").replace("_", "-")
        parts.append(f" {key}" if value is True else f' {key}="{esc(value)}"')
    return "".join(parts)


def el(tag: str, *children: object, **attrs: object) -> Safe:
    """An element: ``el("a", "text", href=url, class_="x")``; children are escaped unless Safe."""
    opening = f"<{tag}{_attrs(attrs)}>"
    if tag in VOID:
        return Safe(opening)
    return Safe(opening + "".join(_children(children)) + f"</{tag}>")


def join(*children: object) -> Safe:
    """Several children as one piece of markup (escaped like ``el``'s children)."""
    return Safe("".join(_children(children)))


def url(path: str, **params: object) -> str:
    """A same-origin link with query parameters (None values are left out)."""
    query = urlencode({k: str(v) for k, v in params.items() if v is not None and v is not False})
    return f"{path}?{query}" if query else path


def page(title: str, body: object, *, nav: object = None) -> str:
    """A whole HTML document; the only stylesheet is our own, no script at all."""
    return "<!doctype html>" + el(
        "html",
        el(
            "head",
            el("meta", charset="utf-8"),
            el("meta", name="viewport", content="width=device-width, initial-scale=1"),
            el("title", f"{title} - MemLikeHuman"),
            el("link", rel="stylesheet", href="/static/ui.css"),
        ),
        el(
            "body",
            el("header", el("a", "MemLikeHuman", href="/", class_="brand"), nav),
            el("main", el("h1", title), body),
        ),
        lang="en",
    )


def table(headers: Iterable[str], rows: Iterable[Iterable[object]], **attrs: object) -> Safe:
    """A table; each cell is escaped unless it is Safe markup."""
    head = el("thead", el("tr", [el("th", h) for h in headers]))
    body = el("tbody", [el("tr", [el("td", cell) for cell in row]) for row in rows])
    return el("table", head, body, **attrs)


def clip(text: str, limit: int = 300) -> str:
    """The start of a text with whitespace runs collapsed, ending in '…' when cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
