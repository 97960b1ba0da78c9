"""Helpers for the UI tests: what `memlikehuman ui` serves on 127.0.0.1, and plain HTTP to it.

`running_ui` serves the UI from a thread of the test process (the engine, app and uvicorn server the
process would run); `spawned_ui` starts the `memlikehuman ui` process, for tests about the process
itself (its sockets, its first line of stdout, its options). The archive is a SQLite file or a
PostgreSQL URL: function-scoped tests take conftest's `db_path` (both backends); the modules that
share one populated archive take ``module_archive``.
"""

from __future__ import annotations

import http.client
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from conftest import BASE_ENV
from pg_support import BACKENDS, fresh_database, selected_backends

from memlikehuman import config
from memlikehuman.archive.db import is_url, open_database
from memlikehuman.engine import Engine

URL_RE = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_\-]+)")


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    text: str

    def header(self, name: str) -> str:
        return self.headers.get(name, "")


@dataclass
class UI:
    """A running UI (its process; None in the test process) and an HTTP client that holds its cookie once
    ``login`` was called."""

    process: subprocess.Popen[str] | None
    url: str
    port: int
    token: str
    cookie: str | None = None
    csrf: str | None = field(default=None)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(
        self, method: str, path: str, *, headers: dict[str, str] | None = None, body: bytes | None = None
    ) -> Reply:
        """One request with exactly these headers (Host defaults to 127.0.0.1:PORT; the cookie if logged in)."""
        sent = {"Host": f"127.0.0.1:{self.port}"}
        if self.cookie:
            sent["Cookie"] = self.cookie
        sent.update(headers or {})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers={k: v for k, v in sent.items() if v is not None})
            response = conn.getresponse()
            return Reply(response.status, response.headers, response.read().decode("utf-8"))
        finally:
            conn.close()

    def login(self) -> Reply:
        """Open the printed URL and keep the cookie it sets, like a browser."""
        reply = self.request("GET", urlsplit(self.url).path + "?" + urlsplit(self.url).query)
        assert reply.status == 303, reply.text
        self.cookie = reply.header("set-cookie").split(";")[0]
        return reply

    def get(self, path: str, **params: object) -> Reply:
        query = urlencode({k: str(v) for k, v in params.items()})
        return self.request("GET", path + (f"?{query}" if query else ""))

    def csrf_token(self) -> str:
        """The CSRF token, read from a form of the UI."""
        if self.csrf is None:
            match = re.search(r'name="csrf" value="([^"]+)"', self.get("/persona", persona="default").text)
            assert match, "no CSRF field in the persona form"
            self.csrf = match.group(1)
        return self.csrf

    def post(self, path: str, fields: dict[str, str], *, csrf: bool = True, origin: str | None = "") -> Reply:
        """A form POST from this UI's origin (``origin=None`` sends none) with its CSRF token."""
        data = {**({"csrf": self.csrf_token()} if csrf else {}), **fields}
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if origin is not None:
            headers["Origin"] = origin or self.origin
        return self.request("POST", path, headers=headers, body=urlencode(data).encode())


@pytest.fixture(scope="module", params=BACKENDS)
def module_archive(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path | str]:
    """One new archive per module and backend (not created yet): a SQLite file's Path or a database URL."""
    name = str(request.param)
    if name not in selected_backends(request.config):
        pytest.skip(f"backend {name} not selected (--backends)")
    if name == "sqlite":
        yield tmp_path_factory.mktemp("ui") / "memory.sqlite3"
        return
    with fresh_database(request.getfixturevalue("pg_server")) as url:
        yield url


def open_transactions(db: Path | str) -> int:
    """PostgreSQL: the other sessions of the archive's database that sit inside a transaction."""
    assert is_url(db)
    opened = open_database(db)
    try:
        return int(
            opened.scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'"
            )
        )
    finally:
        opened.close()


@contextmanager
def running_ui(db: Path | str, **env: str) -> Iterator[UI]:
    """What `memlikehuman ui --db DB --no-browser` serves, from a thread of this process, stopped afterwards:
    the settings the process would read from its environment, its engine, its app, and its uvicorn server
    (ui/serve.py `make_server`)."""
    from memlikehuman.ui.app import build_app
    from memlikehuman.ui.security import Secrets
    from memlikehuman.ui.serve import bind, make_server

    settings = config.load(db if is_url(db) else Path(db), env={**os.environ, **BASE_ENV, **env})
    assert settings.archive_exists(), "the UI does not create an archive"
    sock = bind(0)
    try:
        with Engine(settings) as engine:
            keys = Secrets(port=int(sock.getsockname()[1]))
            app = build_app(engine, keys)
            server = make_server(app)
            thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="ui", daemon=True)
            thread.start()
            try:
                deadline = time.monotonic() + 30
                while not server.started:
                    assert thread.is_alive() and time.monotonic() < deadline, "the UI never started serving"
                    time.sleep(0.005)
                yield UI(None, keys.url, keys.port, keys.token)
            finally:
                server.should_exit = True
                thread.join(30)
    finally:
        sock.close()


@contextmanager
def spawned_ui(db: Path | str, *args: str, **env: str) -> Iterator[UI]:
    """`python -m memlikehuman ui --db DB --no-browser ARGS` as a real process; stopped afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-m", "memlikehuman", "ui", "--db", str(db), "--no-browser", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **BASE_ENV, **env},
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        match = URL_RE.fullmatch(first)
        if match is None:
            process.kill()
            raise AssertionError(f"first stdout line is not the URL: {first!r}; stderr: {process.communicate()[1]}")
        yield UI(process, first, int(match.group(1)), match.group(2))
    finally:
        process.terminate()
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def snapshot(db_path: Path | str) -> dict[str, object]:
    """Everything a change could touch, for asserting that a refused request changed nothing."""
    db = open_database(db_path)
    try:
        return {
            table: db.query(f"SELECT * FROM {table} ORDER BY 1, 2")
            for table in ("events", "memories", "corrections", "checkpoints", "persona_versions", "cues")
        }
    finally:
        db.close()
