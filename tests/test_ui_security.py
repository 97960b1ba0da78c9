"""The UI's guard over plain HTTP against a real `memlikehuman ui` process on 127.0.0.1."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import psutil
import pytest
from conftest import add_memory, make_settings
from ui_support import UI, running_ui, snapshot, spawned_ui

from memlikehuman.archive import personas
from memlikehuman.engine import Engine
from memlikehuman.records import Scope

SCOPE = Scope("alice", "garden")
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> & "quotes" \'too\''


@pytest.fixture
def archive(db_path: Path) -> Path:
    with Engine(make_settings(db_path)) as engine:
        engine.record(SCOPE, "hostile", f"Look: {HOSTILE} end", "user", "chat<script>", session_id="s<b>1</b>")
        personas.set_text(engine.db, "alice", f"Persona {HOSTILE}")
    add_memory(db_path, "hostile", f"Memory {HOSTILE}", quote=HOSTILE, scope=SCOPE)
    return db_path


@pytest.fixture
def ui(archive: Path) -> Iterator[UI]:
    with running_ui(archive) as running:
        yield running


@pytest.fixture
def ui_process(archive: Path) -> Iterator[UI]:
    """A `memlikehuman ui` process: for a test that looks at the process itself."""
    with spawned_ui(archive) as running:
        yield running


def test_every_page_without_the_token_is_refused_with_401(ui: UI) -> None:
    for path in (
        "/",
        "/scope?persona=alice&project=garden",
        "/static/ui.css",
        "/event?persona=alice&project=garden&id=hostile",
    ):
        reply = ui.request("GET", path)
        assert reply.status == 401, path
        assert "hostile" not in reply.text and "Look" not in reply.text
    assert ui.request("POST", "/persona", body=b"persona=alice&text=x").status == 401


def test_a_wrong_token_in_the_url_or_the_cookie_is_refused(ui: UI) -> None:
    assert ui.request("GET", "/?token=" + "A" * len(ui.token)).status == 401
    assert ui.request("GET", "/", headers={"Cookie": f"mlh_ui_{ui.port}={'A' * len(ui.token)}"}).status == 401
    # The right token under another port's cookie name does not count either.
    assert ui.request("GET", "/", headers={"Cookie": f"mlh_ui_1={ui.token}"}).status == 401
    # Nor the token itself as the cookie: the cookie holds a session, never the token.
    assert ui.request("GET", "/", headers={"Cookie": f"mlh_ui_{ui.port}={ui.token}"}).status == 401


def test_the_token_in_the_url_opens_a_session_whose_httponly_strict_cookie_never_holds_the_token(ui: UI) -> None:
    reply = ui.login()
    cookie = reply.header("set-cookie")
    name, _, value = cookie.split(";")[0].partition("=")
    assert name == f"mlh_ui_{ui.port}" and len(value) >= 40
    assert ui.token not in cookie and value not in ui.token
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert reply.header("location") == "/"  # the token leaves the address bar and the history
    home = ui.get("/")
    assert home.status == 200 and "alice" in home.text
    # Each opening of the URL mints its own session; the first stays open.
    first = ui.cookie
    ui.login()
    assert ui.cookie != first
    assert ui.request("GET", "/", headers={"Cookie": first}).status == 200


def test_a_session_cookie_opens_only_the_run_that_minted_it(archive: Path) -> None:
    # What a browser holds for one UI is sent to every port of 127.0.0.1: to another UI it is worthless.
    with spawned_ui(archive) as first, spawned_ui(archive) as second:
        first.login()
        assert first.cookie is not None
        session = first.cookie.partition("=")[2]
        assert second.request("GET", "/", headers={"Cookie": first.cookie}).status == 401
        assert second.request("GET", "/", headers={"Cookie": f"mlh_ui_{second.port}={session}"}).status == 401
        assert second.request("GET", f"/?token={session}").status == 401
        assert first.request("GET", "/").status == 200


def test_the_token_redirect_never_leaves_this_site(ui: UI) -> None:
    for path in ("//evil.example/x", "/\\evil.example/x"):
        reply = ui.request("GET", f"{path}?token={ui.token}")
        assert reply.status == 303 and reply.header("location") == "/"
    kept = ui.request("GET", f"/event?id=e1&token={ui.token}&persona=alice")
    assert kept.header("location") == "/event?id=e1&persona=alice"


def test_a_foreign_host_header_is_refused_even_with_the_token(ui: UI) -> None:
    ui.login()
    for host in ("evil.example", f"evil.example:{ui.port}", f"127.0.0.1:{ui.port + 1}", f"0.0.0.0:{ui.port}", ""):
        reply = ui.request("GET", "/", headers={"Host": host})
        assert reply.status in (400, 403), host
        assert "alice" not in reply.text
    assert ui.request("GET", f"/?token={ui.token}", headers={"Host": "rebound.example"}).status == 403
    assert ui.request("GET", "/", headers={"Host": f"localhost:{ui.port}"}).status == 200


def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(ui: UI, archive: Path) -> None:
    ui.login()
    before = snapshot(archive)
    reply = ui.post("/persona", {"persona": "alice", "text": "changed"}, csrf=False)
    assert reply.status == 403 and "forbidden: the form lacks this run's CSRF token" in unescape(reply.text)
    wrong = ui.post("/persona", {"persona": "alice", "text": "changed", "csrf": "guess"}, csrf=False)
    assert wrong.status == 403
    assert snapshot(archive) == before


def test_a_post_from_another_origin_or_without_one_is_refused_and_changes_nothing(ui: UI, archive: Path) -> None:
    ui.login()
    before = snapshot(archive)
    fields = {"persona": "alice", "text": "changed"}
    for origin in ("http://evil.example", f"http://evil.example:{ui.port}", "null", f"https://127.0.0.1:{ui.port}"):
        reply = ui.post("/persona", fields, origin=origin)
        assert reply.status == 403 and "forbidden: a change must come from a form of this UI" in reply.text
    assert ui.post("/persona", fields, origin=None).status == 403
    cross_site = ui.request(
        "POST",
        "/persona",
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Origin": ui.origin,
            "Sec-Fetch-Site": "cross-site",
        },
        body=f"csrf={ui.csrf_token()}&persona=alice&text=changed".encode(),
    )
    assert cross_site.status == 403
    assert snapshot(archive) == before
    # The same form from our own origin goes through: the refusals above were about the origin.
    assert ui.post("/persona", fields).status == 200
    assert snapshot(archive) != before


def test_archive_text_with_script_renders_inert_on_every_page(ui: UI) -> None:
    ui.login()
    memory_id = next(
        line
        for line in ui.get("/event", persona="alice", project="garden", id="hostile").text.split('"')
        if line.startswith("mem_")
    )
    pages = [
        ui.get("/"),
        ui.get("/scope", persona="alice", project="garden"),
        ui.get("/event", persona="alice", project="garden", id="hostile"),
        ui.get("/memory", persona="alice", project="garden", id=memory_id),
        ui.get("/search", persona="alice", project="garden", q="alert script"),
        ui.get("/persona", persona="alice"),
        ui.get("/forget", persona="alice", project="garden", id="hostile"),
        ui.get("/checkpoints", persona="alice", project="garden", preview="1"),
        ui.get("/event", persona="alice", project="garden", id='<script>alert("id")</script>'),
    ]
    for reply in pages:
        assert "<script" not in reply.text.lower()
        assert "<img" not in reply.text.lower()
        assert "onerror=alert" not in reply.text or "&lt;img src=x onerror=alert(1)&gt;" in reply.text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in pages[2].text


def test_every_response_carries_a_strict_content_security_policy(ui: UI) -> None:
    for reply in (ui.request("GET", "/"), ui.login(), ui.get("/"), ui.get("/static/ui.css"), ui.get("/nope")):
        csp = reply.header("content-security-policy")
        assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp and "form-action 'self'" in csp
        assert "unsafe" not in csp and "script-src" not in csp  # no script may run at all
        assert reply.header("x-frame-options") == "DENY"
        assert reply.header("x-content-type-options") == "nosniff"
        assert reply.header("cache-control") == "no-store"


def _outside_address() -> str | None:
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not address.address.startswith("127."):
                return str(address.address)
    return None


def test_the_process_listens_on_127_0_0_1_only(ui_process: UI) -> None:
    ui = ui_process  # its sockets are what is looked at
    assert ui.process is not None
    listening = [c for c in psutil.Process(ui.process.pid).net_connections("inet") if c.status == psutil.CONN_LISTEN]
    assert listening, "the UI process listens on no socket"
    assert {(c.laddr.ip, c.laddr.port) for c in listening} == {("127.0.0.1", ui.port)}
    outside = _outside_address()
    if outside is not None:
        with socket.socket() as sock, pytest.raises(OSError):
            sock.settimeout(5)
            sock.connect((outside, ui.port))


def test_each_run_prints_its_url_first_and_has_its_own_token(archive: Path) -> None:
    # Processes: what each prints first on its stdout is what is looked at.
    with spawned_ui(archive) as first, spawned_ui(archive) as second:
        assert first.url == f"http://127.0.0.1:{first.port}/?token={first.token}"
        assert first.token != second.token and len(first.token) >= 40
        # The first run's token opens nothing on the second.
        assert second.request("GET", f"/?token={first.token}").status == 401
