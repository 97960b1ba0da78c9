"""Fast recall in scripts without spaces and with glued particles or endings (the n-gram index)."""

from __future__ import annotations

import logging
from pathlib import Path

import apsw
import pytest
from conftest import connected, make_settings, serving

from bench.multilingual_set import CASES
from memlikehuman.archive.db import open_database
from memlikehuman.archive.migrations import MIGRATIONS
from memlikehuman.engine import Engine
from memlikehuman.records import Scope
from memlikehuman.retrieval.recall import Tuning, recall
from memlikehuman.text import ngrams

HOME = Scope()

# (event_id, recorded text, fast queries that must find it first): the table, then Thai,
# Russian and Arabic, each query a form the word index cannot match (no spaces, an inflection, a
# glued article).
ROWS = (
    ("zh", "我每天早上喝绿茶。", ("绿茶", "喝绿茶")),
    ("ja", "東京で新しい仕事を始めました。", ("仕事",)),
    ("ko", "오늘 회의가 길었어요.", ("회의",)),
    ("de", "Ich wohne jetzt in München.", ("Munchen",)),
    ("th", "ฉันชอบกินข้าวผัดกุ้งที่ร้านใกล้บ้าน", ("ข้าวผัด",)),
    ("ru", "В прошлом году я переехал в Москву.", ("Москва",)),
    ("ar", "ذهبت إلى المكتبة لاستعارة كتاب عن التاريخ", ("مكتبة",)),
)
FILLER = (
    "The weather was grey all week.",
    "我们下周去北京开会。",
    "明日は雨が降るそうです。",
    "주말에 친구를 만났어요.",
    "Я люблю читать книги по вечерам.",
    "الطقس جميل اليوم",
)


def raw_event_ids(result: dict[str, object]) -> list[str]:
    return [hit["event_id"] for hit in result["raw_fallback"]]  # type: ignore[index, union-attr]


def record_all(engine: Engine) -> None:
    for i, text in enumerate(FILLER):
        engine.record(HOME, f"filler-{i}", text, "user", "chat", session_id=f"f{i}")
    for event_id, text, _ in ROWS:
        engine.record(HOME, event_id, text, "user", "chat", session_id=event_id)


def test_fast_recall_over_stdio_finds_words_inside_cjk_thai_russian_and_arabic_text(db_path: Path) -> None:
    with connected(serving(db_path)) as client:
        for i, text in enumerate(FILLER):
            client.ok(
                "memory_record", event_id=f"filler-{i}", text=text, role="user", source="chat", session_id=f"f{i}"
            )
        for event_id, text, _ in ROWS:
            client.ok("memory_record", event_id=event_id, text=text, role="user", source="chat", session_id=event_id)
        for event_id, _, queries in ROWS:
            for query in queries:
                result = client.ok("memory_recall", query=query, search_mode="fast")
                assert result["search_mode"] == "fast"
                assert raw_event_ids(result)[:1] == [event_id], (query, raw_event_ids(result))


def test_a_single_cjk_character_is_matched_as_a_prefix_with_a_warning(engine: Engine) -> None:
    record_all(engine)
    result = recall(engine, HOME, "茶")
    assert [hit.event.event_id for hit in result.raw_fallback][:1] == ["zh"]
    assert any("茶" in warning and "shorter than" in warning for warning in result.warnings)


def test_a_two_character_query_gets_no_short_query_warning(engine: Engine) -> None:
    record_all(engine)
    result = recall(engine, HOME, "회의")
    assert not any("shorter than" in warning for warning in result.warnings)


def test_a_query_mixing_scripts_finds_the_events_of_each_script(engine: Engine) -> None:
    record_all(engine)
    result = recall(engine, HOME, "仕事 in Москва and weather")
    found = [hit.event.event_id for hit in result.raw_fallback]
    assert {"ja", "ru", "filler-0"} <= set(found[:3]), found


def test_the_word_and_the_n_gram_index_together_rank_a_record_matching_both_first(engine: Engine) -> None:
    engine.record(HOME, "both", "Meeting notes: 회의가 길었어요", "user", "chat", session_id="a")
    engine.record(HOME, "ngram", "회의실 예약", "user", "chat", session_id="b")
    engine.record(HOME, "word", "Meeting at noon", "user", "chat", session_id="c")
    result = recall(engine, HOME, "meeting 회의")
    assert [hit.event.event_id for hit in result.raw_fallback][0] == "both"


@pytest.mark.sqlite_only  # damages FTS5's tables; the search code is the same on PostgreSQL
def test_a_latin_only_query_never_reads_the_n_gram_index(engine: Engine) -> None:
    record_all(engine)
    with engine.db.write() as conn:
        conn.execute("DELETE FROM events_ngrams_data WHERE id > 10")
    assert [hit.event.event_id for hit in recall(engine, HOME, "grey weather").raw_fallback] == ["filler-0"]
    with pytest.raises(apsw.Error):
        recall(engine, HOME, "绿茶")


def test_every_character_of_a_run_starts_an_n_gram_term() -> None:
    assert ngrams.index_text("我喝绿茶") == "我喝 喝绿 绿茶 茶"
    assert ngrams.index_text("в Москву") == "в мос оск скв кву ву у"
    assert ngrams.index_text("Latin only, Ελληνικά too: no terms") == ""


def test_arabic_vowel_signs_and_full_width_forms_compare_equal() -> None:
    assert ngrams.index_text("المَكْتَبَة") == ngrams.index_text("المكتبة")
    assert ngrams.index_text("ｶﾀｶﾅ") == ngrams.index_text("カタカナ")


# -- upgrading an archive built before the n-gram index ----------------------------------------


def build_old_archive(path: Path, version: int, texts: list[str]) -> None:
    """An archive at schema `version`, filled as the code of that schema did (plain SQL, no live code)."""
    db = open_database(path)
    try:
        with db.write() as conn:
            conn.execute(
                "CREATE TABLE schema_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
        for number, fn in enumerate(MIGRATIONS[:version], start=1):
            with db.write() as conn:
                fn(conn)
                conn.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, '2026-01-01T00:00:00Z')", (number, fn.__name__)
                )
        with db.write() as conn:
            for i, text in enumerate(texts):
                conn.execute(
                    "INSERT INTO events (event_id, persona_id, project_id, session_id, role, source, category, text,"
                    " occurred_at, occurred_at_given, recorded_at, payload_hash, extraction_state)"
                    " VALUES (?, 'default', 'default', ?, 'user', 'chat', 'conversation', ?, ?, 0, ?, ?, 'pending')",
                    (f"old-{i}", f"s{i}", text, f"2026-01-0{i + 1}T00:00:00Z", f"2026-01-0{i + 1}T00:00:00Z", f"h{i}"),
                )
                sequence = conn.last_insert_rowid()
                if version >= 4:
                    conn.execute(
                        "INSERT INTO events_fts (rowid, text, attribution, context) VALUES (?, ?, 'chat', '')",
                        (sequence, text),
                    )
    finally:
        db.close()


@pytest.mark.parametrize("version", [3, 4])
def test_an_archive_of_an_older_schema_is_upgraded_and_its_cjk_events_are_found(
    tmp_path: Path, version: int, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "old.sqlite3"
    build_old_archive(path, version, ["我每天早上喝绿茶。", "The weather was grey.", "오늘 회의가 길었어요."])
    with caplog.at_level(logging.INFO, logger="memlikehuman"), Engine(make_settings(path)) as engine:
        assert engine.schema_version == len(MIGRATIONS) >= 5
        assert [hit.event.event_id for hit in recall(engine, HOME, "绿茶").raw_fallback] == ["old-0"]
        assert [hit.event.event_id for hit in recall(engine, HOME, "회의").raw_fallback] == ["old-2"]
        assert [hit.event.event_id for hit in recall(engine, HOME, "grey").raw_fallback] == ["old-1"]
    assert "n-gram full-text index (schema 6): 3 of 3 records indexed" in caplog.text
    # Written once: opening again finds nothing missing and logs nothing.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memlikehuman"), Engine(make_settings(path)):
        pass
    assert "n-gram" not in caplog.text


def set_recall(engine: Engine, tuning: Tuning) -> dict[str, float]:
    """Fast recall@5 per language on the multilingual set of bench/multilingual_set.py."""
    found: dict[str, list[bool]] = {}
    for i, case in enumerate(CASES):
        hits = recall(engine, HOME, case.query, limit=5, tuning=tuning).raw_fallback
        found.setdefault(case.language, []).append(f"case-{i}" in [hit.event.event_id for hit in hits])
    return {language: sum(values) / len(values) for language, values in found.items()}


def test_the_n_gram_index_lifts_fast_recall_of_paraphrased_questions_in_unsegmented_scripts(engine: Engine) -> None:
    for i, case in enumerate(CASES):
        engine.record(HOME, f"case-{i}", case.text, "user", "chat", session_id=f"s{i}")
    before, after = set_recall(engine, Tuning(ngram=False)), set_recall(engine, Tuning())
    for language in ("Chinese", "Japanese", "Korean", "Thai"):
        assert after[language] >= before[language] + 0.25, (language, before[language], after[language])
    assert all(after[language] >= before[language] for language in before), (before, after)


def test_the_excerpt_of_a_long_chinese_event_is_centred_on_the_match(engine: Engine) -> None:
    text = "今天天气很好。" * 300 + "我每天早上喝绿茶。" + "明天可能下雨。" * 300
    engine.record(HOME, "long", text, "user", "chat")
    hit = recall(engine, HOME, "绿茶").raw_fallback[0]
    assert hit.truncated and "喝绿茶" in hit.excerpt
