"""Shared fixtures: real archives under tmp dirs, MCP clients in-process and over stdio."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters

from memlikehuman import config
from memlikehuman.archive import events, memories
from memlikehuman.archive.backend import backend_of
from memlikehuman.archive.db import is_url, open_database
from memlikehuman.engine import Engine
from memlikehuman.records import Candidate, Scope
from memlikehuman.server import build_server
from memlikehuman.server.app import MemoryMCPServer

# PostgreSQL fixtures (pg_server, pg_url, pg_role_url, backend, archive_target): see tests/pg_support.py.
pytest_plugins = ["pg_support"]

DEFAULT_SCOPE = Scope()
# Tests choose providers explicitly; nothing leaks in from the developer's environment.
BASE_ENV = {"MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run long variants")
    parser.addoption(
        "--backends",
        default="sqlite,postgres,pgvector",
        help="archive backends the `backend` fixture runs (comma-separated)",
    )
    parser.addoption(
        "--quick",
        action="store_true",
        default=False,
        help="the inner loop: SQLite only, without QUICK_LEAVES_OUT's suites or tests marked heavy or lifecycle",
    )


# What --quick leaves to the full suite: processes killed hundreds of times, a PostgreSQL cluster, a
# browser, the MCP Inspector and the real host CLIs on Node. The full suite (.ci/run) runs them all.
# --quick only leaves tests out: a test it keeps runs exactly as in the full suite.
QUICK_LEAVES_OUT = (
    "tests/reliability/test_crash.py",
    "tests/reliability/test_inspector.py",
    "tests/reliability/test_concurrency.py",
    "tests/test_ui_browser.py",
    "tests/hosts_real/",
    "tests/test_pg_",
    "tests/test_postgres.py",
    "tests/test_forget_postgres.py",
    "tests/test_pgvector.py",
)


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--quick") and config.getoption("--backends") == "sqlite,postgres,pgvector":
        config.option.backends = "sqlite"


def left_out_of_quick(item: pytest.Item) -> bool:
    path = Path(str(item.path)).relative_to(Path(__file__).parent.parent).as_posix()
    fixtures = getattr(item, "fixturenames", ())
    callspec = getattr(item, "callspec", None)
    return (
        path.startswith(QUICK_LEAVES_OUT)
        or "heavy" in item.keywords
        or "lifecycle" in item.keywords
        or (("pg_server" in fixtures or "pgvector_server" in fixtures) and "backend" not in fixtures)
        or (callspec is not None and callspec.params.get("backend") in ("postgres", "pgvector"))
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--quick"):
        left_out = [item for item in items if left_out_of_quick(item)]
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="long variant: pass --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def make_settings(db: Path | str, **env: str) -> config.Settings:
    return config.load(db, env={**BASE_ENV, **env})


@pytest.fixture
def db_path(archive_target: str) -> Any:
    """The archive of each backend in turn: the SQLite file's Path, or the PostgreSQL database's URL.

    Tests about the SQLite file itself (its bytes, its WAL, its pages) carry @pytest.mark.sqlite_only.
    """
    return archive_target if is_url(archive_target) else Path(archive_target)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The project directory a host runs its hooks in (tests/test_hook*.py)."""
    directory = tmp_path / "work" / "app"
    directory.mkdir(parents=True)
    return directory


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """The archive a hook is pointed at (not created until a hook writes)."""
    return tmp_path / "data" / "memory.sqlite3"


@pytest.fixture
def settings(db_path: Any) -> config.Settings:
    """Settings on a fresh archive of each backend in turn."""
    return make_settings(db_path)


@pytest.fixture
def engine(settings: config.Settings) -> Iterator[Engine]:
    with Engine(settings) as opened:
        yield opened


class SyncClient:
    """A blocking facade over mcp.Client, for plain (non-async) tests."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self.portal = portal
        self.client = client

    def call(self, name: str, **arguments: Any) -> Any:
        return self.portal.call(self.client.call_tool, name, arguments)

    def ok(self, name: str, **arguments: Any) -> dict[str, Any]:
        """Call a tool that must succeed; return its structured content."""
        result = self.call(name, **arguments)
        assert not result.is_error, result.content[0].text
        assert result.structured_content is not None
        return dict(result.structured_content)

    def error(self, name: str, **arguments: Any) -> str:
        """Call a tool that must fail; return the error text from its code on."""
        result = self.call(name, **arguments)
        assert result.is_error, f"expected an error, got {result.structured_content}"
        text = result.content[0].text
        return text.split(": ", 1)[1] if text.startswith("Error executing tool") else text

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)
        return lambda *args, **kwargs: self.portal.call(lambda: method(*args, **kwargs))


@contextmanager
def connected(target: MemoryMCPServer | StdioServerParameters) -> Iterator[SyncClient]:
    """A blocking MCP client connected to a server in this process (over the SDK's in-memory transport) or
    to StdioServerParameters' subprocess (over its stdio): tests about what a tool does use the first
    (`serving`), tests about the `serve` process itself the second (`stdio_params`)."""
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(target)) as client:
        yield SyncClient(portal, client)


def serving(db: Path | str, **env: str) -> MemoryMCPServer:
    """The server `memlikehuman serve --db DB` runs with `stdio_params(db, **env)`'s environment, built in
    this process: its settings read from that environment, its tools and lifespan."""
    return build_server(config.load(db if is_url(db) else Path(db), env={**os.environ, **BASE_ENV, **env}))


@pytest.fixture
def client(settings: config.Settings) -> Iterator[SyncClient]:
    """An in-process MCP client on a fresh archive."""
    with connected(build_server(settings)) as opened:
        yield opened


def stdio_params(db: Path | str, **env: str) -> StdioServerParameters:
    full_env = {**os.environ, **BASE_ENV, **env}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "memlikehuman", "serve", "--db", str(db)], env=full_env
    )


@pytest.fixture
def stdio_client(db_path: Any) -> Iterator[SyncClient]:
    """A real `memlikehuman serve` subprocess over stdio, on a fresh archive of each backend in turn: for
    tests about what a host sees of the process."""
    with connected(stdio_params(db_path)) as opened:
        yield opened


def add_memory(
    db_path: Path | str,
    event_id: str,
    content: str,
    *,
    quote: str | None = None,
    kind: str = "fact",
    subject: str | None = None,
    valid_from: str | None = None,
    scope: Scope = DEFAULT_SCOPE,
) -> str:
    """Store one derived memory of a recorded event, as extraction would (public core function)."""
    db = open_database(db_path)
    try:
        event = events.find(db, scope, event_id)
        item = Candidate(
            content=content,
            quote=quote or content,
            kind=kind,
            basis="stated",
            subject=subject,
            valid_from=valid_from or event.occurred_at,
        )
        rowids, _ = memories.store(db, event, [item], event.recorded_at)
        return str(db.scalar("SELECT memory_id FROM memories WHERE id = ?", (rowids[0],)))
    finally:
        db.close()


FULLTEXT_COLUMNS = {
    "events_fts": ("text", "attribution", "context"),
    "memories_fts": ("content", "attribution"),
    "events_ngrams": ("text", "attribution", "context"),
    "memories_ngrams": ("content", "attribution"),
}


def fts_rowids(db: Any, table: str, word: str, column: str | None = None) -> list[int]:
    """Rowids of a full-text table's rows holding the word (in one column), on either backend.

    ``db``: an open archive, or what opens one (a path or URL). SQLite asks FTS5 (MATCH); PostgreSQL
    reads the postings of the word's term (archive/postgres/pg_fulltext.py).
    """
    if isinstance(db, (str, Path)):
        opened = open_database(db)
        try:
            return fts_rowids(opened, table, word, column)
        finally:
            opened.close()
    if backend_of(db).name == "postgres":
        from memlikehuman.archive.postgres import pg_fulltext

        where = "" if column is None else f" AND col = {FULLTEXT_COLUMNS[table].index(column)}"
        terms = pg_fulltext.tokens(table, word, query=True)
        sql = f"SELECT DISTINCT rowid FROM {table}_terms WHERE term = ?{where} ORDER BY rowid"
        return [int(row["rowid"]) for row in db.query(sql, (terms[0],))]
    expression = f"{column}:{word}" if column else word
    return [int(row["rowid"]) for row in db.query(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (expression,))]
