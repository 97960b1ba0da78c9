"""A PostgreSQL cluster of the test module's own, and a byte scan of its files (forget residue tests).

The forget tests read the cluster's files (table, index, TOAST and WAL files) and stop and start
the server under a connected `memlikehuman serve`, so they need a cluster they own: `Cluster`
runs initdb in a short directory under /tmp (a socket path holds at most 107 bytes) with a Unix
socket only, as root through `runuser -u postgres` (initdb refuses root). Without PostgreSQL or
psycopg the tests skip, except in CI (CI=true), where they fail. Also used by bench/forget_postgres.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BINDIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))


def unavailable_reason() -> str | None:
    """Why no cluster can be started here, or None."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return 'psycopg is not installed: pip install -e ".[postgres]"'
    if not BINDIRS and shutil.which("initdb") is None:
        return "PostgreSQL is not installed (no initdb): apt-get install postgresql"
    return None


def _bindir() -> Path:
    return BINDIRS[-1] if BINDIRS else Path(str(shutil.which("initdb"))).parent


def _as_owner(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@dataclass
class Cluster:
    """A throwaway cluster: data in ``directory``/data, its socket in ``directory``; the PostgreSQL of
    ``bindir`` (default: the newest Debian one)."""

    directory: Path
    bindir: Path | None = None

    @classmethod
    def create(cls, bindir: Path | None = None) -> Cluster:
        directory = Path(tempfile.mkdtemp(prefix="mlh-pgf-", dir="/tmp"))
        if os.geteuid() == 0:
            shutil.chown(directory, "postgres")
        cluster = cls(directory, bindir)
        cluster._run("initdb", "-D", str(cluster.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C")
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.write(f"listen_addresses = ''\nunix_socket_directories = '{directory}'\n")
        cluster.start()
        return cluster

    @property
    def data(self) -> Path:
        return self.directory / "data"

    def url(self, dbname: str = "postgres", user: str = "postgres") -> str:
        return f"postgresql:///{dbname}?host={self.directory}&user={user}"

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.directory / "server.log"), "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.directory, ignore_errors=True)

    def new_database(self, name: str | None = None) -> str:
        """A new empty database (by default with a new unique name); its URL."""
        name = name or "mlh_" + uuid.uuid4().hex[:12]
        self.admin(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def admin(self, sql: str, url: str | None = None) -> list[tuple[Any, ...]]:
        """One statement as the superuser, outside a transaction; its rows."""
        import psycopg

        with psycopg.connect(url or self.url(), autocommit=True) as conn:
            cursor = conn.execute(sql)
            return list(cursor.fetchall()) if cursor.description else []

    def _run(self, program: str, *args: str) -> None:
        subprocess.run(_as_owner([str((self.bindir or _bindir()) / program), *args]), check=True, capture_output=True)


def relation_files(url: str) -> dict[str, tuple[str, str]]:
    """Every relation of the database, by file path relative to the data directory: (kind, name).

    Kinds: "table", "index", "toast" (TOAST tables and their indexes). A superuser connection.
    """
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_relation_filepath(c.oid), c.relkind, n.nspname, c.relname FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'i', 't')"
            " AND pg_relation_filepath(c.oid) IS NOT NULL"
        ).fetchall()
    kinds = {}
    for path, relkind, schema, name in rows:
        kind = "toast" if schema == "pg_toast" else {"r": "table", "i": "index", "t": "toast"}[relkind]
        kinds[path] = (kind, name)
    return kinds


def _forks(path: Path) -> list[Path]:
    """A relation's files: its first segment, further segments (.1, .2) and its _fsm and _vm forks."""
    if not path.parent.exists():
        return []
    name = path.name
    return sorted(p for p in path.parent.iterdir() if p.name == name or p.name.startswith((name + ".", name + "_")))


def flush(url: str) -> None:
    """CHECKPOINT: the server writes its changed pages to the files (else they may lag behind)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")


def scan(data: Path, url: str, needles: list[bytes], where: set[str] | None = None) -> Counter[str]:
    """Where the needles' bytes occur in the database's table, index and TOAST files and in pg_wal.

    Counts, per place ("table", "index", "toast", "wal"), how many of the needles occur there at
    least once. The pages the server has changed but not yet written are not in the files: call
    ``flush`` first to see what a reader of the files sees after the next checkpoint. ``where``
    collects the names of the relations (and "pg_wal") that hold any needle.
    """
    found: Counter[str] = Counter()
    places: dict[str, dict[str, bytes]] = {}
    for relative, (kind, name) in relation_files(url).items():
        blob = b"".join(path.read_bytes() for path in _forks(data / relative))
        places.setdefault(kind, {})[name] = blob
    wal = (path for path in sorted((data / "pg_wal").iterdir()) if path.is_file())
    places["wal"] = {f"pg_wal/{path.name}": path.read_bytes() for path in wal}
    for kind, blobs in places.items():
        holders = {name for name, blob in blobs.items() if any(needle in blob for needle in needles)}
        found[kind] += sum(any(needle in blob for blob in blobs.values()) for needle in needles)
        if where is not None:
            where.update("pg_wal" if kind == "wal" else name for name in holders)
    return found


@contextmanager
def running_cluster(bindir: Path | None = None) -> Iterator[Cluster]:
    """A new cluster (on `bindir`'s PostgreSQL), removed afterwards; the test skips without PostgreSQL or
    psycopg, and fails in CI (CI=true)."""
    reason = unavailable_reason()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}: it is required in CI (.ci/run installs it)")
        pytest.skip(reason)
    made = Cluster.create(bindir)
    try:
        yield made
    finally:
        made.remove()


LONG_BYTES = (
    4_500  # random bytes: 6,000 base64 characters, which pglz cannot compress (so TOAST holds them as they are)
)


def long_text() -> str:
    import base64
    import secrets

    return base64.b64encode(secrets.token_bytes(LONG_BYTES)).decode()


def plant(engine: Any, scope: Any, prefix: str, count: int) -> list[tuple[str, list[bytes]]]:
    """Record ``count`` targets to forget: (event ID, the needles that tell its text in a file).

    Each target's text holds a unique marker word, and so does a memory stored for it; every other
    target also holds 6 kB of random text (stored in TOAST) and is followed by a kept event of
    6 kB, so TOAST pages keep live chunks beside the forgotten ones, as in a real archive. The
    needles: the marker's random part (a full-text term), "code word is <marker>" (in the event and
    the memory, never in one term) and three 32-byte pieces of the long text (each inside one TOAST
    chunk of 1,996 bytes).
    """
    import secrets

    from memlikehuman.archive import events, memories
    from memlikehuman.records import Candidate

    made = []
    for n in range(count):
        # The closing "k" keeps the porter stemmer off the marker: a hex tail such as "...6081e"
        # is indexed as "...6081", and the needle would miss its own term.
        word = "zqx" + secrets.token_hex(10) + "k"
        long = long_text() if n % 2 == 0 else ""
        event_id = f"{prefix}-{n}"
        engine.record(scope, event_id, f"The code word is {word}. {long}", "user", "chat", session_id=event_id)
        event = events.find(engine.db, scope, event_id)
        at = event.occurred_at
        fact = Candidate(f"User's code word is {word}", f"code word is {word}", "fact", "stated", None, at)
        memories.store(engine.db, event, [fact], event.recorded_at)
        if long:
            engine.record(scope, f"kept-{event_id}", long_text(), "user", "chat", session_id=event_id)
        pieces = [long[at : at + 32].encode() for at in (100, 2_100, 4_100)] if long else []
        made.append((event_id, [word[3:].encode(), f"code word is {word}".encode(), *pieces]))
    return made
