"""PostgreSQL archives that cannot be reached: coded errors that name the setting, never a traceback.

Real `memlikehuman serve` and `memlikehuman stats` processes with MEMLIKEHUMAN_DB set to a bad
URL, a server that is down, a missing database or a role without rights; and a connected server
whose PostgreSQL server stops and starts again under it. A cluster of this module's own
(tests/pg_forget_support.py): one test stops it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator

import pytest
from conftest import BASE_ENV, connected
from mcp import StdioServerParameters
from pg_forget_support import Cluster, running_cluster

SETTING = "MEMLIKEHUMAN_DB (or --db)"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with running_cluster() as made:
        yield made


@pytest.fixture
def socket_dir() -> Iterator[str]:
    """A short directory where no server listens (a socket path holds at most 107 bytes)."""
    directory = tempfile.mkdtemp(prefix="mlh-down-", dir="/tmp")
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def run(command: str, url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **BASE_ENV, "MEMLIKEHUMAN_DB": url}
    return subprocess.run(
        [sys.executable, "-m", "memlikehuman", command],
        input="",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def weak_url(cluster: Cluster, database: str) -> str:
    """The database as a new login role that may connect (as PUBLIC may) but owns and may create nothing."""
    role = f"weak_{database}"
    cluster.admin(f'CREATE ROLE "{role}" LOGIN')
    return cluster.url(database, role)


def malformed(cluster: Cluster, socket_dir: str) -> str:
    return "postgresql://[bad"


def unknown_option(cluster: Cluster, socket_dir: str) -> str:
    return cluster.url() + "&sslmode_typo=require"


def server_down(cluster: Cluster, socket_dir: str) -> str:
    return f"postgresql:///postgres?host={socket_dir}&user=postgres"


def missing_database(cluster: Cluster, socket_dir: str) -> str:
    return cluster.url("no_such_archive")


def role_without_connect(cluster: Cluster, socket_dir: str) -> str:
    name = f"noconnect_{uuid.uuid4().hex[:8]}"
    cluster.new_database(name)
    cluster.admin(f'REVOKE CONNECT ON DATABASE "{name}" FROM PUBLIC')
    return weak_url(cluster, name)


def role_without_create(cluster: Cluster, socket_dir: str) -> str:
    name = f"nocreate_{uuid.uuid4().hex[:8]}"
    cluster.new_database(name)
    return weak_url(cluster, name)


def role_without_select(cluster: Cluster, socket_dir: str) -> str:
    name = f"noselect_{uuid.uuid4().hex[:8]}"
    assert run("serve", cluster.new_database(name)).returncode == 0  # the superuser creates the schema
    return weak_url(cluster, name)


CASES: dict[str, tuple[Callable[[Cluster, str], str], str, str]] = {
    "malformed": (malformed, "invalid_argument", "is not a valid PostgreSQL URL"),
    "unknown_option": (unknown_option, "invalid_argument", 'invalid URI query parameter: "sslmode_typo"'),
    "server_down": (server_down, "unavailable", "start the server or fix"),
    "missing_database": (missing_database, "unavailable", "create the database (docs/team.md) or fix"),
    "role_without_connect": (role_without_connect, "unavailable", "or have the role given access (docs/team.md)"),
    "role_without_create": (role_without_create, "unavailable", "lacks a right on the archive"),
    "role_without_select": (role_without_select, "unavailable", "lacks a right on the archive"),
}


def assert_one_coded_line(result: subprocess.CompletedProcess[str], code: str, says: str) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {code}: "), lines[0]
    assert says in lines[0] and SETTING in lines[0], lines[0]


@pytest.mark.parametrize("case", CASES)
def test_serve_with_an_unusable_postgres_archive_exits_with_one_coded_line_naming_the_setting(
    cluster, socket_dir, case
):
    make, code, says = CASES[case]
    result = run("serve", make(cluster, socket_dir))
    assert result.stdout == ""  # nothing but JSON-RPC on stdout, and no JSON-RPC without an archive
    assert_one_coded_line(result, code, says)


@pytest.mark.parametrize("case", CASES)
def test_a_cli_command_with_an_unusable_postgres_archive_exits_1_with_one_coded_line(cluster, socket_dir, case):
    make, code, says = CASES[case]
    assert_one_coded_line(run("stats", make(cluster, socket_dir)), code, says)


def test_a_connected_server_answers_unavailable_while_postgres_is_down_and_reconnects_when_it_is_back(cluster):
    url = cluster.new_database()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memlikehuman", "serve"],
        env={**os.environ, **BASE_ENV, "MEMLIKEHUMAN_DB": url},
    )
    with connected(params) as client:
        record = {"role": "user", "source": "chat"}
        client.ok("memory_record", event_id="before", text="The boat is called Hoppla.", **record)
        cluster.stop()
        try:
            for tool, arguments in (
                ("memory_record", {"event_id": "during", "text": "x", **record}),
                ("memory_recall", {"query": "boat"}),
            ):
                result = client.call(tool, **arguments)
                assert result.is_error
                text = result.content[0].text
                assert "unavailable: " in text and SETTING in text, text
                assert "internal" not in text, text
        finally:
            cluster.start()
        client.ok("memory_record", event_id="after", text="The boat's sail is red.", **record)
        found = client.ok("memory_recall", query="boat")
    assert "Hoppla" in str(found) and "sail is red" in str(found)
