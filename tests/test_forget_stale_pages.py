"""Forget leaves no stale copy of a deleted row in the unallocated space of a live page.

SQLite's rebalancing leaves old bytes of moved cells in a page's gap; secure_delete does not reach
them (memlikehuman/archive/sqlite/residue.py). These tests make rows move the way the extraction worker does (an
event row grows when its state and error are written), then forget some of them.
"""

from __future__ import annotations

import random
from pathlib import Path

import apsw
import pytest
from conftest import make_settings

from memlikehuman.archive.sqlite import residue
from memlikehuman.engine import Engine
from memlikehuman.records import Scope

SCOPE = Scope()


def _grow_rows(db_path: Path, count: int, seed: int) -> None:
    """Grow and shrink event rows in many transactions, as the worker's state writes do."""
    rnd = random.Random(seed)
    conn = apsw.Connection(str(db_path))
    try:
        for _ in range(count * 3):
            with conn:
                conn.execute(
                    "UPDATE events SET extraction_error = ? WHERE sequence = ?",
                    ("e" * rnd.randint(0, 1500) or None, rnd.randint(1, count)),
                )
    finally:
        conn.close()


def _archive_with_moved_rows(tmp_path: Path, count: int = 600, seed: int = 7) -> tuple[Engine, dict[str, str]]:
    engine = Engine(make_settings(tmp_path / "memory.sqlite3"))
    rnd = random.Random(seed)
    texts = {f"e{i}": f"message {i} marker{i:05d}zq " + "word " * rnd.randint(10, 80) for i in range(count)}
    for event_id, text in texts.items():
        engine.record(SCOPE, event_id, text, role="user", source="test")
    _grow_rows(engine.settings.db_path, count, seed)
    return engine, texts


def _stale_pages(db_path: Path, texts: list[str]) -> list[int]:
    conn = apsw.Connection(str(db_path))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        root = int(conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'events'").fetchone()[0])
    finally:
        conn.close()
    return residue.stale_pages(db_path.read_bytes(), page_size, {root: residue.Tree(residue.pieces(texts))})


def test_moved_rows_leave_copies_in_unallocated_space_that_the_scan_finds(tmp_path):
    engine, texts = _archive_with_moved_rows(tmp_path)
    with engine:
        assert _stale_pages(engine.settings.db_path, list(texts.values()))


def test_forgetting_moved_rows_leaves_no_copy_of_their_text_in_any_file(tmp_path):
    engine, texts = _archive_with_moved_rows(tmp_path)
    victims = random.Random(3).sample(sorted(texts), 60)
    with engine:
        for event_id in victims:
            result = engine.forget(SCOPE, event_id)
            assert result.scrubbed
        files = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("memory.sqlite3"))
    left = [event_id for event_id in victims if f"marker{int(event_id[1:]):05d}zq".encode() in files]
    assert left == []
    kept = [event_id for event_id in texts if event_id not in victims]
    assert all(f"marker{int(event_id[1:]):05d}zq".encode() in files for event_id in kept)


def test_a_live_row_holding_the_same_words_is_not_a_stale_copy(tmp_path):
    engine = Engine(make_settings(tmp_path / "memory.sqlite3"))
    with engine:
        engine.record(SCOPE, "a", "the same sentence appears twice here", role="user", source="test")
        assert residue.pieces(["the same sentence appears twice here"])
        assert _stale_pages(engine.settings.db_path, ["the same sentence appears twice here"]) == []


def test_short_texts_give_no_pieces_to_look_for():
    assert residue.pieces(["ok", "yes please"]) == set()
    assert residue.pieces(["a text long enough"]) == {b"a text long enough"}


@pytest.mark.heavy
def test_the_leaves_around_a_rows_key_hold_nearly_every_stale_copy_of_it(tmp_path):
    # Above scrubbing.WHOLE_TREES_BYTES only these leaves are read; docs/reliability.md states the share.
    engine, texts = _archive_with_moved_rows(tmp_path, count=1500, seed=5)
    with engine:
        engine.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        sequences = {
            row["event_id"]: row["sequence"] for row in engine.db.query("SELECT event_id, sequence FROM events")
        }
    conn = apsw.Connection(str(engine.settings.db_path))
    try:
        root = int(conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'events'").fetchone()[0])
    finally:
        conn.close()
    data = engine.settings.db_path.read_bytes()
    found = near = 0
    for event_id in texts:
        marker = {f"marker{int(event_id[1:]):05d}zq".encode()}
        found += bool(residue.stale_pages(data, 4096, {root: residue.Tree(marker)}))
        near += bool(residue.stale_pages(data, 4096, {root: residue.Tree(marker, [sequences[event_id]])}))
    assert found > 100, "the archive was meant to hold many moved rows"
    assert near >= 0.95 * found


@pytest.mark.parametrize(
    "secret",
    [
        "my bank PIN is pinqz81f3c5e, keep it",
        # on several lines and with quotes: the states hold it on one line, as JSON ('\\"' for '"')
        'my bank PIN is "pinqz81f3c5e",\n keep it',
    ],
)
def test_a_checkpoint_quoting_a_forgotten_prompt_leaves_no_copy_of_it_in_the_file(tmp_path, secret):
    # The hooks' extractive checkpoints quote prompts word for word; corrections invalidate checkpoints
    # (their rows grow and move), and forget wipes the states: old copies stay in the pages' gaps.
    from memlikehuman.hosts.hook import extractive_state

    with Engine(make_settings(tmp_path / "memory.sqlite3")) as engine:
        tea = {"content": "Alice likes tea", "quote": "I like tea"}
        memory_id = engine.record(SCOPE, "tea", "I like tea.", "user", "alice", memories=[tea]).memory_ids[0]
        engine.record(SCOPE, "secret", secret, "user", "alice", session_id="s1")
        for i in range(200):
            session = f"s{i + 2}"
            engine.record(SCOPE, f"p{i}", f"prompt {i} " + "w" * (i * 31 % 400), "user", "alice", session_id=session)
            said = [("user", secret), ("assistant", "ok " + "v" * (i * 17 % 300)), ("user", f"prompt {i}")]
            engine.checkpoint(SCOPE, extractive_state(said, "PreCompact"), f"p{i}", session)
            if i % 25 == 24:
                memory_id = engine.correct(SCOPE, memory_id, f"Alice likes tea {i}", "update").replacement_id
        assert engine.forget(SCOPE, "secret").scrubbed
        files = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("memory.sqlite3"))
    assert b"pinqz81f3c5e" not in files and b"prompt 199" in files
