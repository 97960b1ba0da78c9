"""What a forget takes, by recorded provenance (lifecycle/forget_plan.py): a memory goes with the last event
that states it, and a memory whose making was shown what goes goes when it holds a word only that said."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import add_memory, make_settings
from openai_stub import Reply, ScriptedOpenAI, extraction_reply, memory_item
from reliability.support import STRUCTURE
from test_extraction import extractor_settings

from memlikehuman.archive import events, memories
from memlikehuman.archive.db import open_database
from memlikehuman.archive.sources import Shown
from memlikehuman.engine import Engine
from memlikehuman.records import Candidate, Scope

DEFAULT = Scope()
EVENT_BLOCK = "EVENT (extract from this text)>>>"


def record(client: Any, event_id: str, text: str, source: str = "chat", **extra: object) -> dict[str, Any]:
    return dict(client.ok("memory_record", event_id=event_id, text=text, role="user", source=source, **extra))


def query(db_path: Path | str, sql: str) -> list[dict[str, Any]]:
    db = open_database(db_path)
    try:
        return list(db.query(sql))
    finally:
        db.close()


def made(
    db_path: Path | str,
    event_id: str,
    content: str,
    *,
    quote: str,
    shown_events: tuple[str, ...] = (),
    shown_memories: tuple[str, ...] = (),
    subject: str | None = None,
    target: str | None = None,
) -> str | None:
    """Store an item as an extraction whose prompt showed these events and memories stores it; its memory
    ID, or None when it was not stored again (it repeats a memory: the event became a further source)."""
    db = open_database(db_path)
    try:
        event = events.find(db, DEFAULT, event_id)
        shown = Shown(
            tuple(events.find(db, DEFAULT, e).sequence for e in shown_events),
            tuple(memories.find(db, DEFAULT, m).rowid for m in shown_memories),
        )
        rowid = None if target is None else memories.find(db, DEFAULT, target).rowid
        item = Candidate(content, quote, "fact", "stated", subject, event.occurred_at)
        stored, _ = memories.store(db, event, [item], event.recorded_at, targets=[rowid], shown=shown)
        return None if not stored else str(db.scalar("SELECT memory_id FROM memories WHERE id = ?", (stored[0],)))
    finally:
        db.close()


def status(client: Any, memory_id: str) -> str:
    return str(client.ok("memory_read", record_id=memory_id)["memory"]["status"])


def rules_hold(db_path: Path | str) -> None:
    db = open_database(db_path)
    try:
        for rule, sql in STRUCTURE.items():  # the test stores on events left pending: that rule is not ours
            if "half-extracted" not in rule and "full-text" not in rule and "n-gram" not in rule:
                assert db.scalar(sql) == 0, rule
    finally:
        db.close()


# -- through the extractor: what its prompt showed is recorded with each memory -------------------------


def by_event(answers: dict[str, list[dict[str, Any]]]) -> Callable[[dict[str, Any]], Reply]:
    """A scripted model that answers each extraction with the items listed for its EVENT's text."""

    def answer(body: dict[str, Any]) -> Reply:
        block = body["messages"][1]["content"].rsplit(EVENT_BLOCK, 1)[1]
        return extraction_reply(*next(items for text, items in answers.items() if text in block))

    return answer


@pytest.fixture
def extracting(db_path: Path | str) -> Iterator[Callable[[dict[str, list[dict[str, Any]]]], Engine]]:
    """An engine whose OpenAI-compatible extractor answers from a script (set per test)."""
    with ScriptedOpenAI() as api, Engine(extractor_settings(db_path, api.base_url)) as engine:

        def start(answers: dict[str, list[dict[str, Any]]]) -> Engine:
            api.default_chat = by_event(answers)
            return engine

        yield start


def conversation(engine: Engine, texts: list[str]) -> list[tuple[str, ...]]:
    """Record the texts as turns e1, e2, ... of one session (each extracted at once); their memory IDs."""
    for number, text in enumerate(texts, start=1):
        engine.record(DEFAULT, f"e{number}", text, "user", "chat", session_id="s1")
    return [engine.read(DEFAULT, f"e{n}").event.memory_ids for n in range(1, len(texts) + 1)]


def test_a_forgotten_name_takes_the_next_turns_memory_that_names_it_and_leaves_the_memory_of_the_turn_after(
    extracting,
):
    sister, moved, tea = "My sister is called emma kowalski.", "She moved to Oslo last year.", "I like tea."
    engine = extracting(
        {
            sister: [memory_item("The user's sister is called Emma Kowalski", "My sister is called emma kowalski")],
            moved: [memory_item("Emma Kowalski moved to Oslo", "She moved to Oslo")],
            tea: [memory_item("The user likes tea", "I like tea")],
        }
    )
    (first,), (oslo,), (liked,) = conversation(engine, [sister, moved, tea])
    result = engine.forget(DEFAULT, "e1")
    assert result.deleted_event_ids == ("e1",) and set(result.deleted_memory_ids) == {first, oslo}
    assert engine.read(DEFAULT, "e2").event.memory_ids == ()
    assert engine.read(DEFAULT, liked).memory is not None


def test_a_name_in_a_script_without_spaces_or_opening_a_sentence_is_taken_too(extracting):
    engine = extracting(
        {
            "我的妹妹叫王芳。": [memory_item("用户的妹妹叫王芳", "我的妹妹叫王芳")],
            "她搬到了奥斯陆。": [memory_item("王芳搬到了奥斯陆", "她搬到了奥斯陆")],
            "我喜欢喝茶。": [memory_item("用户喜欢喝茶", "我喜欢喝茶")],
            "Emma is my sister.": [memory_item("Emma is the user's sister", "Emma is my sister")],
            "She lives in Bergen.": [memory_item("Emma lives in Bergen", "She lives in Bergen")],
        }
    )
    found = conversation(engine, ["我的妹妹叫王芳。", "她搬到了奥斯陆。", "我喜欢喝茶。"])
    engine.record(DEFAULT, "f1", "Emma is my sister.", "user", "chat", session_id="s2")
    engine.record(DEFAULT, "f2", "She lives in Bergen.", "user", "chat", session_id="s2")
    assert set(engine.forget(DEFAULT, "e1").deleted_memory_ids) == {*found[0], *found[1]}
    assert engine.read(DEFAULT, found[2][0]).memory is not None
    bergen = engine.read(DEFAULT, "f2").event.memory_ids
    assert set(engine.forget(DEFAULT, "f1").deleted_memory_ids) >= set(bergen)


# -- the rules, on memories stored as an extraction stores them -----------------------------------------


def test_a_word_another_source_holds_keeps_the_memory_a_shown_memory_or_the_speaker_of_its_event(client, db_path):
    record(client, "e0", "My sister is Ana.")
    ana = made(db_path, "e0", "The user's sister is Ana", quote="My sister is Ana")
    fixed = client.ok("memory_correct", memory_id=ana, content="The user's sister is Emma", reason="her name")
    record(client, "e1", "I told Emma about the trip to Maria's.", source="Ben")
    record(client, "e2", "She liked it.", source="Maria")
    liked = made(db_path, "e2", "Emma liked it at Maria's", quote="She liked it", shown_events=("e1",),
                 shown_memories=(fixed["replacement_id"],))  # fmt: skip
    assert client.ok("memory_forget", record_id="e1")["deleted_memory_ids"] == []
    assert status(client, str(liked)) == "current"


def test_a_word_other_turns_of_the_scope_say_too_is_no_trace_of_the_forgotten_one(client, db_path):
    record(client, "e0", "Remember: I said the build must stay green.")
    record(client, "e1", "I like tea.")
    tea = made(db_path, "e1", "The user said they like tea", quote="I like tea", shown_events=("e0",))
    record(client, "e2", "Ben said hello to everyone.", session_id="other")
    # "said" is the extractor's phrasing here, and another turn of the scope says it too.
    assert client.ok("memory_forget", record_id="e0")["deleted_memory_ids"] == []
    assert status(client, str(tea)) == "current"


def test_a_memory_whose_making_was_not_shown_the_event_is_not_taken_whatever_it_says(client, db_path):
    record(client, "e1", "Ich habe eine Katze aus Sansibar.")
    record(client, "e2", "Ich plane eine Reise.", session_id="later")
    # Made from a prompt that did not show e1 (another session; the agent's own words): no trace of e1.
    trip = made(db_path, "e2", "Der Nutzer plant eine Reise nach Sansibar", quote="Ich plane eine Reise")
    assert len(client.ok("memory_forget", record_id="e1")["deleted_memory_ids"]) == 0
    assert status(client, str(trip)) == "current"


def test_a_memory_shown_a_memory_that_goes_goes_when_it_holds_what_only_that_said(client, db_path):
    record(client, "e1", "My sister is called emma kowalski.")
    sister = made(db_path, "e1", "The user's sister is Emma Kowalski", quote="sister is called emma kowalski")
    record(client, "e2", "Lunch was fine.")
    record(client, "e3", "Lunch was fine.", session_id="other")
    record(client, "e4", "She called.", session_id="other")
    called = made(db_path, "e4", "Kowalski called the user", quote="She called", shown_memories=(str(sister),))
    tea = made(db_path, "e3", "The user had lunch", quote="Lunch was fine", shown_memories=(str(sister),))
    out = client.ok("memory_forget", record_id="e1")
    assert set(out["deleted_memory_ids"]) == {sister, called}
    assert status(client, str(tea)) == "current"


def test_a_word_only_another_event_the_forget_takes_said_does_not_take_a_memory_made_beside_it(client, db_path):
    # The correction of the forgotten turn's memory goes too, and its reason says "said"; the piano
    # memory, made with the forgotten turn and its memory shown, has "said" from the extractor's phrasing
    # (as the shown memory has), which no event shown to its making said.
    record(client, "e1", "My sister is called Emma.")
    sister = made(db_path, "e1", "The user said their sister is Emma", quote="My sister is called Emma")
    fixed = client.ok("memory_correct", memory_id=sister, content="The user's sister is Emma Kowalska",
                      reason="the user said her full name")  # fmt: skip
    record(client, "e2", "I play the piano.")
    piano = made(db_path, "e2", "The user said they play the piano", quote="I play the piano", shown_events=("e1",),
                 shown_memories=(str(sister),))  # fmt: skip
    out = client.ok("memory_forget", record_id="e1")
    assert out["deleted_event_ids"] == ["e1", fixed["correction_event_id"]]
    assert set(out["deleted_memory_ids"]) == {sister, fixed["replacement_id"]}
    assert status(client, str(piano)) == "current"


def test_a_version_closed_by_a_taken_memory_stays_closed_and_its_corrections_go(client, db_path):
    record(client, "e0", "My sister lives in Paris.", occurred_at="2024-01-01T00:00:00Z")
    paris = add_memory(db_path, "e0", "The user's sister lives in Paris", subject="user.sister.city")
    record(client, "e1", "My sister is called emma kowalski.", occurred_at="2024-02-01T00:00:00Z")
    record(client, "e2", "She moved to Oslo.", occurred_at="2024-03-01T00:00:00Z")
    oslo = made(db_path, "e2", "Emma Kowalski moved to Oslo", quote="She moved to Oslo", shown_events=("e1",),
                subject="user.sister.city")  # fmt: skip
    fixed = client.ok("memory_correct", memory_id=oslo, content="Emma Kowalski moved to Bergen", reason="Bergen")
    out = client.ok("memory_forget", record_id="e1")
    assert out["deleted_event_ids"] == ["e1", fixed["correction_event_id"]]
    assert set(out["deleted_memory_ids"]) == {oslo, fixed["replacement_id"]}
    before = client.ok("memory_read", record_id=paris)["memory"]
    assert (before["status"], before["valid_to"], before["superseded_by"]) == (
        "superseded",
        "2024-03-01T00:00:00.000000Z",
        None,
    )
    assert client.ok("memory_read", record_id="e2")["source_page"]["text"] == "She moved to Oslo."
    assert query(db_path, "SELECT content FROM memories WHERE content LIKE '%owalski%'") == []
    rules_hold(db_path)


def test_a_word_of_a_huge_forgotten_text_is_judged_like_any_other(client, db_path):
    dump = "a1" * 30_000
    record(client, "e1", f"Here is the dump: {dump} and zorblax.")
    record(client, "e2", "Noted.")
    noted = made(db_path, "e2", f"A long value starts with {dump[:40]}", quote="Noted", shown_events=("e1",))
    zorblax = made(db_path, "e2", "zorblax was mentioned", quote="Noted", shown_events=("e1",))
    assert client.ok("memory_forget", record_id="e1")["deleted_memory_ids"] == [zorblax]  # a prefix is another word
    assert status(client, str(noted)) == "current"


# -- a fact stated twice ---------------------------------------------------------------------------------


def test_a_fact_stated_twice_keeps_its_memory_id_when_either_statement_is_forgotten_and_goes_with_both(client, db_path):
    for first_gone in (True, False):
        suffix = "a" if first_gone else "b"
        record(client, f"{suffix}1", "I work at Acme as a welder.")
        acme = made(db_path, f"{suffix}1", "User works at Acme", quote="I work at Acme", subject="user.employer")
        record(client, f"{suffix}2", "As I said, I WORK at Acme.")
        assert made(db_path, f"{suffix}2", "user works at  acme", quote="I WORK at Acme") is None
        gone, left = (f"{suffix}1", f"{suffix}2") if first_gone else (f"{suffix}2", f"{suffix}1")
        out = client.ok("memory_forget", record_id=gone)
        said = [f"memory {acme} stays: event {left} states it too"] if first_gone else []
        assert out["deleted_memory_ids"] == [] and [w.split(",")[0] for w in out["warnings"]] == said
        kept = client.ok("memory_read", record_id=str(acme))["memory"]
        quote = "I WORK at Acme" if first_gone else "I work at Acme"
        assert (kept["status"], kept["source"]["event_id"], kept["source"]["quote"]) == ("current", left, quote)
        assert client.ok("memory_forget", record_id=left)["deleted_memory_ids"] == [acme]
    assert query(db_path, "SELECT count(*) AS n FROM memories")[0]["n"] == 0
    assert query(db_path, "SELECT count(*) AS n FROM memory_sources")[0]["n"] == 0
    rules_hold(db_path)


def test_an_event_that_only_had_the_memory_copied_into_its_answer_does_not_keep_it(client, db_path):
    record(client, "e1", "my safe word is banana.")
    safe = made(db_path, "e1", "The user's safe word is banana", quote="safe word is banana")
    record(client, "e2", "I like tea.")
    # A model shown the memory copies it into another event's answer, quoting what that event does say.
    copied = made(db_path, "e2", "The user's safe word is banana", quote="I like tea", shown_memories=(str(safe),))
    assert copied is None
    assert client.ok("memory_forget", record_id="e1")["deleted_memory_ids"] == [safe]
    assert query(db_path, "SELECT content FROM memories") == []


def test_a_corrected_memory_stated_twice_keeps_its_correction_when_the_first_statement_goes(client, db_path):
    record(client, "e1", "I work at Acme.")
    acme = made(db_path, "e1", "User works at Acme", quote="I work at Acme")
    record(client, "e2", "I work at Acme, as I said.")
    assert made(db_path, "e2", "User works at Acme", quote="I work at Acme") is None
    fixed = client.ok("memory_correct", memory_id=acme, content="User works at Globex", reason="moved on")
    out = client.ok("memory_forget", record_id="e1")
    assert out["deleted_event_ids"] == ["e1"] and out["deleted_memory_ids"] == []
    assert status(client, str(acme)) == "revoked" and status(client, fixed["replacement_id"]) == "current"
    rules_hold(db_path)


def test_a_memory_quoted_from_its_second_statement_keeps_its_place_in_the_timeline(client, db_path):
    record(client, "e0", "I use npm.", occurred_at="2024-01-01T00:00:00Z")
    npm = made(db_path, "e0", "User uses npm", quote="I use npm", subject="user.pm")
    record(client, "e1", "Now I use pnpm.", occurred_at="2024-02-01T00:00:00Z")
    pnpm = made(db_path, "e1", "User uses pnpm", quote="I use pnpm", subject="user.pm", target=npm)
    record(client, "e2", "Yes, I use pnpm.", occurred_at="2024-03-01T00:00:00Z")
    assert made(db_path, "e2", "User uses pnpm", quote="I use pnpm", subject="user.pm") is None
    client.ok("memory_forget", record_id="e1")
    assert client.ok("memory_read", record_id=str(npm))["memory"]["superseded_by"] == pnpm
    assert status(client, str(pnpm)) == "current"
    rules_hold(db_path)


def test_a_quote_taken_from_the_second_statement_is_a_span_of_its_text_as_stored(client, db_path):
    text = unicodedata.normalize("NFD", "Él bebe café. Mi código es 4411.")
    record(client, "e1", unicodedata.normalize("NFC", "Él bebe café."))
    coffee = made(db_path, "e1", "User drinks coffee", quote=unicodedata.normalize("NFC", "Él bebe café"))
    record(client, "e2", text)
    assert made(db_path, "e2", "User drinks coffee", quote=unicodedata.normalize("NFD", "Él bebe café")) is None
    client.ok("memory_forget", record_id="e1")
    rows = query(db_path, "SELECT memory_id, quote FROM memories")
    assert [row["memory_id"] for row in rows] == [coffee]
    assert rows[0]["quote"] == unicodedata.normalize("NFD", "Él bebe café") and rows[0]["quote"] in text


def test_the_provenance_of_a_memory_goes_through_an_export_and_an_import(client, db_path, tmp_path):
    record(client, "e1", "I work at Acme.")
    acme = made(db_path, "e1", "User works at Acme", quote="I work at Acme")
    record(client, "e2", "Still at Acme: I work at Acme.")
    assert made(db_path, "e2", "User works at Acme", quote="I work at Acme") is None
    record(client, "e3", "It is near the station.")
    near = made(db_path, "e3", "Acme is near the station", quote="near the station", shown_events=("e1",),
                shown_memories=(str(acme),))  # fmt: skip
    db = open_database(db_path)
    try:
        from memlikehuman.admin import portability

        lines = [line.encode() for line in portability.export_lines(db)]
    finally:
        db.close()
    line = next(json.loads(raw) for raw in lines if json.loads(raw).get("memory_id") == near)
    assert line["sources"] == {"events": [{"event_id": "e1", "quote": None}], "memories": [acme]}
    copy = tmp_path / "copy.sqlite3"
    with Engine(make_settings(copy)) as other:
        other.import_lines(iter(lines))  # type: ignore[arg-type]
        result = other.forget(DEFAULT, "e1")
    assert result.deleted_memory_ids == () and result.requoted == ((acme, "e2"),)


def test_an_archive_of_schema_11_keeps_a_repeat_as_a_source_through_the_upgrade_an_export_and_an_import(tmp_path):
    from upgrade_support import build_archive

    path = tmp_path / "old.sqlite3"
    build_archive(path, 11)
    conn = apsw.Connection(str(path))
    try:
        with conn:  # as schema 11 kept a fact stated again: a repeat row, its quote a span of the event's text
            conn.execute(
                "INSERT INTO events (event_id, persona_id, project_id, session_id, role, source, category, text,"
                " occurred_at, occurred_at_given, recorded_at, payload_hash, extraction_state) VALUES ('evt-again',"
                " 'default', 'default', 's1', 'user', 'chat', 'conversation', 'Yes, I live in Porto now.',"
                " '2026-10-06T09:00:00Z', 1, '2026-10-06T09:00:00Z', 'hash-again', 'complete')"
            )
            conn.execute(
                "INSERT INTO repeats SELECT m.id, e.sequence, 5, 15, 'fact', 'stated', 1, e.occurred_at, NULL"
                " FROM memories m, events e WHERE m.memory_id = 'mem_porto' AND e.event_id = 'evt-again'"
            )
    finally:
        conn.close()
    with Engine(make_settings(path)) as engine:
        lines = [line.encode() for line in engine.export_lines(None, None)]
    copy = tmp_path / "copy.sqlite3"
    with Engine(make_settings(copy)) as other:
        other.import_lines(iter(lines))  # type: ignore[arg-type]
    for archive in (path, copy):
        with Engine(make_settings(archive)) as engine:
            result = engine.forget(DEFAULT, "evt-porto")
            memory = engine.read(DEFAULT, "mem_porto").memory
        assert result.deleted_memory_ids == () and result.requoted == (("mem_porto", "evt-again"),)
        assert memory is not None and (memory.event_id, memory.quote) == ("evt-again", "I live in Porto")
