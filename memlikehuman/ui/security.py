"""The UI's guard, an ASGI middleware in front of every route.

A request is served only when all of these hold (else a short plain-text refusal):
1. its ``Host`` header is ``127.0.0.1:PORT`` or ``localhost:PORT`` (a DNS-rebinding page has another);
2. on Linux, the client's socket belongs to the user who started the UI (``peer.py``);
3. it carries this run's random token in the ``token`` query parameter of a GET (the URL that
   ``memlikehuman ui`` prints), which mints a session and redirects to the same page without the token,
   or a session's cookie. The cookie holds a random session ID, never the token: browsers send the
   cookies of 127.0.0.1 to every port there, so the cookie must open nothing but this run's UI. Its
   name carries the port (two UIs keep theirs apart); the server keeps the SHA-256 of the IDs it minted,
   in memory only, so none outlives the run;
4. a change (POST) comes from our own origin (``Origin``, and ``Sec-Fetch-Site`` when sent); its
   form's CSRF token is checked by ``changes.read_form``.
Every response carries a strict Content-Security-Policy (no script at all, our stylesheet only,
forms post only to us, no framing), nosniff, no-store and a same-origin referrer policy.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.responses import PlainTextResponse, RedirectResponse, Response

from . import peer

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
METHODS = frozenset({"GET", "HEAD", "POST"})
MAX_SESSIONS = 64  # the newest sessions stay open: one per opening of the URL, so a handful in practice


@dataclass(frozen=True)
class Secrets:
    """What one run of the UI knows: its port, the access token and the CSRF token."""

    port: int
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    @property
    def cookie(self) -> str:
        # Cookies ignore ports: one name per port keeps two UIs on this machine apart.
        return f"mlh_ui_{self.port}"

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{host}" for host in self.hosts)

    @property
    def address(self) -> str:
        """The UI's address without the token (what may be shown where others could read it)."""
        return f"http://127.0.0.1:{self.port}/"

    @property
    def url(self) -> str:
        return f"{self.address}?{urlencode({'token': self.token})}"


def same(given: str | None, expected: str) -> bool:
    """Constant-time comparison of a secret (None never matches)."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _cookies(header: str) -> dict[str, str]:
    jar = {}
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep:
            jar[name] = value
    return jar


class Sessions:
    """The session IDs this run minted, kept as their SHA-256 in memory (the newest MAX_SESSIONS)."""

    def __init__(self) -> None:
        self._digests: OrderedDict[bytes, None] = OrderedDict()

    def mint(self) -> str:
        """A new random session ID, accepted from now on."""
        session = secrets.token_urlsafe(32)
        self._digests[_digest(session)] = None
        while len(self._digests) > MAX_SESSIONS:
            self._digests.popitem(last=False)
        return session

    def valid(self, session: str | None) -> bool:
        """Whether this run minted the session ID (a lookup by digest: its timing tells nothing of an ID)."""
        return session is not None and _digest(session) in self._digests


def _digest(session: str) -> bytes:
    return hashlib.sha256(session.encode()).digest()


def refuse(status: int, message: str) -> Response:
    return PlainTextResponse(message + "\n", status_code=status)


class Guard:
    """ASGI middleware: the checks of the module docstring, then the app with security headers added."""

    def __init__(self, app: ASGIApp, keys: Secrets) -> None:
        self.app = app
        self.keys = keys
        self.sessions = Sessions()
        self.uid = os.geteuid()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        verdict = self.check(scope)

        async def send_with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                elapsed = (time.perf_counter() - started) * 1000
                message["headers"] = [
                    *message.get("headers", []),
                    *HEADERS,
                    (b"server-timing", f"app;dur={elapsed:.2f}".encode()),
                ]
            await send(message)

        if verdict is not None:
            await verdict(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def check(self, scope: Scope) -> Response | None:
        """A refusal (or the token-to-cookie redirect) for this request, or None to serve it."""
        headers = _headers(scope)
        if headers.get("host") not in self.keys.hosts:
            return refuse(
                403,
                "forbidden: this UI answers only to Host 127.0.0.1:PORT or localhost:PORT;"
                " open the URL that `memlikehuman ui` printed",
            )
        if peer.foreign(scope.get("client"), scope.get("server"), self.uid):
            return refuse(403, "forbidden: this UI serves only the user who started it, on this machine")
        method = scope["method"]
        if method not in METHODS:
            return refuse(405, "invalid_argument: only GET and POST are served here")
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = dict(query).get("token")
        if method == "GET" and given is not None and same(given, self.keys.token):
            return self._to_cookie(scope, query)
        if not self.sessions.valid(_cookies(headers.get("cookie", "")).get(self.keys.cookie)):
            return refuse(
                401,
                "unauthorized: this page needs the token of this run of `memlikehuman ui`;"
                " open the URL it printed (http://127.0.0.1:PORT/?token=...)",
            )
        if method == "POST":
            return self._check_origin(headers)
        return None

    def _to_cookie(self, scope: Scope, query: list[tuple[str, str]]) -> Response:
        rest = urlencode([(k, v) for k, v in query if k != "token"])
        path = scope["path"]
        # "//host" or "/\\host" in a Location header would send the browser to another site.
        if not path.startswith("/") or path.startswith(("//", "/\\")):
            path = "/"
        response = RedirectResponse(path + (f"?{rest}" if rest else ""), status_code=303)
        # Not `__Host-`: that prefix needs Secure, which plain http cannot carry, and binds a host, not a port.
        response.set_cookie(self.keys.cookie, self.sessions.mint(), httponly=True, samesite="strict", path="/")
        return response

    def _check_origin(self, headers: dict[str, str]) -> Response | None:
        origin = headers.get("origin")
        site = headers.get("sec-fetch-site")
        if origin not in self.keys.origins or (site is not None and site != "same-origin"):
            return refuse(
                403,
                "forbidden: a change must come from a form of this UI (the Origin header was"
                f" {origin or 'missing'}): reload the page and submit it again",
            )
        return None
