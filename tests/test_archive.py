"""The archive file: pragmas, migrations, configuration, and the core/edge boundary."""

from __future__ import annotations

import ast
import multiprocessing
from pathlib import Path
from typing import Any

import apsw
import pytest

from memlikehuman import config
from memlikehuman.archive import db as archive_db
from memlikehuman.archive.db import open_database
from memlikehuman.archive.migrations import MIGRATIONS
from memlikehuman.archive.schema import migrate, schema_version
from memlikehuman.engine import Engine
from memlikehuman.errors import InvalidArgument

PACKAGE = Path(__file__).resolve().parent.parent / "memlikehuman"


def test_a_new_archive_is_created_with_its_parent_directories_in_wal_mode(tmp_path):
    path = tmp_path / "deep" / "er" / "memory.sqlite3"
    db = open_database(path)
    assert path.exists()
    assert db.scalar("PRAGMA journal_mode") == "wal"
    assert db.scalar("PRAGMA foreign_keys") == 1
    assert db.scalar("PRAGMA secure_delete") == 1
    db.close()


def test_migrations_apply_once_and_are_recorded_in_the_ledger(tmp_path):
    db = open_database(tmp_path / "m.sqlite3")
    assert schema_version(db) == 0
    assert migrate(db) == len(MIGRATIONS)
    assert migrate(db) == len(MIGRATIONS)
    names = [r["name"] for r in db.query("SELECT name FROM schema_migrations ORDER BY id")]
    assert names == [fn.__name__ for fn in MIGRATIONS]
    db.close()


@pytest.mark.sqlite_only
def test_the_bundled_sqlite_supports_fts5_secure_delete(engine):
    flag = engine.db.scalar("SELECT v FROM events_fts_config WHERE k = 'secure-delete'")
    assert flag == 1


def test_the_archive_path_comes_from_the_flag_then_the_environment(tmp_path):
    env = {"MEMLIKEHUMAN_DB": str(tmp_path / "env.sqlite3"), "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
    assert config.load(tmp_path / "flag.sqlite3", env=env).db_path == tmp_path / "flag.sqlite3"
    assert config.load(None, env=env).db_path == tmp_path / "env.sqlite3"
    default = config.load(None, env={"MEMLIKEHUMAN_CONFIG": "/nonexistent"}).db_path
    assert default.name == "memory.sqlite3" and "memlikehuman" in str(default)


def test_the_config_file_sets_keys_that_the_environment_overrides(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('MEMLIKEHUMAN_TIMEOUT = 5\nMEMLIKEHUMAN_EMBEDDER = "none"\n', encoding="utf-8")
    from_file = config.load(tmp_path / "a.db", env={"MEMLIKEHUMAN_CONFIG": str(path)})
    assert from_file.timeout == 5 and from_file.embedder == "none"
    overridden = config.load(tmp_path / "a.db", env={"MEMLIKEHUMAN_CONFIG": str(path), "MEMLIKEHUMAN_TIMEOUT": "7"})
    assert overridden.timeout == 7


@pytest.mark.parametrize(
    "env",
    [{"MEMLIKEHUMAN_EXTRACTOR": "magic"}, {"MEMLIKEHUMAN_EMBEDDER": "cloud"}, {"MEMLIKEHUMAN_TIMEOUT": "soon"}],
)
def test_bad_configuration_is_an_invalid_argument(tmp_path, env):
    with pytest.raises(InvalidArgument):
        config.load(tmp_path / "a.db", env={"MEMLIKEHUMAN_CONFIG": "/nonexistent", **env})


def test_an_engine_reopens_an_existing_archive_without_migrating_again(settings):
    with Engine(settings) as first:
        version = first.schema_version
    with Engine(settings) as second:
        assert second.schema_version == version


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_edges_import_mcp_or_click():
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.parts[-2] not in ("server", "cli") and _imports(path) & {"mcp", "click"}
    ]
    assert offenders == []


def _open_at_once(path: str, start: Any, results: Any) -> None:
    try:
        start.wait(timeout=30)
        with Engine(config.load(path, env={"MEMLIKEHUMAN_EMBEDDER": "none"})) as engine:
            results.put(engine.schema_version)
    except Exception as exc:  # a child's top level: report to the test
        results.put(repr(exc))


@pytest.mark.sqlite_only
def test_processes_that_create_one_new_archive_at_once_all_open_it(tmp_path):
    """SQLite answers busy at once (no busy handler) while a new file switches to WAL: the CI saw a server
    that started beside another on a new archive exit with "locked for 30 s" after a millisecond."""
    ctx = multiprocessing.get_context("fork")
    outcomes = []
    for attempt in range(12):
        path, start, results = str(tmp_path / f"new-{attempt}.sqlite3"), ctx.Barrier(4), ctx.Queue()
        children = [ctx.Process(target=_open_at_once, args=(path, start, results)) for _ in range(4)]
        for child in children:
            child.start()
        outcomes += [results.get(timeout=60) for _ in children]
        for child in children:
            child.join(timeout=30)
    assert outcomes == [len(MIGRATIONS)] * 48


class _BusyConnection:
    """Answers SQLITE_BUSY to its first `busy` statements (all of them for busy=None), then runs them."""

    def __init__(self, busy: int | None) -> None:
        self.busy, self.statements, self.timeouts = busy, [], []

    def execute(self, sql: str) -> Any:
        if self.busy is None or self.busy > 0:
            self.busy = None if self.busy is None else self.busy - 1
            raise apsw.BusyError("database is locked")
        self.statements.append(sql)
        return self

    def fetchall(self) -> list[Any]:
        return []

    def set_busy_timeout(self, milliseconds: int) -> None:
        self.timeouts.append(milliseconds)


def test_the_pragmas_are_retried_while_the_archive_answers_busy() -> None:
    conn = _BusyConnection(busy=3)
    archive_db._set_pragmas(conn, seconds=5)
    assert conn.statements == list(archive_db.PRAGMAS)
    assert conn.timeouts[-1] == archive_db.BUSY_TIMEOUT_MS  # put back after the retries
    assert all(0 < ms <= 5_000 for ms in conn.timeouts[:-1]) and len(conn.timeouts) == 4


def test_the_pragmas_give_up_busy_once_the_time_is_spent() -> None:
    conn = _BusyConnection(busy=None)
    with pytest.raises(apsw.BusyError):
        archive_db._set_pragmas(conn, seconds=0.05)
    assert conn.statements == []
    assert conn.timeouts[-1] == archive_db.BUSY_TIMEOUT_MS
