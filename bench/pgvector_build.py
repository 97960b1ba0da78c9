"""A PostgreSQL archive of N events in about a minute per 100,000: rows written with COPY, vectors synthetic.

The schema is the one before pgvector (migrations p001-p005, which main at 598ea20 also has): events in
4 scopes (70% in bench.recall_latency.MAIN) with chat-like pseudo-word texts in sessions of 40, their
full-text rows and postings (built by pg_fulltext from the values the archive's writers index), and
a float32 bytea vector per event: a random unit vector near one of CENTERS cluster centres (cosine ~0.75
to it), so nearest neighbours are neither all alike nor noise. Triggers run as on any insert.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Iterator
from itertools import islice
from typing import Any

import numpy as np

from bench.recall_latency import MAIN, SCOPES, Words
from memlikehuman.archive import fulltext
from memlikehuman.archive.db import open_database
from memlikehuman.archive.postgres import pg_fulltext
from memlikehuman.archive.schema import migrate

DIM = 384
CENTERS = 2_000
NOISE = 0.9  # the norm of the noise added to a unit centre: cosine to it ~ 1 / sqrt(1 + NOISE**2)
CHUNK = 10_000
STAMP = "2024-01-01T00:00:00.000000Z"


def centers(seed: int = 5) -> np.ndarray:
    found = np.random.default_rng(seed).standard_normal((CENTERS, DIM))
    return found / np.linalg.norm(found, axis=1, keepdims=True)


def clustered(rng: np.random.Generator, n: int, around: np.ndarray) -> np.ndarray:
    """n unit vectors, each near a random one of the centres `around`."""
    rows = around[rng.integers(0, len(around), n)] + rng.standard_normal((n, DIM)) * (NOISE / np.sqrt(DIM))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype("<f4")


def build(url: str, n: int, model: str) -> None:
    """Migrate the empty database to schema 5 and COPY n events with their full-text rows and vectors."""
    db = open_database(url)
    try:
        migrate(db, upto=5)
        started = time.perf_counter()
        rng, vec_rng, words = random.Random(42), np.random.default_rng(7), Words(random.Random(42))
        around = centers()
        last: dict[tuple[str, str, str], str] = {}
        for start in range(0, n, CHUNK):
            size = min(CHUNK, n - start)
            rows = [_event(start + i + 1, rng, words, last) for i in range(size)]
            vectors = clustered(vec_rng, size, around)
            _copy(db, "events", _EVENT_COLUMNS, (row[:-1] for row in rows))
            for table in ("events_fts", "events_ngrams"):
                values = [(row[0], row[-1] if table == "events_fts" else ("", "", "")) for row in rows]
                found = [(sequence, pg_fulltext.postings(table, v)) for sequence, v in values]
                _copy(db, table, ("rowid", "tokens"), ((s, total) for s, (total, _) in found))
                terms = ((term, s, col, tf) for s, (_, posts) in found for term, col, tf in posts)
                _copy(db, f"{table}_terms", ("term", "rowid", "col", "tf"), terms)
            vector_rows = ((row[0], model, DIM, vectors[i].tobytes()) for i, row in enumerate(rows))
            _copy(db, "event_vectors", ("event_sequence", "model", "dim", "vector"), vector_rows)
            print(f"\rbuilding: {start + size:,}/{n:,}", end="", file=sys.stderr, flush=True)
        with db.write() as conn:
            conn.execute("SELECT setval(pg_get_serial_sequence('events', 'sequence'), ?)", (n,))
        print(f" ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    finally:
        db.close()


_EVENT_COLUMNS = (
    "sequence", "event_id", "persona_id", "project_id", "session_id", "role", "source", "category", "text",
    "occurred_at", "occurred_at_given", "recorded_at", "payload_hash", "extraction_state",
)  # fmt: skip


def _event(sequence: int, rng: random.Random, words: Words, last: dict[tuple[str, str, str], str]) -> tuple[Any, ...]:
    scope = MAIN if rng.random() < 0.7 else rng.choice(SCOPES[1:])
    session = f"s{sequence // 40}"
    text = words.sentence(rng.randint(5, 16))
    source = rng.choice(["Ana", "Bob", "Eve"])
    key = (scope.persona_id, scope.project_id, session)
    values = fulltext.event_row(text, source, [], last.get(key))
    last[key] = text
    return (
        sequence, f"ev-{sequence}", scope.persona_id, scope.project_id, session, "user", source, "conversation",
        text, STAMP, 1, STAMP, f"h{sequence}", "complete", values,
    )  # fmt: skip


def _copy(db: Any, table: str, columns: tuple[str, ...], rows: Iterator[tuple[Any, ...]]) -> None:
    rows = iter(rows)
    while chunk := list(islice(rows, 50_000)):
        with db.write() as conn, conn.raw.cursor().copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as out:
            for row in chunk:
                out.write_row(row)
