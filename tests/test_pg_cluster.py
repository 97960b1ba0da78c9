"""The PostgreSQL test harness itself: scripts/pg-cluster and the fixtures of tests/pg_support.py."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from pg_support import ENV_URL, SCRIPT, admin, down_url, fresh_database, missing, pg_url_for

ROOT = Path(__file__).resolve().parents[1]


def pg_cluster(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, check=False, env=env)


@pytest.fixture
def cluster_dir() -> Iterator[Path]:
    """A short directory for a cluster of the test's own (removed by `stop`, or here if it is left)."""
    directory = Path(tempfile.mkdtemp(prefix="mlh-pgt-", dir="/tmp"))
    yield directory
    pg_cluster("stop", str(directory))


def postmaster(directory: Path) -> psutil.Process:
    return psutil.Process(int((directory / "data" / "postmaster.pid").read_text().split()[0]))


def tables(url: str) -> list[str]:
    with admin(url) as connection:
        rows = connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return [row[0] for row in rows]


def test_pg_cluster_serves_on_its_socket_only_and_stop_removes_it(cluster_dir: Path) -> None:
    started = pg_cluster("start", str(cluster_dir))
    if started.returncode == 3:
        missing("PostgreSQL is not installed")
    assert started.returncode == 0, started.stderr
    url = started.stdout.strip()
    assert url == f"postgresql:///postgres?host={cluster_dir}&user=postgres"
    assert pg_cluster("start", str(cluster_dir)).stdout.strip() == url  # idempotent
    with admin(url) as connection:
        assert connection.execute("SHOW listen_addresses").fetchone() == ("",)
        assert connection.execute("SHOW lc_collate").fetchone() == ("C",)
    server = postmaster(cluster_dir)
    for process in [server, *server.children()]:
        with contextlib.suppress(psutil.NoSuchProcess):  # a backend may exit meanwhile
            assert process.net_connections(kind="inet") == [], process.cmdline()

    assert pg_cluster("stop", str(cluster_dir)).returncode == 0
    assert not cluster_dir.exists()
    _, alive = psutil.wait_procs([server], timeout=60)
    assert alive == []
    assert pg_cluster("stop", str(cluster_dir)).returncode == 0  # idempotent


def test_pg_cluster_without_postgresql_names_the_package_to_install(tmp_path: Path) -> None:
    result = pg_cluster("start", str(tmp_path / "cluster"), env={**os.environ, "PG_BINDIR": str(tmp_path / "none")})
    assert result.returncode == 3
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert "install the Debian package postgresql" in result.stderr
    assert not (tmp_path / "cluster").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert pg_cluster("stop", str(empty), env={**os.environ, "PG_BINDIR": str(tmp_path / "none")}).returncode == 0
    assert not empty.exists()


def test_each_pg_url_is_a_separate_empty_database_dropped_afterwards(pg_server: str, pg_url: str) -> None:
    assert tables(pg_url) == []
    with admin(pg_url) as connection:
        connection.execute("CREATE TABLE events (id integer)")
    with fresh_database(pg_server) as other:
        assert other != pg_url
        assert tables(other) == []
        name = other.split("?")[0].rsplit("/", 1)[1]
    assert tables(pg_url) == ["events"]
    with admin(pg_server) as connection:
        assert connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None


def test_pg_url_for_keeps_the_server_and_changes_the_database_or_user() -> None:
    pytest.importorskip("psycopg")
    url = "postgresql:///postgres?host=/tmp/a%20b&user=postgres"
    assert pg_url_for(url, "mem") == "postgresql:///mem?host=/tmp/a%20b&user=postgres"
    assert pg_url_for(url, user="bob") == "postgresql:///postgres?host=/tmp/a%20b&user=bob"
    tcp = "postgresql://bob:pw@127.0.0.1:5433/postgres?sslmode=disable"
    assert pg_url_for(tcp, "mem") == "postgresql:///mem?host=127.0.0.1&port=5433&user=bob&password=pw&sslmode=disable"


def test_a_role_without_rights_connects_but_cannot_create_a_table(pg_role_url: str) -> None:
    import psycopg

    with psycopg.connect(pg_role_url) as connection:
        assert connection.execute("SELECT current_user").fetchone() != ("postgres",)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("CREATE TABLE events (id integer)")


def test_a_down_server_refuses_connections(pg_server: str) -> None:
    import psycopg

    with (
        tempfile.TemporaryDirectory(prefix="mlh-down-", dir="/tmp") as directory,
        pytest.raises(psycopg.OperationalError),
    ):
        psycopg.connect(down_url(Path(directory)), connect_timeout=5)


def test_archive_target_is_a_file_path_for_sqlite_and_an_empty_database_for_postgres(
    backend: str, archive_target: str, tmp_path: Path
) -> None:
    if backend == "sqlite":
        assert Path(archive_target).parent.parent == tmp_path
        assert not Path(archive_target).exists()
    else:
        assert archive_target.startswith("postgresql:///mlh_test_")
        assert tables(archive_target) == []


def run_archive_target_test(*options: str, **env: str) -> subprocess.CompletedProcess[str]:
    """This file's archive_target test in a pytest of its own (with ENV_URL and CI unset unless given)."""
    base = {key: value for key, value in os.environ.items() if key not in (ENV_URL, "CI")}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", *options]
    command += [f"{__file__}::test_archive_target_is_a_file_path_for_sqlite_and_an_empty_database_for_postgres"]
    return subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT, env={**base, **env})


def test_backends_sqlite_alone_skips_every_postgres_parameter() -> None:
    result = run_archive_target_test("--backends", "sqlite")
    assert "1 passed, 1 skipped" in result.stdout, result.stdout
    assert "backend postgres not selected" in result.stdout


def test_without_postgresql_postgres_tests_skip_outside_ci_and_fail_in_ci(tmp_path: Path) -> None:
    nowhere = str(tmp_path / "no-postgresql")
    outside = run_archive_target_test(PG_BINDIR=nowhere)
    assert outside.returncode == 0, outside.stdout
    assert "1 passed, 1 skipped" in outside.stdout
    assert "PostgreSQL is not installed" in outside.stdout
    in_ci = run_archive_target_test(PG_BINDIR=nowhere, CI="true")
    assert in_ci.returncode == 1
    # Its "pgvector" variant is deselected: the test is not marked `vectors` (tests/pg_support.py).
    assert "1 passed, 1 deselected, 1 error" in in_ci.stdout, in_ci.stdout
    assert "required in CI" in in_ci.stdout


def _refused_start(directory: Path) -> subprocess.CompletedProcess[str]:
    """`start` on a directory it must not use: exit 1, one line on stderr, nothing written into it."""
    inside = sorted(p.name for p in directory.iterdir()) if directory.is_dir() else None
    result = pg_cluster("start", str(directory))
    assert result.returncode == 1, result.stderr
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1
    assert (sorted(p.name for p in directory.iterdir()) if directory.is_dir() else None) == inside
    return result


def test_pg_cluster_refuses_a_directory_others_can_write(tmp_path: Path) -> None:
    # The cluster's socket lets anyone who reaches it be the superuser (trust): another user must not be
    # able to add, remove or replace anything in its directory.
    for mode in (0o777, 0o1777, 0o770):
        shared = tmp_path / f"shared-{mode:o}"
        shared.mkdir()
        shared.chmod(mode)
        assert "can be written by other users" in _refused_start(shared).stderr


def test_pg_cluster_refuses_a_directory_that_is_a_symbolic_link(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    for link, target in ((tmp_path / "link", real), (tmp_path / "dangling", tmp_path / "nowhere")):
        link.symlink_to(target)
        assert "is a symbolic link" in _refused_start(link).stderr
        assert "is a symbolic link" in _refused_start(Path(f"{link}/")).stderr
    assert list(real.iterdir()) == [] and not (tmp_path / "nowhere").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_pg_cluster_refuses_an_empty_directory_another_user_created(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)  # nobody: not root, not postgres
    assert "belongs to another user (uid 65534)" in _refused_start(theirs).stderr
