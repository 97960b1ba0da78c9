"""Full-text ranking on PostgreSQL agrees with SQLite's FTS5, the capped (newest-rows) path included.

A throwaway cluster (bench/pg_cluster.py: initdb, a Unix socket, no TCP) for this module; skipped
where PostgreSQL or psycopg is not installed.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.multilingual_set import CASES
from memlikehuman import clock, config
from memlikehuman.archive import fulltext
from memlikehuman.engine import Engine
from memlikehuman.records import Scope
from memlikehuman.retrieval import search
from memlikehuman.retrieval.recall import DEFAULT_TUNING

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("psycopg") is None
    or not (shutil.which("initdb") or list(Path("/usr/lib/postgresql").glob("*/bin/initdb"))),
    reason="PostgreSQL (initdb) or psycopg is not installed",
)

ENV = {"MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
SCOPE = Scope("p", "fulltext")
# Chat sentences in eight languages and a paraphrased question about each (bench/multilingual_set.py):
# word and n-gram terms, n-gram prefixes included.
TEXTS = [case.text for case in CASES]
QUERIES = [case.query for case in CASES]


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Engine]]:
    from bench.pg_cluster import cluster

    folder = tmp_path_factory.mktemp("fulltext")
    with cluster() as server:
        found = {
            "sqlite": Engine(config.load(str(folder / "a.sqlite3"), env=ENV)),
            "postgres": Engine(config.load(server.database("fulltext"), env=ENV)),
        }
        for engine in found.values():
            for round_ in range(3):
                for i, text in enumerate(TEXTS):
                    engine.record(SCOPE, f"e{round_}-{i}", text, "user", "Ana", session_id=f"s{round_}")
        yield found
        for engine in found.values():
            engine.close()


def _ranking(engine: Engine, query: str, scored_rows: int) -> list[tuple[int, float]]:
    filters = search.Filters(SCOPE, clock.now_stamp())
    hits = search.lexical(
        engine.db,
        "event",
        search.terms(query),
        filters,
        50,
        DEFAULT_TUNING.event_weights,
        text=query,
        scored_rows=scored_rows,
    )
    # Ties may come in another order: compare the rows of each score.
    return sorted((hit.id, round(hit.score, 9)) for hit in hits)


def _disagreements(engines: dict[str, Engine], scored_rows: int) -> list[str]:
    return [
        query
        for query in QUERIES
        if _ranking(engines["postgres"], query, scored_rows) != _ranking(engines["sqlite"], query, scored_rows)
    ]


def test_postgres_scores_the_same_rows_as_fts5(engines: dict[str, Engine]) -> None:
    assert _disagreements(engines, 10**9) == []


def test_postgres_scores_the_same_rows_as_fts5_when_only_the_newest_matches_are_scored(
    engines: dict[str, Engine],
) -> None:
    # A cap of 4 rows sends most queries through the rare-word pass and the newest-rows pass (with
    # a rowid floor), n-gram prefix terms included.
    assert _disagreements(engines, 4) == []


def test_a_cached_count_above_the_rows_left_still_scores(engines: dict[str, Engine]) -> None:
    # search.row_counts caches counts for a minute; forgetting may leave fewer rows than counted.
    db = engines["postgres"].db
    word = search.terms(TEXTS[0])[0]
    source, score, _, params = fulltext.scored(db, "events_fts", [word], [1.0, 1.0, 0.5], {word: 10**9})

    rows = db.query(f"SELECT f.rowid, {score} AS score FROM {source}", params)

    assert rows
    assert all(row["score"] > 0 for row in rows)
