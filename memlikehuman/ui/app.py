"""The Starlette application of the UI: routes, error pages, the stylesheet, behind the Guard."""

from __future__ import annotations

import logging
from importlib import resources

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from ..engine import Engine
from ..errors import InvalidArgument, MemLikeHumanError
from . import browse, changes, records, sessions
from .common import error_page
from .security import ASGIApp, Guard, Secrets

log = logging.getLogger("memlikehuman")
STYLESHEET = resources.files(__package__).joinpath("static/ui.css").read_bytes()


def stylesheet(request: Request) -> Response:
    return Response(STYLESHEET, media_type="text/css")


async def _coded(request: Request, exc: Exception) -> HTMLResponse:
    assert isinstance(exc, MemLikeHumanError)
    return error_page(exc)


async def _http(request: Request, exc: Exception) -> HTMLResponse:
    assert isinstance(exc, HTTPException)
    what = "no such page" if exc.status_code == 404 else exc.detail
    page = error_page(InvalidArgument(f"{what}: start from the scopes page"))
    page.status_code = exc.status_code
    return page


async def _unexpected(request: Request, exc: Exception) -> HTMLResponse:
    log.exception("ui: %s %s failed", request.method, request.url.path, exc_info=exc)
    return error_page(MemLikeHumanError("an unexpected error; the details are on the UI's standard error"))


def build_app(engine: Engine, keys: Secrets) -> ASGIApp:
    """The UI over an open engine, accepting only requests that carry ``keys``."""
    routes = [
        Route("/", browse.home, methods=["GET"]),
        Route("/scope", browse.timeline, methods=["GET"]),
        Route("/search", browse.search, methods=["GET"]),
        Route("/event", records.event, methods=["GET"]),
        Route("/memory", records.memory, methods=["GET"]),
        Route("/checkpoints", sessions.checkpoints_page, methods=["GET"]),
        Route("/persona", sessions.persona_page, methods=["GET"]),
        Route("/persona", changes.set_persona, methods=["POST"]),
        Route("/correct", changes.correct, methods=["POST"]),
        Route("/forget", changes.forget_preview, methods=["GET"]),
        Route("/forget", changes.forget_record, methods=["POST"]),
        Route("/static/ui.css", stylesheet, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={MemLikeHumanError: _coded, HTTPException: _http, Exception: _unexpected},
    )
    app.state.engine = engine
    app.state.keys = keys
    return Guard(app, keys)
