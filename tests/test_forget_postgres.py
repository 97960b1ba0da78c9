"""memory_forget on PostgreSQL: what goes at once, and what its cleanup leaves readable in the cluster's files.

A cluster of this module's own (tests/pg_forget_support.py): the tests read its table, index,
TOAST and WAL files, which needs the data directory. docs/reliability.md ("PostgreSQL") states
the residual these tests check.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import make_settings
from pg_forget_support import Cluster, flush, plant, running_cluster, scan

from memlikehuman.archive.postgres import scrub as scrubbing
from memlikehuman.engine import Engine
from memlikehuman.lifecycle import forget
from memlikehuman.records import Scope

SCOPE = Scope()
# Where a forgotten text's words can stay after forget (docs/reliability.md): the postings tables.
POSTINGS = {
    f"{table}_terms{suffix}" for table in ("events_fts", "events_passages", "memories_fts") for suffix in ("", "_pkey")
}
NO_CLEANUP = scrubbing.PgCleanup(vacuum=(), rewrite=(), checkpoint=False)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with running_cluster() as made:
        yield made


@pytest.fixture
def url(cluster: Cluster) -> str:
    return cluster.new_database()


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    with Engine(make_settings(url)) as opened:  # type: ignore[arg-type]
        yield opened


@pytest.fixture
def cleanup(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Restores the module's cleanup setting after a test that changes it."""
    monkeypatch.setattr(scrubbing, "POSTGRES_CLEANUP", scrubbing.POSTGRES_CLEANUP)
    yield


def forget_all(engine: Engine, targets: list[tuple[str, list[bytes]]]) -> None:
    for event_id, _ in targets:
        forget.forget(engine.db, SCOPE, event_id)


def needles_found(cluster: Cluster, url: str, targets: list[tuple[str, list[bytes]]]) -> dict[str, int]:
    """After a CHECKPOINT: per place, how many needles of the targets are still in the files."""
    flush(url)
    return dict(scan(cluster.data, url, [needle for _, needles in targets for needle in needles]))


def test_forget_deletes_the_rows_postings_and_toast_chunks_of_the_record_in_its_transaction(engine, cleanup):
    scrubbing.POSTGRES_CLEANUP = NO_CLEANUP
    targets = plant(engine, SCOPE, "gone", 2)
    (event_id, (word, *pieces)), _ = targets
    toast = engine.db.scalar("SELECT reltoastrelid::regclass::text FROM pg_class WHERE relname = 'events'")
    chunks = f"SELECT count(*) FROM {toast} WHERE position(?::bytea IN chunk_data) > 0"
    assert engine.db.scalar(chunks, (pieces[0],)) == 1
    term = word.decode()
    assert engine.db.scalar("SELECT count(*) FROM events_fts_terms WHERE term LIKE ?", (f"%{term}",)) > 0

    forget.forget(engine.db, SCOPE, event_id)

    assert engine.db.scalar(chunks, (pieces[0],)) == 0
    for table in ("events_fts_terms", "memories_fts_terms"):
        assert engine.db.scalar(f"SELECT count(*) FROM {table} WHERE term LIKE ?", (f"%{term}",)) == 0
    assert engine.db.scalar("SELECT count(*) FROM events WHERE text LIKE ?", (f"%{term}%",)) == 0
    assert engine.db.scalar("SELECT count(*) FROM memories WHERE content LIKE ?", (f"%{term}%",)) == 0
    assert engine.db.scalar("SELECT count(*) FROM events_fts WHERE rowid NOT IN (SELECT sequence FROM events)") == 0


def test_without_a_cleanup_the_forgotten_text_stays_readable_in_the_table_index_and_toast_files(
    cluster, url, engine, cleanup
):
    scrubbing.POSTGRES_CLEANUP = NO_CLEANUP
    targets = plant(engine, SCOPE, "control", 4)
    forget_all(engine, targets)
    found = needles_found(cluster, url, targets)
    assert found["table"] > 0 and found["index"] > 0 and found["toast"] > 0, found


def test_plain_vacuum_leaves_the_forgotten_text_in_freed_space_of_the_table_and_toast_files(
    cluster, url, engine, cleanup
):
    scrubbing.POSTGRES_CLEANUP = scrubbing.PgCleanup(rewrite=(), checkpoint=False)
    targets = plant(engine, SCOPE, "vacuumed", 4)
    forget_all(engine, targets)
    found = needles_found(cluster, url, targets)
    assert found["table"] > 0 and found["toast"] > 0, found


def test_after_forget_its_texts_are_in_no_table_index_or_toast_file_and_its_words_only_in_the_postings(
    cluster, url, engine
):
    targets = plant(engine, SCOPE, "scrubbed", 6)
    words = [needles[0] for _, needles in targets]
    texts = [needle for _, needles in targets for needle in needles[1:]]
    flush(url)
    assert scan(cluster.data, url, texts)["table"] == len(targets)  # the scan sees them while they are stored
    forget_all(engine, targets)
    flush(url)
    text_places: set[str] = set()
    word_places: set[str] = set()
    scan(cluster.data, url, texts, text_places)
    scan(cluster.data, url, words, word_places)
    assert text_places == {"pg_wal"}
    assert word_places <= {"pg_wal", *POSTINGS}, word_places


def test_the_kept_records_beside_the_forgotten_ones_stay_whole(engine):
    targets = plant(engine, SCOPE, "neighbour", 4)
    kept = {row["event_id"]: row["text"] for row in engine.db.query("SELECT event_id, text FROM events")}
    forget_all(engine, targets)
    after = {row["event_id"]: row["text"] for row in engine.db.query("SELECT event_id, text FROM events")}
    assert after == {key: text for key, text in kept.items() if key.startswith("kept-")}
    assert all(len(text) == 6_000 for text in after.values())


def test_the_wal_keeps_the_forgotten_text_until_its_segments_are_overwritten(cluster, url, engine):
    """The residual docs/reliability.md states: a forget cannot clear pg_wal (recycled segments keep their bytes)."""
    targets = plant(engine, SCOPE, "logged", 2)
    forget_all(engine, targets)
    engine.db.raw.execute("SELECT pg_switch_wal()")
    flush(url)
    assert needles_found(cluster, url, targets)["wal"] > 0


def relfilenodes(engine: Engine) -> dict[str, int]:
    rows = engine.db.query("SELECT relname, relfilenode FROM pg_class WHERE relname IN ('events', 'memories')")
    return {row["relname"]: row["relfilenode"] for row in rows}


def test_forget_rewrites_events_and_memories_only_while_they_are_within_the_size_bound(engine, cleanup):
    plant(engine, SCOPE, "bound", 2)
    before = relfilenodes(engine)
    scrubbing.POSTGRES_CLEANUP = scrubbing.PgCleanup(rewrite_bytes=engine.db.size(("events", "memories")) - 1)
    assert forget.forget(engine.db, SCOPE, "bound-0").scrubbed
    assert relfilenodes(engine) == before
    scrubbing.POSTGRES_CLEANUP = scrubbing.PgCleanup()
    assert forget.forget(engine.db, SCOPE, "bound-1").scrubbed
    after = relfilenodes(engine)
    assert after["events"] != before["events"] and after["memories"] != before["memories"]


def test_a_forget_whose_rewrite_cannot_get_its_lock_returns_and_says_it_did_not_scrub(url, engine):
    import psycopg

    plant(engine, SCOPE, "locked", 1)
    with psycopg.connect(url) as reader:  # another server's open read transaction on events
        reader.execute("SELECT count(*) FROM events").fetchone()
        result = forget.forget(engine.db, SCOPE, "locked-0")
    assert result.deleted_event_ids == ("locked-0",)
    assert not result.scrubbed and result.warnings
    assert engine.db.scalar("SELECT count(*) FROM events WHERE event_id = 'locked-0'") == 0
