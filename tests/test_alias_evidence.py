"""Speaker aliases kept per scope with their evidence events: recorded, shown, forgotten, backfilled."""

from __future__ import annotations

import dataclasses
import io
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from cli_support import cli, json_out
from conftest import make_settings
from test_forget import file_hits

from memlikehuman.archive import alias_evidence, fulltext
from memlikehuman.archive.backend import backend_of
from memlikehuman.archive.db import open_database
from memlikehuman.archive.migrations import MIGRATIONS
from memlikehuman.archive.postgres import pg_schema
from memlikehuman.archive.schema import migrate
from memlikehuman.engine import Engine
from memlikehuman.records import HistoryMessage, HistoryReport, Scope, SpeakerAlias
from memlikehuman.retrieval.recall import DEFAULT_TUNING, recall

HOME = Scope("mia", "garden")
OTHER = Scope("mia", "work")
# Caroline calls Melanie "Mel" twice (an alias) and once addresses the dog Max (no alias).
CHAT = [
    ("m1", "Melanie", "I finally finished the painting of the lake."),
    ("c1", "Caroline", "Hey Mel! That sounds gorgeous."),
    ("m2", "Melanie", "Thanks! I used the new brushes."),
    ("c2", "Caroline", "You always pick great colours, Mel!"),
    ("m3", "Melanie", "My dog Max loves the lake too."),
    ("c3", "Caroline", "Thanks! Appreciate it. Hey Max!"),
]
MEL = SpeakerAlias("Melanie", "Mel", 2, "c1")


def record_chat(engine: Engine, scope: Scope = HOME, chat: list[tuple[str, str, str]] = CHAT, prefix: str = "") -> None:
    for event_id, speaker, text in chat:
        engine.record(scope, prefix + event_id, text, "user", speaker, session_id="s1")


def rows(engine: Engine) -> list[tuple[str, str, str, str]]:
    """(evidence event, addressed event, speaker, name) of every row, in order."""
    return [
        (r["evidence"], r["addressed"], r["speaker"], r["name"])
        for r in engine.db.query(
            "SELECT e.event_id AS evidence, p.event_id AS addressed, a.speaker, a.name FROM alias_evidence a"
            " JOIN events e ON e.sequence = a.event_sequence JOIN events p ON p.sequence = a.addressed_sequence"
            " ORDER BY a.event_sequence, a.name"
        )
    ]


def rebuilt(engine: Engine) -> list[tuple[str, str, str, str]]:
    """The rows today's code derives from the stored events from scratch (what a backfill writes)."""
    with engine.db.write() as conn:
        conn.execute("DELETE FROM alias_evidence")
        conn.execute("INSERT INTO alias_backfill (done, upto) SELECT 0, max(sequence) FROM events")
    alias_evidence.complete(engine.db)
    return rows(engine)


def test_recorded_turns_teach_the_scope_an_alias_with_its_evidence_events(engine: Engine) -> None:
    record_chat(engine)
    assert rows(engine) == [
        ("c1", "m1", "Melanie", "Mel"),
        ("c2", "m2", "Melanie", "Mel"),
        ("c3", "m3", "Melanie", "Max"),
    ]
    assert alias_evidence.scope_aliases(engine.db, HOME) == [MEL]
    assert engine.stats().scopes[0].aliases == (MEL,)


def test_memory_read_of_an_evidence_event_shows_the_aliases_it_supports(engine: Engine) -> None:
    record_chat(engine)
    assert engine.read(HOME, "c2").aliases == (MEL,)
    # Max is addressed once: shown as evidence, but not (yet) an alias.
    assert engine.read(HOME, "c3").aliases == (SpeakerAlias("Melanie", "Max", 1, "c3", learned=False),)
    assert engine.read(HOME, "m1").aliases == ()


def test_memory_read_over_mcp_lists_the_aliases_of_the_event(client: Any) -> None:
    for event_id, speaker, text in CHAT:
        client.ok("memory_record", event_id=event_id, text=text, role="user", source=speaker, session_id="s1")
    read = client.ok("memory_read", record_id="c1")
    assert read["aliases"] == [{"speaker": "Melanie", "name": "Mel", "evidence": 2, "event_id": "c1", "learned": True}]
    assert client.ok("memory_read", record_id="m1")["aliases"] == []


def test_aliases_stay_in_their_scope(engine: Engine) -> None:
    record_chat(engine, HOME, CHAT[:2])  # one "Hey Mel!" here ...
    record_chat(engine, OTHER, CHAT[2:4], prefix="o-")  # ... and one there: neither scope has two
    assert alias_evidence.scope_aliases(engine.db, HOME) == []
    assert alias_evidence.scope_aliases(engine.db, OTHER) == []
    record_chat(engine, OTHER, CHAT, prefix="o2-")
    assert alias_evidence.scope_aliases(engine.db, HOME) == []
    assert [(a.speaker, a.name, a.evidence) for a in alias_evidence.scope_aliases(engine.db, OTHER)] == [
        ("Melanie", "Mel", 3)
    ]
    assert [scope.aliases for scope in engine.stats("mia", "garden").scopes] == [()]
    assert engine.read(HOME, "c1").aliases == (SpeakerAlias("Melanie", "Mel", 1, "c1", learned=False),)


def test_forgetting_an_evidence_event_removes_the_alias_it_made(engine: Engine) -> None:
    record_chat(engine)
    engine.forget(HOME, "c2")
    assert alias_evidence.scope_aliases(engine.db, HOME) == []
    assert engine.read(HOME, "c1").aliases == (SpeakerAlias("Melanie", "Mel", 1, "c1", learned=False),)
    assert engine.stats().scopes[0].aliases == ()


def test_forgetting_the_answered_turn_takes_its_rows_and_the_next_turn_answers_the_one_before(engine: Engine) -> None:
    record_chat(engine)
    engine.forget(HOME, "m2")  # c2 now follows c1: Caroline answering herself is no evidence
    assert rows(engine) == [("c1", "m1", "Melanie", "Mel"), ("c3", "m3", "Melanie", "Max")]
    engine.forget(HOME, "c1")  # c2 now follows m1 again: "Mel" is Melanie's once more
    assert rows(engine) == [("c2", "m1", "Melanie", "Mel"), ("c3", "m3", "Melanie", "Max")]
    assert rows(engine) == rebuilt(engine)


@pytest.mark.sqlite_only  # PostgreSQL's files: tests/test_forget_postgres.py
def test_no_byte_of_a_forgotten_alias_name_remains_in_the_database_files(engine: Engine, db_path: Path) -> None:
    name = "Zq" + uuid.uuid4().hex[:10]  # a name: a capital, then lower-case letters only
    name = name[:2] + "".join(chr(ord("a") + int(c, 16)) for c in name[2:])
    chat = [("z1", "Robert", "I fixed the fence."), ("z2", "Ann", f"Thanks, {name}!")] * 3
    for i, (event_id, speaker, text) in enumerate(chat):
        engine.record(HOME, f"{event_id}-{i}", text, "user", speaker, session_id="s1")
    assert [a.name for a in alias_evidence.scope_aliases(engine.db, HOME, learned_only=False)] == [name]
    assert sum(file_hits(db_path, name).values()) > 0
    for i in (1, 3, 5):
        engine.forget(HOME, f"z2-{i}")
    assert rows(engine) == []
    assert file_hits(db_path, name) == {"main": 0, "-wal": 0, "-shm": 0}


def test_a_hosts_chat_names_the_user_by_role_and_skips_tool_turns(engine: Engine) -> None:
    turns = [
        ("h1", "user", "Can you help me plan the garden?"),
        ("h2", "assistant", "Of course, Anna! Where is it?"),
        ("h3", "tool", "Thanks, Anna!"),  # a tool result is no turn
        ("h4", "user", "Behind the house. Thanks, Claude!"),
    ]
    for event_id, role, text in turns:
        engine.record(HOME, event_id, text, role, "claude-code", session_id="s1")
    assert rows(engine) == [("h2", "h1", "user", "Anna"), ("h4", "h2", "assistant", "Claude")]


def test_a_reference_document_is_no_evidence(engine: Engine) -> None:
    engine.record(HOME, "r1", "I made tea.", "user", "Melanie", session_id="s1")
    engine.record(HOME, "r2", "A quote: Hey Mel!", "user", "Caroline", category="reference", session_id="s1")
    assert rows(engine) == []


def test_an_import_writes_the_rows_a_record_writes(tmp_path: Path, engine: Engine) -> None:
    record_chat(engine)
    exported = "".join(engine.export_lines(None, None)).encode()
    with Engine(make_settings(tmp_path / "copy.sqlite3")) as copy:
        copy.import_lines(io.BytesIO(exported))
        assert rows(copy) == rows(engine)


def test_a_history_import_writes_the_rows_a_record_writes(engine: Engine) -> None:
    messages = [
        HistoryMessage(f"chatgpt:s1:{i}", "s1", role, text, None, "chatgpt")
        for i, (role, text) in enumerate([("user", "Plan my week."), ("assistant", "Sure thing, Anna!")] * 5)
    ]
    engine.import_history(messages, HistoryReport(), "mia", "garden")
    assert rows(engine) == [(f"chatgpt:s1:{i + 1}", f"chatgpt:s1:{i}", "user", "Anna") for i in range(0, 10, 2)]
    # A name unlike the label ("user") needs aliases.MIN_UNLIKE turns: five here.
    assert alias_evidence.scope_aliases(engine.db, HOME) == [SpeakerAlias("user", "Anna", 5, "chatgpt:s1:1")]
    # A role is in no event's attribution: recall does not phrase queries with it.
    assert alias_evidence.named_speakers(engine.db, HOME) == []


def test_stats_lists_the_aliases_of_each_scope(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    with Engine(make_settings(db)) as engine:
        record_chat(engine)
        record_chat(engine, OTHER, CHAT[:2], prefix="o-")
    report = json_out(cli(db, "stats", "--json"))
    by_scope = {(s["persona_id"], s["project_id"]): s["aliases"] for s in report["scopes"]}
    assert by_scope == {
        ("mia", "garden"): [{"speaker": "Melanie", "name": "Mel", "evidence": 2, "event_id": "c1", "learned": True}],
        ("mia", "work"): [],
    }
    shown = cli(db, "stats")
    assert shown.exit_code == 0, shown.output
    assert "  mia/garden: Melanie = Mel (2 turns, first c1)" in shown.output


def _ids(engine: Engine, scope: Scope, query: str, **options: Any) -> list[str]:
    return [hit.event.event_id for hit in recall(engine, scope, query, limit=5, **options).raw_fallback]


def test_recall_finds_a_speakers_turns_when_the_query_calls_them_by_an_alias(engine: Engine) -> None:
    record_chat(engine)
    engine.record(HOME, "c4", "Did you paint anything new?", "user", "Caroline", session_id="s2")
    engine.record(HOME, "m4", "Yes, a portrait of my sister.", "user", "Melanie", session_id="s2")
    off = dataclasses.replace(DEFAULT_TUNING, speaker_aliases=False)
    assert "m4" in _ids(engine, HOME, "What did Mel paint?")
    assert "m4" not in _ids(engine, HOME, "What did Mel paint?", tuning=off)
    # The query is searched as before, and once more with the label: both count as the query's own,
    # so each one's best leads, and the label's finds weigh more than an agent's guess would.
    found = _ids(engine, HOME, "What did Mel paint?")
    plain = _ids(engine, HOME, "What did Mel paint?", tuning=off)
    relabelled = _ids(engine, HOME, "What did Melanie paint?", tuning=off)
    assert set(found[:2]) == {plain[0], relabelled[0]}
    as_guess = _ids(engine, HOME, "What did Mel paint?", alternatives=["What did Melanie paint?"], tuning=off)
    assert "m4" not in as_guess
    # Another scope's aliases never phrase a query.
    record_chat(engine, OTHER, [("x1", "Melanie", "I painted a boat."), ("x2", "Caroline", "Hey Mel!")], prefix="o-")
    assert alias_evidence.named_speakers(engine.db, OTHER) == []
    assert _ids(engine, OTHER, "What did Mel paint?") == _ids(engine, OTHER, "What did Mel paint?", tuning=off)


# -- archives recorded before the migration ------------------------------------------------------


def _old_archive(db_path: Any, chat: list[tuple[str, str, str]]) -> None:
    """An archive of the schema before alias_evidence, its events written by plain SQL."""
    db = open_database(db_path)
    try:
        listed = pg_schema.MIGRATIONS if backend_of(db).name == "postgres" else MIGRATIONS
        names = [fn.__name__ for fn in listed]
        alias = names.index("p002_alias_evidence" if backend_of(db).name == "postgres" else "m009_alias_evidence")
        migrate(db, upto=alias)
        with db.write() as conn:
            for i, (event_id, speaker, text) in enumerate(chat):
                conn.execute(
                    "INSERT INTO events (event_id, persona_id, project_id, session_id, role, source, category, kind,"
                    " text, occurred_at, occurred_at_given, recorded_at, payload_hash, extraction_state)"
                    " VALUES (?, ?, ?, 's1', 'user', ?, 'conversation', 'record', ?, ?, 1, ?, ?, 'pending')",
                    (event_id, HOME.persona_id, HOME.project_id, speaker, text, *[f"2026-01-01T10:0{i}:00Z"] * 2)
                    + (f"hash-{event_id}",),
                )
                fulltext.index_event(conn, int(conn.last_insert_rowid()))
    finally:
        db.close()


def test_opening_an_older_archive_backfills_the_evidence_of_its_events(db_path: Any) -> None:
    _old_archive(db_path, CHAT)
    with Engine(make_settings(db_path)) as engine:
        assert not alias_evidence.behind(engine.db)
        assert alias_evidence.scope_aliases(engine.db, HOME) == [MEL]
        record_chat(engine, HOME, [("m9", "Melanie", "Thanks, Caro!")], prefix="new-")
        # Recorded after the upgrade, answering a turn recorded before it.
        assert rows(engine)[-1] == ("new-m9", "c3", "Caroline", "Caro")
        assert rows(engine) == rebuilt(engine)


def test_an_interrupted_backfill_is_finished_by_the_next_one(db_path: Any) -> None:
    _old_archive(db_path, CHAT)
    db = open_database(db_path)
    try:
        migrate(db)
        assert alias_evidence.behind(db)

        def stop(done: int, upto: int) -> None:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            alias_evidence.complete(db, stop, batch=2)
        assert alias_evidence.behind(db)
        assert db.scalar("SELECT count(*) FROM alias_evidence") == 1  # the first batch: m1, c1
        assert alias_evidence.complete(db, batch=2) == 4
        assert not alias_evidence.behind(db)
        assert db.scalar("SELECT count(*) FROM alias_evidence") == 3
    finally:
        db.close()


def test_a_hooks_engine_writes_backfill_batches_only_within_its_budget(db_path: Any) -> None:
    _old_archive(db_path, CHAT)
    with Engine(make_settings(db_path), backfill_seconds=0) as engine:  # a budget spent at once
        assert alias_evidence.behind(engine.db) and rows(engine) == []
        assert [hit.event.event_id for hit in recall(engine, HOME, "painting lake").raw_fallback][:1] == ["m1"]
        assert alias_evidence.complete(engine.db, batch=2, deadline=time.monotonic()) == 0
        # A batch that ends after the deadline is the last one: the progress report outlasts the budget.
        late = time.monotonic() + 0.05
        assert alias_evidence.complete(engine.db, lambda done, upto: time.sleep(0.1), batch=2, deadline=late) == 2
        assert alias_evidence.behind(engine.db)
    with Engine(make_settings(db_path)) as engine:  # the next engine without a budget finishes it
        assert not alias_evidence.behind(engine.db)
        assert alias_evidence.scope_aliases(engine.db, HOME) == [MEL]
        assert rows(engine) == rebuilt(engine)


def test_an_n_gram_backfill_starts_no_batch_after_its_deadline(engine: Engine) -> None:
    record_chat(engine)
    with engine.db.write() as conn:
        for table in fulltext.NGRAM_TABLES.values():
            if backend_of(engine.db).name == "postgres":
                conn.execute(f"DELETE FROM {table}")
            else:
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")
    assert fulltext.ngrams_behind(engine.db)
    assert fulltext.complete_ngrams(engine.db, deadline=time.monotonic()).events == 0
    assert fulltext.ngrams_behind(engine.db)
    assert fulltext.complete_ngrams(engine.db, deadline=time.monotonic() + 60).events == len(CHAT)
    assert not fulltext.ngrams_behind(engine.db)


# -- scopes sharing a session ID, and a forget between the reads of a recall ------------------------


def test_a_turn_of_another_scope_in_the_same_session_is_never_the_previous_turn(tmp_path: Path, engine: Engine) -> None:
    turns = [
        (HOME, "a0", "Melanie", "I painted the lake."),
        (HOME, "a1", "Dave", "Me too."),
        (OTHER, "b1", "Zed", "I went fishing."),  # the latest turn of session s1 before a2, in another scope
        (HOME, "a2", "Caroline", "Hey Mel!"),
        (OTHER, "b2", "Yan", "Thanks, Zed!"),
    ]
    for scope, event_id, speaker, text in turns:
        engine.record(scope, event_id, text, "user", speaker, session_id="s1")
    assert rows(engine) == [("a2", "a1", "Dave", "Mel"), ("b2", "b1", "Zed", "Zed")]
    exported = "".join(engine.export_lines(None, None)).encode()
    with Engine(make_settings(tmp_path / "copy.sqlite3")) as copy:
        copy.import_lines(io.BytesIO(exported))
        assert rows(copy) == rows(engine)
    # a2 answers a0 now: the next turn of a1's own scope is re-derived, not b1 of the other scope.
    engine.forget(HOME, "a1")
    assert rows(engine) == [("a2", "a0", "Melanie", "Mel"), ("b2", "b1", "Zed", "Zed")]
    assert rows(engine) == rebuilt(engine)


@pytest.mark.sqlite_only  # SQLite's statement trace puts the other connection's forget between two reads
def test_a_recall_while_another_connection_forgets_the_first_evidence_event(engine: Engine, db_path: Path) -> None:
    record_chat(engine)
    forgot: list[str] = []

    def forget_between_the_reads(cursor: Any, sql: str, bindings: Any) -> bool:
        # The reads of the scope's aliases have counted c1 as the first "Mel"; now it goes.
        if not forgot and sql.startswith("SELECT sequence, event_id FROM events WHERE sequence IN"):
            # The recall's read transaction outlasts any wait for the WAL: the forget does not wait.
            with Engine(make_settings(db_path, MEMLIKEHUMAN_FORGET_WAIT="0")) as other:
                forgot.append(other.forget(HOME, "c1").deleted_event_ids[0])
        return True

    engine.db.conn.exec_trace = forget_between_the_reads
    try:
        hits = _ids(engine, HOME, "What did Mel paint?")
    finally:
        engine.db.conn.exec_trace = None
    assert forgot == ["c1"]
    assert "c1" not in hits
