"""memory_forget takes the memories of later turns that name what only the forgotten turn said
(lifecycle/carried.py), and nothing else: names other turns hold, dates, the memories' own words."""

from __future__ import annotations

from pathlib import Path

from conftest import add_memory, fts_rowids
from reliability.support import STRUCTURE

from memlikehuman.archive.db import open_database
from memlikehuman.lifecycle import forget
from memlikehuman.records import Scope

DEFAULT = Scope()


def record(client, event_id: str, text: str, source: str = "chat", **extra: object) -> dict[str, object]:
    return client.ok("memory_record", event_id=event_id, text=text, role="user", source=source, **extra)


def rows(db_path: Path, sql: str) -> list[dict[str, object]]:
    db = open_database(db_path)
    try:
        return list(db.query(sql))
    finally:
        db.close()


def count(db_path: Path, sql: str) -> int:
    db = open_database(db_path)
    try:
        return int(db.scalar(sql))
    finally:
        db.close()


def status(client, memory_id: str) -> str:
    return str(client.ok("memory_read", record_id=memory_id)["memory"]["status"])


def test_a_later_memory_that_names_what_only_the_forgotten_turn_said_goes_with_it(client, db_path):
    record(client, "e1", "My sister is called Emma Kowalski, and her PIN is 8812.")
    sister = add_memory(db_path, "e1", "User's sister is Emma Kowalski", quote="My sister is called Emma Kowalski")
    record(client, "e2", "She moved to Oslo last year.")
    moved = add_memory(db_path, "e2", "Emma Kowalski moved to Oslo", quote="She moved to Oslo")
    pin = add_memory(db_path, "e2", "Her code 8812 still works", quote="She moved")
    record(client, "e3", "I like green tea and Oslo in the spring.")
    tea = add_memory(db_path, "e3", "User likes green tea and Oslo", quote="I like green tea")
    db = open_database(db_path)
    try:
        assert forget.preview(db, DEFAULT, "e1").memory_ids == (sister, moved, pin)
    finally:
        db.close()
    out = client.ok("memory_forget", record_id="e1")
    assert out["deleted_event_ids"] == ["e1"] and out["deleted_memory_ids"] == [sister, moved, pin]
    assert client.ok("memory_read", record_id="e2")["event"]["memory_ids"] == []
    assert client.ok("memory_read", record_id=tea)["memory"]["content"] == "User likes green tea and Oslo"
    assert fts_rowids(db_path, "memories_fts", "kowalski") == []
    assert count(db_path, "SELECT count(*) FROM memories WHERE content LIKE '%Emma%'") == 0


def test_a_later_memory_keeps_a_name_another_turn_holds_a_name_opening_a_sentence_and_its_own_year(client, db_path):
    record(client, "e1", "Porto was lovely. I told Emma about the 2023 trip.", occurred_at="2023-05-02T10:00:00Z")
    record(client, "e2", "Emma is my sister.", occurred_at="2023-05-02T10:01:00Z")
    record(client, "e3", "She liked it.", occurred_at="2023-05-02T10:02:00Z")
    record(client, "e4", "Again?", occurred_at="2023-05-02T10:03:00Z")
    liked = add_memory(db_path, "e3", "Emma liked the trip in May 2023", quote="She liked it")
    again = add_memory(db_path, "e4", "Porto is a favourite of the user", quote="Again")
    out = client.ok("memory_forget", record_id="e1")
    assert out["deleted_memory_ids"] == []  # Emma: e2 holds it; 2023: e3's own year; Porto opens a sentence
    for memory_id in (liked, again):
        assert client.ok("memory_read", record_id=memory_id)["memory"]["status"] == "current"


def test_a_forgotten_text_with_many_names_is_matched_in_one_pass_with_the_same_rules(client, db_path):
    names = " ".join(f"uses Module{n} and Widget{n}," for n in range(12))  # 24 marks: past the lookups one by one
    record(client, "e1", f"The code {names} then stops.")
    record(client, "e2", "Widget3 is the one we keep.")
    record(client, "e3", "It broke yesterday.")
    broke = add_memory(db_path, "e3", "Module7 broke yesterday", quote="It broke yesterday")
    kept = add_memory(db_path, "e3", "Widget3 broke too", quote="It broke")
    out = client.ok("memory_forget", record_id="e1")
    assert out["deleted_memory_ids"] == [broke]
    assert client.ok("memory_read", record_id=kept)["memory"]["content"] == "Widget3 broke too"


def test_a_name_with_a_non_ascii_capital_held_by_another_turn_in_another_case_is_kept(client, db_path):
    record(client, "e1", "I told Élodie and Иван about it.")
    record(client, "e2", "élodie is my sister, and so is ИВАН's wife.")
    record(client, "e3", "She liked the trip.")
    liked = add_memory(db_path, "e3", "Élodie and Иван liked the trip", quote="She liked the trip")
    assert client.ok("memory_forget", record_id="e1")["deleted_memory_ids"] == []
    assert status(client, liked) == "current"


def test_a_name_that_is_a_later_turns_speaker_is_kept(client, db_path):
    record(client, "e1", "I'll bring the cake for Maria tomorrow.", source="Ben")
    record(client, "e2", "I love dark chocolate.", source="Maria")
    favourite = add_memory(db_path, "e2", "Dark chocolate is the favourite of Maria", quote="I love dark chocolate")
    assert client.ok("memory_forget", record_id="e1")["deleted_memory_ids"] == []
    assert status(client, favourite) == "current"


def test_dates_the_memories_own_words_and_earlier_memories_are_no_trace(client, db_path):
    record(client, "e0", "Hallo zusammen.")
    earlier = add_memory(db_path, "e0", "Der Nutzer erwähnte Sansibar", quote="Hallo zusammen")
    record(client, "e1", "Seit Monday, March 4, 2024 habe ich eine Katze aus Sansibar.")
    add_memory(db_path, "e1", "Der Nutzer hat seit March 2024 eine Katze", quote="habe ich eine Katze")
    record(client, "e2", "Ich wohne in Berlin.")
    berlin = add_memory(
        db_path, "e2", "Der Nutzer wohnt seit March 2024 am Montag in Berlin", quote="Ich wohne in Berlin"
    )
    out = client.ok("memory_forget", record_id="e1")
    assert len(out["deleted_memory_ids"]) == 1  # e1's own memory only
    assert status(client, berlin) == "current" and status(client, earlier) == "current"


def test_a_version_closed_by_a_carried_memory_stays_closed(client, db_path):
    record(client, "e0", "My sister lives in Paris.", occurred_at="2024-01-01T00:00:00Z")
    paris = add_memory(db_path, "e0", "The user's sister lives in Paris", subject="user.sister.city")
    record(client, "e1", "My sister is called Emma Kowalski.", occurred_at="2024-02-01T00:00:00Z")
    record(client, "e2", "She moved to Oslo.", occurred_at="2024-03-01T00:00:00Z")
    oslo = add_memory(
        db_path, "e2", "Emma Kowalski moved to Oslo", quote="She moved to Oslo", subject="user.sister.city"
    )
    assert client.ok("memory_read", record_id=paris)["memory"]["superseded_by"] == oslo
    assert client.ok("memory_forget", record_id="e1")["deleted_memory_ids"] == [oslo]
    before = client.ok("memory_read", record_id=paris)["memory"]
    assert (before["status"], before["valid_to"], before["superseded_by"]) == (
        "superseded",
        "2024-03-01T00:00:00.000000Z",
        None,
    )


def test_a_carried_memory_goes_with_its_corrections(client, db_path):
    record(client, "e1", "My sister is called Emma Kowalski.")
    record(client, "e2", "She moved to Oslo.")
    oslo = add_memory(db_path, "e2", "Emma Kowalski moved to Oslo", quote="She moved to Oslo")
    fixed = client.ok("memory_correct", memory_id=oslo, content="Emma Kowalski moved to Bergen", reason="Bergen")
    out = client.ok("memory_forget", record_id="e1")
    assert out["deleted_event_ids"] == ["e1", fixed["correction_event_id"]]
    assert out["deleted_memory_ids"] == [oslo, fixed["replacement_id"]]
    assert count(db_path, "SELECT count(*) FROM events WHERE text LIKE '%Kowalski%'") == 0
    assert count(db_path, "SELECT count(*) FROM memories WHERE content LIKE '%Kowalski%'") == 0
    assert client.ok("memory_read", record_id="e2")["source_page"]["text"] == "She moved to Oslo."


def test_a_forgotten_text_with_a_word_too_long_for_a_like_pattern_is_forgotten(client, db_path):
    dump = "a1" * 30_000
    record(client, "e1", f"Here is the dump: {dump} and Zorblax.")
    record(client, "e2", "Noted.")
    noted = add_memory(db_path, "e2", f"The dump starts {dump[:40]}", quote="Noted")
    zorblax = add_memory(db_path, "e2", "Zorblax was mentioned", quote="Noted")
    out = client.ok("memory_forget", record_id="e1")
    assert out["deleted_memory_ids"] == [zorblax]  # a prefix of a word is not the word
    assert status(client, noted) == "current"


def test_a_fact_stated_again_outlives_the_forgotten_first_statement(client, db_path):
    record(client, "e1", "I work at Acme as a welder.")
    first = add_memory(db_path, "e1", "User works at Acme", quote="I work at Acme", subject="user.employer")
    record(client, "e2", "As I said, I WORK at Acme.")
    assert add_memory_or_none(db_path, "e2", "user works at acme", quote="I WORK at Acme", subject="user.employer")
    record(client, "e3", "Yes, I work at Acme, still.")
    assert add_memory_or_none(db_path, "e3", "User works at  Acme", quote="I work at Acme, still")
    assert count(db_path, "SELECT count(*) FROM memories") == 1  # the repeats were skipped
    out = client.ok("memory_forget", record_id="e1")
    assert out["deleted_memory_ids"] == [first] and "stated it again" in out["warnings"][0]
    hits = client.ok("memory_recall", query="Acme")["memories"]
    assert [(h["content"], h["source"]["event_id"], h["source"]["quote"]) for h in hits] == [
        ("User works at Acme", "e2", "I WORK at Acme")
    ]
    assert hits[0]["status"] == "current"
    assert count(db_path, "SELECT count(*) FROM memories WHERE subject = 'user.employer' AND valid_to IS NULL") == 1
    # The next statement repeats the revived memory now: forgetting e2 hands the fact on to e3.
    client.ok("memory_forget", record_id="e2")
    hits = client.ok("memory_recall", query="Acme")["memories"]
    assert [(h["source"]["event_id"], h["source"]["quote"]) for h in hits] == [("e3", "I work at Acme, still")]
    client.ok("memory_forget", record_id="e3")
    assert count(db_path, "SELECT count(*) FROM memories") == 0
    assert count(db_path, "SELECT count(*) FROM repeats") == 0


def test_a_restatement_that_names_what_only_the_forgotten_turn_said_is_not_revived(client, db_path):
    record(client, "e1", "My sister is called Emma Kowalski and she lives in Oslo.")
    add_memory(db_path, "e1", "Emma Kowalski lives in Oslo", quote="she lives in Oslo")
    record(client, "e2", "She still lives in Oslo.")
    assert add_memory_or_none(db_path, "e2", "Emma Kowalski lives in Oslo", quote="She still lives in Oslo")
    client.ok("memory_forget", record_id="e1")
    assert count(db_path, "SELECT count(*) FROM memories") == 0
    assert count(db_path, "SELECT count(*) FROM repeats") == 0


def add_memory_or_none(db_path: Path, event_id: str, content: str, *, quote: str, subject: str | None = None) -> bool:
    """Store an item as extraction would; True when it was skipped as a repeat."""
    from memlikehuman.archive import events, memories
    from memlikehuman.records import Candidate

    db = open_database(db_path)
    try:
        event = events.find(db, DEFAULT, event_id)
        item = Candidate(content, quote, "fact", "stated", subject, event.occurred_at)
        rowids, skipped = memories.store(db, event, [item], event.recorded_at)
        return skipped == 1 and not rowids
    finally:
        db.close()


def stored_memory(
    db_path: Path, event_id: str, content: str, *, quote: str, target: str | None = None, subject: str | None = None
) -> None:
    """Store an item as extraction would, naming the memory it updates (the extractor's alias)."""
    from memlikehuman.archive import events, memories
    from memlikehuman.records import Candidate

    db = open_database(db_path)
    try:
        event = events.find(db, DEFAULT, event_id)
        rowid = None if target is None else db.scalar("SELECT id FROM memories WHERE memory_id = ?", (target,))
        item = Candidate(content, quote, "fact", "stated", subject, event.occurred_at)
        memories.store(db, event, [item], event.recorded_at, targets=[rowid])
    finally:
        db.close()


def current(db_path: Path) -> list[str]:
    db = open_database(db_path)
    try:
        rows = db.query("SELECT content FROM memories WHERE revoked_at IS NULL AND valid_to IS NULL ORDER BY id")
        return [row["content"] for row in rows]
    finally:
        db.close()


def test_a_corrected_memory_is_not_revived_from_its_repeat(client, db_path):
    record(client, "e1", "I work at Acme.")
    acme = add_memory(db_path, "e1", "User works at Acme", quote="I work at Acme")
    record(client, "e2", "I work at Acme, as I said.")
    assert add_memory_or_none(db_path, "e2", "User works at Acme", quote="I work at Acme")
    client.ok("memory_correct", memory_id=acme, content="User works at Globex", reason="moved on")
    out = client.ok("memory_forget", record_id="e1")
    assert current(db_path) == [] and out["warnings"] == []  # the correction went with e1; nothing comes back


def test_a_revived_memory_closes_again_the_version_its_first_statement_had_closed(client, db_path):
    record(client, "e0", "I use npm.")
    stored_memory(db_path, "e0", "User uses npm", quote="I use npm")
    npm = client.ok("memory_read", record_id="e0")["event"]["memory_ids"][0]
    record(client, "e1", "Now I use pnpm.")
    stored_memory(db_path, "e1", "User uses pnpm", quote="I use pnpm", target=npm)
    record(client, "e2", "Yes, I use pnpm.")
    assert add_memory_or_none(db_path, "e2", "User uses pnpm", quote="I use pnpm")
    out = client.ok("memory_forget", record_id="e1")
    assert current(db_path) == ["User uses pnpm"]
    assert len(out["warnings"]) == 1 and "stated it again" in out["warnings"][0]
    assert client.ok("memory_read", record_id=npm)["memory"]["status"] == "superseded"


def test_repeats_point_at_a_current_memory_that_already_says_it_instead_of_reviving_a_duplicate(client, db_path):
    record(client, "e1", "I like tea.")
    add_memory(db_path, "e1", "User likes tea", quote="I like tea")
    record(client, "e0", "I like coffee.")
    coffee = add_memory(db_path, "e0", "User likes coffee", quote="I like coffee")
    client.ok("memory_correct", memory_id=coffee, content="User likes tea", reason="it was tea")
    record(client, "e2", "Tea, I like tea.")
    assert add_memory_or_none(db_path, "e2", "User likes tea", quote="I like tea")
    client.ok("memory_forget", record_id="e1")
    assert current(db_path) == ["User likes tea"]  # the correction's replacement, once
    assert count(db_path, "SELECT count(*) FROM repeats") == 1


def test_a_carried_replacement_goes_with_its_correction_event(client, db_path):
    record(client, "e1", "My sister is called Emma Kowalski.")
    record(client, "e2", "I work at Acme.")
    acme = add_memory(db_path, "e2", "User works at Acme", quote="I work at Acme")
    fixed = client.ok("memory_correct", memory_id=acme, content="User works for Emma Kowalski at Globex", reason="x")
    out = client.ok("memory_forget", record_id="e1")
    assert out["deleted_event_ids"] == ["e1", fixed["correction_event_id"]]
    assert out["deleted_memory_ids"] == [fixed["replacement_id"]]
    assert count(db_path, "SELECT count(*) FROM events WHERE text LIKE '%Kowalski%'") == 0
    assert count(db_path, "SELECT count(*) FROM corrections") == 0
    assert status(client, acme) == "revoked"
    db = open_database(db_path)
    try:
        for rule, sql in STRUCTURE.items():  # add_memory leaves its events pending; full text is backend-specific
            if "correction" in rule or "revoked" in rule or "timeline" in rule:
                assert db.scalar(sql) == 0, rule
    finally:
        db.close()


def test_a_revived_quote_is_a_span_of_the_text_as_stored_even_when_it_is_decomposed(client, db_path):
    import unicodedata

    text = unicodedata.normalize("NFD", "Él bebe café. Mi código es 4411.")
    record(client, "e1", unicodedata.normalize("NFC", "Él bebe café."))
    add_memory(db_path, "e1", "User drinks coffee", quote=unicodedata.normalize("NFC", "Él bebe café"))
    record(client, "e2", text)
    assert add_memory_or_none(db_path, "e2", "User drinks coffee", quote=unicodedata.normalize("NFD", "Él bebe café"))
    client.ok("memory_forget", record_id="e1")
    quotes = [row["quote"] for row in rows(db_path, "SELECT quote FROM memories")]
    assert quotes == [unicodedata.normalize("NFD", "Él bebe café")] and quotes[0] in text


def test_a_name_written_in_another_mix_of_cases_by_another_turn_is_held_on_both_backends(client, db_path):
    record(client, "e1", "I pushed it to Github yesterday.")
    record(client, "e2", "My GitHub account is old.")
    record(client, "e3", "It worked.")
    worked = add_memory(db_path, "e3", "The push to Github worked", quote="It worked")
    assert client.ok("memory_forget", record_id="e1")["deleted_memory_ids"] == []
    assert status(client, worked) == "current"


def timeline_rules_hold(db_path: Path) -> None:
    db = open_database(db_path)
    try:
        for rule in ("one-sided timeline link", "superseded memory still open", "revoked memory without a replacement"):
            assert db.scalar(STRUCTURE[rule]) == 0, rule
    finally:
        db.close()


def test_a_revived_memory_closes_again_every_version_its_first_statement_had_closed(client, db_path):
    record(client, "e0", "I use npm.", occurred_at="2024-01-01T00:00:00Z")
    stored_memory(db_path, "e0", "User uses npm", quote="I use npm")
    npm = client.ok("memory_read", record_id="e0")["event"]["memory_ids"][0]
    record(client, "e00", "My package manager is yarn.", occurred_at="2024-01-02T00:00:00Z")
    add_memory(db_path, "e00", "User's package manager is yarn", quote="package manager is yarn", subject="user.pm")
    record(client, "e1", "Now I use pnpm.", occurred_at="2024-02-01T00:00:00Z")
    stored_memory(db_path, "e1", "User uses pnpm", quote="I use pnpm", target=npm, subject="user.pm")
    timeline_rules_hold(db_path)  # both closed, linked both ways with one of them only
    record(client, "e2", "Yes, I use pnpm.", occurred_at="2024-03-01T00:00:00Z")
    assert add_memory_or_none(db_path, "e2", "User uses pnpm", quote="I use pnpm", subject="user.pm")
    client.ok("memory_forget", record_id="e1")
    assert current(db_path) == ["User uses pnpm"]
    timeline_rules_hold(db_path)


def test_repeats_pointed_at_a_live_memory_close_again_what_the_deleted_one_had_closed(client, db_path):
    record(client, "e0", "I use npm.")
    stored_memory(db_path, "e0", "User uses npm", quote="I use npm")
    npm = client.ok("memory_read", record_id="e0")["event"]["memory_ids"][0]
    record(client, "e1", "Now I use pnpm.")
    stored_memory(db_path, "e1", "User uses pnpm", quote="I use pnpm", target=npm)
    record(client, "e3", "I use yarn.")
    yarn = add_memory(db_path, "e3", "User uses yarn", quote="I use yarn")
    client.ok("memory_correct", memory_id=yarn, content="User uses pnpm", reason="it was pnpm")
    record(client, "e2", "pnpm, I use pnpm.")
    assert add_memory_or_none(db_path, "e2", "User uses pnpm", quote="I use pnpm")
    client.ok("memory_forget", record_id="e1")
    assert current(db_path) == ["User uses pnpm"] and status(client, npm) == "superseded"
    timeline_rules_hold(db_path)
