"""memory_forget: cascades, re-linking, checkpoints, and no readable residue in the files."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import add_memory, connected, fts_rowids, make_settings
from reliability.support import STRUCTURE

from memlikehuman.archive.db import is_url, open_database
from memlikehuman.archive.sqlite import scrub as sqlite_scrub
from memlikehuman.config import Settings
from memlikehuman.engine import Engine
from memlikehuman.lifecycle import forget
from memlikehuman.records import Scope
from memlikehuman.server import build_server

OTHER = Scope("default", "other-project")

DEFAULT = Scope()


def execute(db_path: Path, sql: str, params: tuple[object, ...] = ()) -> None:
    db = open_database(db_path)
    try:
        with db.write() as conn:
            conn.execute(sql, params)
    finally:
        db.close()


def query(db_path: Path, sql: str, params: tuple[object, ...] = ()) -> list[dict[str, object]]:
    db = open_database(db_path)
    try:
        return db.query(sql, params)
    finally:
        db.close()


def file_hits(db_path: Path, marker: str) -> dict[str, int]:
    """How often the marker's bytes occur in the database file, its WAL and its shared-memory file.

    The fixed "zqx" prefix is left out of the search: a full-text index leaf stores a term after
    the prefix it shares with the term before it, so only the random part is sure to be contiguous.
    """
    marker = marker.removeprefix("zqx")
    hits = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = Path(str(db_path) + suffix)
        if path.exists():
            hits[suffix or "main"] = path.read_bytes().count(marker.encode())
    return hits


def record(client, event_id: str, text: str, **extra: object) -> dict[str, object]:
    return client.ok("memory_record", event_id=event_id, text=text, role="user", source="chat", **extra)


def test_forgetting_an_event_deletes_it_with_its_memories_cues_index_rows_and_vectors(client, db_path):
    record(client, "e1", "My locker code is 4711.", cues=[{"kind": "photo", "key": "IMG_1", "label": "locker"}])
    first = add_memory(db_path, "e1", "User's locker code is 4711", quote="locker code is 4711")
    second = add_memory(db_path, "e1", "User has a locker", quote="My locker")
    execute(db_path, "INSERT INTO event_vectors VALUES (1, 'm', 1, ?)", (bytes(4),))
    execute(
        db_path, "INSERT INTO memory_vectors SELECT id, 'm', 1, ? FROM memories WHERE memory_id = ?", (bytes(4), first)
    )
    out = client.ok("memory_forget", record_id="e1")
    assert out == {
        "deleted_event_ids": ["e1"],
        "deleted_memory_ids": [first, second],
        "invalidated_checkpoints": 0,
        "still_said_by": [],
        "warnings": [],
    }
    for record_id in ("e1", first, second):
        assert client.error("memory_read", record_id=record_id).startswith("not_found:")
    for table in ("events", "memories", "cues", "event_vectors", "memory_vectors"):
        assert query(db_path, f"SELECT count(*) AS n FROM {table}")[0]["n"] == 0
    assert fts_rowids(db_path, "events_fts", "locker") == []
    assert fts_rowids(db_path, "memories_fts", "locker") == []


def test_forgetting_by_memory_id_forgets_the_whole_source_event(client, db_path):
    record(client, "e1", "I have two cats, Tom and Kit.")
    tom = add_memory(db_path, "e1", "User has a cat named Tom", quote="Tom")
    kit = add_memory(db_path, "e1", "User has a cat named Kit", quote="Kit")
    record(client, "e2", "Unrelated: I like tea.")
    out = client.ok("memory_forget", record_id=kit)
    assert out["deleted_event_ids"] == ["e1"]
    assert out["deleted_memory_ids"] == [tom, kit]
    assert client.ok("memory_read", record_id="e2")["source_page"]["text"] == "Unrelated: I like tea."


def test_forgetting_cascades_through_a_correction_of_a_correction(client, db_path):
    record(client, "e1", "I work at Acme.")
    original = add_memory(db_path, "e1", "User works at Acme", subject="user.employer")
    first = client.ok("memory_correct", memory_id=original, content="User works at Apex", reason="Apex")
    second = client.ok("memory_correct", memory_id=first["replacement_id"], content="User works at Axis", reason="Axis")
    out = client.ok("memory_forget", record_id="e1")
    assert out["deleted_event_ids"] == ["e1", first["correction_event_id"], second["correction_event_id"]]
    assert out["deleted_memory_ids"] == [original, first["replacement_id"], second["replacement_id"]]
    for table in ("events", "memories", "corrections"):
        assert query(db_path, f"SELECT count(*) AS n FROM {table}")[0]["n"] == 0


def test_forgetting_a_correction_leaves_the_original_revoked_and_the_version_before_it_closed(client, db_path):
    record(client, "e1", "I work at Acme.", occurred_at="2024-01-01T00:00:00Z")
    record(client, "e0", "I worked at Zeta.", occurred_at="2023-01-01T00:00:00Z")
    older = add_memory(db_path, "e0", "User works at Zeta", subject="user.employer")
    original = add_memory(db_path, "e1", "User works at Acme", subject="user.employer")
    first = client.ok("memory_correct", memory_id=original, content="User works at Apex", reason="Apex")
    second = client.ok("memory_correct", memory_id=first["replacement_id"], content="User works at Axis", reason="Axis")
    out = client.ok("memory_forget", record_id=first["correction_event_id"])
    assert out["deleted_event_ids"] == [first["correction_event_id"], second["correction_event_id"]]
    assert out["deleted_memory_ids"] == [first["replacement_id"], second["replacement_id"]]
    back = client.ok("memory_read", record_id=original)["memory"]
    assert back["status"] == "revoked" and back["revoked_at"] is not None and back["replaced_by"] is None
    assert "correction was forgotten" in back["revoke_reason"] and "Apex" not in back["revoke_reason"]
    assert (back["supersedes"], back["superseded_by"]) == (None, None)  # revoked memories hold no links
    before = client.ok("memory_read", record_id=older)["memory"]
    assert (before["status"], before["valid_to"], before["superseded_by"]) == (
        "superseded",
        "2024-01-01T00:00:00.000000Z",
        None,
    )
    recalled = client.ok("memory_recall", query="works at", include_history=True)["memories"]
    assert [(m["memory_id"], m["status"]) for m in recalled] == [(older, "superseded")]
    # A later statement about the same subject continues the timeline from the closed version.
    record(client, "e2", "I work at Kappa now.", occurred_at="2025-01-01T00:00:00Z")
    later = add_memory(db_path, "e2", "User works at Kappa", subject="user.employer")
    assert client.ok("memory_read", record_id=older)["memory"]["superseded_by"] == later
    assert client.ok("memory_read", record_id=later)["memory"]["supersedes"] == older
    db = open_database(db_path)
    try:  # the crash suite's timeline rules (add_memory's pending events would break its extraction rule)
        for rule in ("one-sided timeline link", "superseded memory still open", "revoked memory without a replacement"):
            assert db.scalar(STRUCTURE[rule]) == 0, rule
    finally:
        db.close()


def test_forgetting_the_current_version_makes_the_previous_one_current_again(client, db_path):
    record(client, "e1", "I live in Paris.", occurred_at="2023-01-01T00:00:00Z")
    record(client, "e2", "I moved to Rome.", occurred_at="2024-01-01T00:00:00Z")
    paris = add_memory(db_path, "e1", "User lives in Paris", subject="user.city")
    add_memory(db_path, "e2", "User lives in Rome", subject="user.city")
    client.ok("memory_forget", record_id="e2")
    paris_now = client.ok("memory_read", record_id=paris)["memory"]
    assert (paris_now["status"], paris_now["valid_to"], paris_now["superseded_by"]) == ("current", None, None)


def test_forgetting_a_middle_version_links_its_neighbours(client, db_path):
    for event_id, year, city in (("e1", 2021, "Paris"), ("e2", 2022, "Rome"), ("e3", 2023, "Oslo")):
        record(client, event_id, f"I live in {city}.", occurred_at=f"{year}-01-01T00:00:00Z")
    paris = add_memory(db_path, "e1", "User lives in Paris", subject="user.city")
    add_memory(db_path, "e2", "User lives in Rome", subject="user.city")
    oslo = add_memory(db_path, "e3", "User lives in Oslo", subject="user.city")
    client.ok("memory_forget", record_id="e2")
    first = client.ok("memory_read", record_id=paris)["memory"]
    assert (first["superseded_by"], first["valid_to"]) == (oslo, "2023-01-01T00:00:00.000000Z")
    assert client.ok("memory_read", record_id=oslo)["memory"]["supersedes"] == paris


def test_a_second_forget_of_the_same_record_is_not_found(client, db_path):
    record(client, "e1", "Forget me.")
    memory = add_memory(db_path, "e1", "User wants to be forgotten", quote="Forget me")
    client.ok("memory_forget", record_id=memory)
    assert client.error("memory_forget", record_id=memory).startswith("not_found:")
    assert client.error("memory_forget", record_id="e1").startswith("not_found:")


def test_forget_of_a_record_in_another_scope_is_not_found_and_deletes_nothing(client):
    record(client, "e1", "Mine.")
    assert client.error("memory_forget", record_id="e1", project_id=OTHER.project_id).startswith("not_found:")
    assert client.ok("memory_read", record_id="e1")["source_page"]["text"] == "Mine."


def test_forget_invalidates_every_checkpoint_of_the_scope_and_erases_their_state(client, db_path):
    record(client, "e1", "Task notes.")
    for checkpoint_id, project, invalidated in (
        ("c1", "default", None),
        ("c2", "default", "2026-01-01"),
        ("c3", OTHER.project_id, None),
    ):
        execute(
            db_path,
            "INSERT INTO checkpoints (checkpoint_id, persona_id, project_id, session_id, covered_event_id,"
            " covered_sequence, state, created_at, invalidated_at) VALUES (?, 'default', ?, 'default', 'e1', 1,"
            " ?, '2026-01-01', ?)",
            (checkpoint_id, project, json.dumps({"goal": "Task notes."}), invalidated),
        )
    out = client.ok("memory_forget", record_id="e1")
    assert out["invalidated_checkpoints"] == 1
    rows = {r["checkpoint_id"]: r for r in query(db_path, "SELECT * FROM checkpoints")}
    assert rows["c1"]["invalidated_at"] is not None and rows["c1"]["state"] is None
    assert rows["c2"]["state"] is None and rows["c2"]["invalidated_at"] == "2026-01-01"
    assert rows["c3"]["invalidated_at"] is None and rows["c3"]["state"] is not None


@pytest.mark.sqlite_only  # PostgreSQL's files: tests/test_forget_postgres.py
def test_no_byte_of_the_forgotten_text_remains_in_the_database_files(client, db_path):
    marker = "zqx" + uuid.uuid4().hex[:12]
    for i in range(30):
        record(client, f"before-{i}", f"Filler message {i} about the weather and gardening.")
    record(client, "just-before", "We saw a quokka today.")
    long_text = f"The alarm code is {marker}. " + "padding words " * 2000 + f"Again: {marker}."
    record(client, "secret", long_text, cues=[{"kind": "photo", "key": "IMG_9", "label": f"photo of {marker}"}])
    add_memory(db_path, "secret", f"User's alarm code is {marker}", quote=f"The alarm code is {marker}")
    record(client, "next", "Thanks, noted.")
    for i in range(30):
        record(client, f"after-{i}", f"Later message {i} about cooking.")
    # The next event of the session is indexed with the forgotten event's tail as its context.
    assert fts_rowids(db_path, "events_fts", marker, "context")
    before = file_hits(db_path, marker)
    assert sum(before.values()) > 0, before
    client.ok("memory_forget", record_id="secret")
    assert file_hits(db_path, marker) == {"main": 0, "-wal": 0, "-shm": 0}
    assert Path(str(db_path) + "-wal").stat().st_size == 0
    hits = fts_rowids(db_path, "events_fts", "noted", "text")
    next_sequence = client.ok("memory_read", record_id="next")["event"]["sequence"]
    assert hits == [next_sequence]
    # Its context is now the surviving previous event.
    assert fts_rowids(db_path, "events_fts", "quokka", "context") == hits


def index_vocabulary(db_path: Path, table: str) -> list[str]:
    """Every term of a full-text table (fts5vocab), from a temporary table of a throwaway connection."""
    conn = apsw.Connection(str(db_path))
    try:
        conn.execute(f"CREATE VIRTUAL TABLE temp.vocab USING fts5vocab('main', '{table}', 'row')")
        return [row[0] for row in conn.execute("SELECT term FROM temp.vocab")]
    finally:
        conn.close()


@pytest.mark.sqlite_only  # PostgreSQL's files: tests/test_forget_postgres.py
def test_no_byte_of_forgotten_chinese_thai_or_arabic_text_remains_in_the_database_files(client, db_path):
    # The only non-Latin text of the archive, so after forgetting no n-gram term may remain at all.
    secret = "我的保险箱密码藏在书架后面。ตู้เซฟซ่อนอยู่หลังชั้นหนังสือ كلمة المرور مخبأة خلف المكتبة"
    words = [w for w in secret.replace("。", " ").split() if len(w) > 1]
    for i in range(10):
        record(client, f"before-{i}", f"Filler message {i} about the weather.")
    record(client, "secret", secret, cues=[{"kind": "text", "key": "safe", "label": "书架后面"}])
    add_memory(db_path, "secret", "保险箱密码藏在书架后面", quote="我的保险箱密码藏在书架后面")
    record(client, "next", "Thanks, noted.")
    for i in range(10):
        record(client, f"after-{i}", f"Later message {i} about cooking.")
    before = {word: sum(file_hits(db_path, word).values()) for word in words}
    assert all(before.values()), before
    assert "书架" in index_vocabulary(db_path, "events_ngrams") and index_vocabulary(db_path, "memories_ngrams")
    client.ok("memory_forget", record_id="secret")
    assert {word: file_hits(db_path, word) for word in words if sum(file_hits(db_path, word).values())} == {}
    assert index_vocabulary(db_path, "events_ngrams") == [] and index_vocabulary(db_path, "memories_ngrams") == []
    assert [term for term in index_vocabulary(db_path, "events_fts") if not term.isascii()] == []
    assert Path(str(db_path) + "-wal").stat().st_size == 0


def test_forgetting_in_one_scope_leaves_the_identical_text_of_another_scope_intact(client, db_path):
    marker = "zqx" + uuid.uuid4().hex[:12]
    for project in ("default", OTHER.project_id):
        client.ok(
            "memory_record",
            event_id=f"e-{project}",
            text=f"Shared secret {marker}.",
            role="user",
            source="chat",
            project_id=project,
        )
    kept = add_memory(db_path, f"e-{OTHER.project_id}", f"Secret is {marker}", quote=marker, scope=OTHER)
    client.ok("memory_forget", record_id="e-default")
    read = client.ok("memory_read", record_id=kept, project_id=OTHER.project_id)
    assert marker in read["memory"]["content"] and marker in read["source_page"]["text"]
    assert len(fts_rowids(db_path, "events_fts", marker)) == 1
    if not is_url(db_path):
        assert file_hits(db_path, marker)["main"] > 0


def sql_snapshot(db: Any) -> tuple[list[str], int]:
    """Problems seen in one read snapshot of the zebrafish records, and how many events it had."""
    with db.read():
        indexed = ",".join(map(str, fts_rowids(db, "memories_fts", "zebrafish"))) or "NULL"
        found = db.query(
            "SELECT m.event_sequence AS seq,"
            " (SELECT count(*) FROM events e WHERE e.sequence = m.event_sequence) AS has_event,"
            " (SELECT count(*) FROM memories o WHERE o.event_sequence = m.event_sequence) AS siblings"
            f" FROM memories m WHERE m.id IN ({indexed})"
        )
        fts_events = fts_rowids(db, "events_fts", "zebrafish")
        events_left = int(db.scalar("SELECT count(*) FROM events"))
    problems = [f"memory of missing event {r['seq']}" for r in found if not r["has_event"]]
    problems += [f"event {r['seq']} has {r['siblings']} memories" for r in found if r["siblings"] != 2]
    if not len(found) == 2 * len(fts_events) == 2 * events_left:
        problems.append(f"{len(found)} memories, {len(fts_events)} indexed events, {events_left} events")
    return problems, events_left


class Readers:
    """Reader threads with their own connections, observing while the main thread forgets."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.progress = threading.Condition()
        self.seen: dict[str, list[int]] = {}
        self.problems: list[str] = []

    def run(self, name: str, observe: Callable[[], tuple[list[str], int]]) -> threading.Thread:
        self.seen[name] = []

        def loop() -> None:
            try:
                while not self.done.is_set():
                    problems, size = observe()
                    with self.progress:
                        self.problems += [f"{name}: {p}" for p in problems]
                        self.seen[name].append(size)
                        self.progress.notify_all()
            except Exception as exc:  # a crashed reader must fail the test, not hang it
                with self.progress:
                    self.problems.append(f"{name} crashed: {exc!r}")
                    self.done.set()
                    self.progress.notify_all()

        thread = threading.Thread(target=loop)
        thread.start()
        return thread

    def wait_for_each(self) -> None:
        """Block until every reader has finished one more observation."""
        with self.progress:
            target = {name: len(seen) + 1 for name, seen in self.seen.items()}
            self.progress.wait_for(
                lambda: self.done.is_set() or all(len(self.seen[n]) >= t for n, t in target.items()), timeout=120
            )


def test_concurrent_readers_never_see_half_forgotten_records(settings, db_path):
    from memlikehuman.retrieval import recall

    count = 30
    with Engine(settings) as engine, Engine(settings) as other:
        for i in range(count):
            engine.record(Scope(), f"e{i}", f"Entry {i} with keyword zebrafish.", "user", "chat")
            add_memory(db_path, f"e{i}", f"Memory {i} about zebrafish", quote=f"Entry {i}")
            add_memory(db_path, f"e{i}", f"Second memory {i} about zebrafish", quote="zebrafish")

        def recalled() -> tuple[list[str], int]:
            result = recall.recall(other, Scope(), "zebrafish", limit=100)
            per_event = Counter(hit.memory.event_id for hit in result.memories)
            return [f"{e} has {n} memories" for e, n in per_event.items() if n != 2], len(per_event)

        readers = Readers()
        reader_db = open_database(db_path)
        threads = [readers.run("sql", lambda: sql_snapshot(reader_db)), readers.run("recall", recalled)]
        try:
            for i in range(count):
                readers.wait_for_each()
                forget.forget(engine.db, Scope(), f"e{i}")
        finally:
            readers.done.set()
            for thread in threads:
                thread.join()
            reader_db.close()
    assert readers.problems == []
    assert len(set(readers.seen["sql"])) > 2 and len(set(readers.seen["recall"])) > 2


@pytest.mark.sqlite_only  # SQLite's write-ahead log file
def test_a_reader_holding_a_snapshot_delays_the_wal_truncation_until_it_ends(engine, db_path):
    engine.record(Scope(), "e1", "Something to forget.", "user", "chat")
    assert forget.forget(engine.db, Scope(), "e1").scrubbed is True
    engine.record(Scope(), "e2", "Something else.", "user", "chat")
    wal = Path(str(db_path) + "-wal")
    reader = apsw.Connection(str(db_path))
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM events").fetchall()
        assert sqlite_scrub.scrub(engine.db, timeout_ms=10) is False
        assert wal.stat().st_size > 0
        reader.execute("COMMIT")
    finally:
        reader.close()
    assert sqlite_scrub.scrub(engine.db) is True
    assert wal.stat().st_size == 0


# Seconds a forget waits for a reader that a test holds past it (MEMLIKEHUMAN_FORGET_WAIT, 5 by default).
HELD_WAIT = 0.2


@pytest.mark.sqlite_only  # SQLite's write-ahead log file
def test_after_a_forget_that_could_not_clear_the_log_even_a_hooks_close_clears_it(settings, db_path):
    """A hook closes without the checkpoint, except while a forget's old page images wait in the WAL."""
    marker = "marker-word-qz"
    engine = Engine(settings)
    engine.record(Scope(), "e1", f"Something to forget: {marker}.", "user", "chat")
    reader = apsw.Connection(str(db_path))
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM events").fetchall()  # the truncation must wait for it
        assert forget.forget(engine.db, Scope(), "e1", wait=HELD_WAIT).scrubbed is False
    finally:
        reader.execute("COMMIT")
        reader.close()
    wal = Path(str(db_path) + "-wal")
    assert marker.encode() in wal.read_bytes()
    engine.close(checkpoint=False)  # the last connection, closed as a hook closes it
    assert not wal.exists() or marker.encode() not in wal.read_bytes()
    assert not Path(str(db_path) + "-unscrubbed").exists()  # the WAL is gone: later hooks skip the checkpoint
    assert marker.encode() not in Path(db_path).read_bytes()
    with Engine(settings) as engine:
        assert sqlite_scrub.scrub(engine.db) is True  # and once truncated, hooks leave the WAL again
    assert not Path(str(db_path) + "-unscrubbed").exists()


@pytest.mark.sqlite_only  # SQLite's write-ahead log file
def test_a_forget_that_could_not_clear_the_write_ahead_log_says_so_in_its_warnings(db_path):
    settings = make_settings(db_path, MEMLIKEHUMAN_FORGET_WAIT=str(HELD_WAIT))
    with connected(build_server(settings)) as client:
        client.ok("memory_record", event_id="e1", text="Something to forget.", role="user", source="chat")
        reader = apsw.Connection(str(db_path))
        try:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM events").fetchall()  # a snapshot the checkpoint must wait for
            started = time.monotonic()
            held = client.ok("memory_forget", record_id="e1")
            waited = time.monotonic() - started
        finally:
            reader.execute("COMMIT")
            reader.close()
        client.ok("memory_record", event_id="e2", text="Something else.", role="user", source="chat")
        clear = client.ok("memory_forget", record_id="e2")
    assert len(held["warnings"]) == 1 and "-wal file" in held["warnings"][0]
    assert clear["warnings"] == []
    assert waited < Settings.forget_wait  # the server read MEMLIKEHUMAN_FORGET_WAIT, not the default 5 s


@pytest.mark.parametrize("record_id", ["", "x" * 257])
def test_an_invalid_record_id_is_refused(client, record_id):
    assert client.error("memory_forget", record_id=record_id).startswith("invalid_argument:")


def test_a_forget_while_a_rebuild_refills_the_full_text_index_succeeds_and_leaves_it_whole(settings, db_path):
    from memlikehuman.archive import fulltext

    scope = Scope()
    with Engine(settings) as engine:
        for i in range(6):
            engine.record(scope, f"e{i}", f"turn {i} about the quokka{i}", "user", "chat", session_id="s1")
        fulltext.clear(engine.db)  # reindex's first step; another process forgets before the refill
        assert engine.forget(scope, "e2").deleted_event_ids == ("e2",)
        fulltext.fill_missing(engine.db)
        assert fts_rowids(engine.db, "events_fts", "quokka3") and not fts_rowids(engine.db, "events_fts", "quokka2")
        assert [hit.event.event_id for hit in engine.recall(scope, "quokka4").raw_fallback][:1] == ["e4"]
