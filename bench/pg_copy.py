"""A benchmark's bulk build of a PostgreSQL archive: the rows of a SQLite archive, copied with COPY.

Building 100k events through events.insert costs about 8 round trips per event on PostgreSQL (over
an hour on a busy 2-core machine); COPY moves the same rows in seconds. The full-text rows are
built from the same values the archive's writers index (fulltext.event_values, ngrams.index_text)
with pg_fulltext's tokens, so they are those events.insert would write. The schema's triggers run
as on any insert (scope counters, full-text statistics); rows are committed in chunks, so no
counter row collects a long chain of versions inside one transaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

from memlikehuman.archive import fulltext
from memlikehuman.archive.postgres import pg_fulltext
from memlikehuman.text import ngrams

# What bench.recall_latency.build writes (memories, checkpoints and the rest stay empty).
TABLES = ("events", "cues", "event_dates", "event_vectors")
CHUNK = 5_000


def copy_archive(sqlite: Any, postgres: Any) -> None:
    """Copy the events (cues, dates, vectors, full-text rows) of a SQLite archive into an empty PostgreSQL one."""
    for table in TABLES:
        columns = [row["name"] for row in sqlite.query(f"PRAGMA table_info({table})")]
        rows = sqlite.stream(f"SELECT {', '.join(columns)} FROM {table}")
        _copy(postgres, table, columns, rows)
    with postgres.write() as conn:
        conn.execute("SELECT setval(pg_get_serial_sequence('events', 'sequence'), (SELECT max(sequence) FROM events))")
    sequences = [row[0] for row in sqlite.stream("SELECT sequence FROM events ORDER BY sequence")]
    for table in fulltext.NGRAM_TABLES["event"], fulltext.TABLES["event"]:
        with sqlite.read() as conn:
            found = [(sequence, _postings(conn, table, sequence)) for sequence in sequences]
        _copy(postgres, table, ["rowid", "tokens"], ((sequence, total) for sequence, (total, _) in found))
        terms = ((term, sequence, col, tf) for sequence, (_, rows) in found for term, col, tf in rows)
        _copy(postgres, f"{table}_terms", ["term", "rowid", "col", "tf"], terms)


def _postings(conn: Any, table: str, sequence: int) -> tuple[int, list[tuple[str, int, int]]]:
    values: Sequence[str] = fulltext.event_values(conn, sequence)
    if table in fulltext.NGRAM_TABLES.values():
        values = [ngrams.index_text(value) for value in values]
    return pg_fulltext.postings(table, values)


def _copy(postgres: Any, table: str, columns: Sequence[str], rows: Iterator[tuple[Any, ...]]) -> None:
    rows = iter(rows)
    while chunk := list(islice(rows, CHUNK)):
        with postgres.write() as conn, conn.raw.cursor().copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as out:
            for row in chunk:
                out.write_row(row)
