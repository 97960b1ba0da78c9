"""memory_recall in process: ranking, filters, validity, detail levels, excerpts, coverage and errors."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from conftest import SyncClient

from memlikehuman import clock
from memlikehuman.archive import events, memories
from memlikehuman.engine import Engine
from memlikehuman.errors import InvalidArgument, LimitExceeded
from memlikehuman.lifecycle import correct
from memlikehuman.records import Candidate, Scope
from memlikehuman.retrieval import search
from memlikehuman.retrieval.excerpts import excerpt
from memlikehuman.retrieval.ranking import DEFAULT_TUNING
from memlikehuman.retrieval.recall import recall
from memlikehuman.text.asking import about_replies, only_asks
from memlikehuman.text.changes import says_change
from memlikehuman.text.rules import states_rule

HOME = Scope("ana", "home")
WORK = Scope("ana", "work")


def record(engine: Engine, event_id: str, text: str, *, scope: Scope = HOME, **fields: Any) -> int:
    fields.setdefault("role", "user")
    fields.setdefault("source", "Ana")
    return engine.record(scope, event_id, text, **fields).sequence


def remember(engine: Engine, event_id: str, text: str, *items: Candidate, scope: Scope = HOME, **fields: Any) -> None:
    """Record an event and store derived memories for it through the archive's own store()."""
    sequence = record(engine, event_id, text, scope=scope, **fields)
    memories.store(engine.db, events.load(engine.db, sequence), list(items), "2024-06-01T00:00:00.000000Z")


def fact(content: str, *, subject: str | None = None, valid_from: str, kind: str = "fact") -> Candidate:
    return Candidate(
        content=content,
        quote=content,
        kind=kind,
        basis="stated",
        subject=subject,
        valid_from=clock.stamp(valid_from, "valid_from"),
    )


def raw_ids(result: Any) -> list[str]:
    return [hit.event.event_id for hit in result.raw_fallback]


def contents(result: Any) -> list[str]:
    return [hit.memory.content for hit in result.memories]


# -- fast search over raw events -----------------------------------------------------------------


def test_fast_recall_finds_a_pending_event_by_its_words_with_attribution(engine: Engine) -> None:
    record(
        engine,
        "e1",
        "We adopted a golden retriever called Biscuit.",
        session_id="s1",
        occurred_at="2024-03-01T10:00:00+01:00",
    )
    record(engine, "e2", "The weather was grey all week.", session_id="s2")
    result = recall(engine, HOME, "What is the name of the retriever?")
    assert result.search_mode == "fast"
    hit = result.raw_fallback[0]
    assert hit.event.event_id == "e1"
    assert (hit.event.source, hit.event.session_id, hit.event.occurred_at) == (
        "Ana",
        "s1",
        "2024-03-01T09:00:00.000000Z",
    )
    assert hit.excerpt == "We adopted a golden retriever called Biscuit." and hit.truncated is False
    assert raw_ids(result) == ["e1"]


def test_the_speaker_and_cue_labels_are_searchable(engine: Engine) -> None:
    record(
        engine,
        "e1",
        "Look at this!",
        source="Melanie",
        cues=[{"kind": "photo", "key": "IMG_7.jpg", "label": "a sunset over the lake"}],
    )
    record(engine, "e2", "Nice one.", source="Bob")
    assert raw_ids(recall(engine, HOME, "melanie"))[0] == "e1"
    assert raw_ids(recall(engine, HOME, "sunset lake photo"))[0] == "e1"


def test_a_reply_is_found_through_the_turn_before_it(engine: Engine) -> None:
    record(engine, "q", "Where did you go on holiday?", source="Bob", session_id="s1")
    record(engine, "a", "Lisbon, it was lovely.", source="Ana", session_id="s1")
    record(engine, "other", "I like trains.", source="Ana", session_id="s2")
    assert set(raw_ids(recall(engine, HOME, "holiday destination"))[:2]) == {"q", "a"}


@pytest.mark.parametrize(
    "query",
    [
        'NEAR("golden" retriever, 2)',
        '"unbalanced quote',
        "retriever*",
        "text: retriever",
        "^retriever",
        "AND OR NOT",
        "((( retriever",
        "'; DROP TABLE events; --",
        "1 OR 1=1; SELECT * FROM memories",
        "{col1 col2}: x",
        "\x00 nul byte",
    ],
)
def test_fts_syntax_and_sql_fragments_in_a_query_are_plain_words(engine: Engine, query: str) -> None:
    record(engine, "e1", "A golden retriever; AND the dog drop table OR not.")
    result = recall(engine, HOME, query)
    assert result.search_mode == "fast"
    assert engine.db.scalar("SELECT count(*) FROM events") == 1
    if "retriever" in query or "drop" in query.lower():
        assert raw_ids(result) == ["e1"]


def test_another_projects_newer_rows_take_none_of_the_scored_rows(engine: Engine) -> None:
    # A word found in more rows than are scored is scored among its newest matches: the project's own,
    # not the newest of the whole archive, which another project's forty later rows would all be.
    for i in range(3):
        record(engine, f"h{i}", f"We deploy the garden lights, round {i}.")
    for i in range(40):
        record(engine, f"w{i}", f"We deploy release {i} today.", scope=WORK)
    filters = search.Filters(HOME, clock.now_stamp())

    hits = search.lexical(engine.db, "event", ["deploy"], filters, 10, DEFAULT_TUNING.event_weights, scored_rows=5)

    assert sorted(events.load(engine.db, hit.id).event_id for hit in hits) == ["h0", "h1", "h2"]


def test_a_query_of_punctuation_only_returns_nothing_without_error(engine: Engine) -> None:
    record(engine, "e1", "Hello there.")
    result = recall(engine, HOME, "?!... ---")
    assert result.raw_fallback == () and result.memories == ()
    assert any("no words to search for" in w for w in result.warnings)


def test_a_query_of_stopwords_only_still_searches_them(engine: Engine) -> None:
    record(engine, "e1", "To be or not to be.")
    record(engine, "e2", "Something else entirely.")
    assert raw_ids(recall(engine, HOME, "to be"))[0] == "e1"


def test_a_rare_word_finds_an_old_event_even_when_a_common_word_matches_thousands(engine: Engine) -> None:
    with engine.db.write():  # one transaction: thousands of records in a moment
        record(engine, "old", "Zoltan the plumber fixed the sink, a common problem.")
        for i in range(search.SCORED_ROWS + 100):
            record(engine, f"e{i}", f"A common remark number {i}.", scope=HOME if i % 2 else WORK)
    assert raw_ids(recall(engine, HOME, "zoltan common"))[0] == "old"
    newest = raw_ids(recall(engine, HOME, "common", limit=5))
    assert len(newest) == 5 and "old" not in newest


def test_events_on_a_date_the_query_names_rank_first(engine: Engine) -> None:
    record(engine, "may", "We went bowling, two strikes!", session_id="s1", occurred_at="2022-05-02T18:00:00Z")
    record(engine, "march", "We went bowling, two strikes!", session_id="s2", occurred_at="2022-03-17T18:00:00Z")
    record(engine, "june", "We went bowling, two strikes!", session_id="s3", occurred_at="2022-06-20T18:00:00Z")
    assert raw_ids(recall(engine, HOME, "bowling on March 16, 2022"))[0] == "march"
    assert raw_ids(recall(engine, HOME, "bowling in June 2022"))[0] == "june"
    assert raw_ids(recall(engine, HOME, "bowling on 2 May 2022"))[0] == "may"


def test_what_a_speaker_named_in_the_query_said_ranks_first(engine: Engine) -> None:
    record(engine, "ana", "I love hiking in the hills.", source="Ana", session_id="s1")
    record(engine, "bob", "I love hiking in the hills.", source="Bob", session_id="s2")
    assert raw_ids(recall(engine, HOME, "Does Bob love hiking?"))[0] == "bob"
    assert raw_ids(recall(engine, HOME, "Does Ana love hiking?"))[0] == "ana"


def test_the_turn_after_a_question_is_found_with_it(engine: Engine) -> None:
    record(engine, "q", "What is your favorite game?", source="Joanna", session_id="s1")
    record(engine, "a", "Xenoblade, without a doubt.", source="Nate", session_id="s1")
    record(engine, "later", "Time for dinner.", source="Nate", session_id="s1")
    for i in range(5):
        record(engine, f"n{i}", f"Note {i}: games are fun.", source="Nate", session_id=f"t{i}")
    ids = raw_ids(recall(engine, HOME, "Nate's favorite game", limit=3))
    assert "q" in ids and "a" in ids


def test_an_answer_comes_before_its_question_and_an_acknowledgement_after_its_statement(engine: Engine) -> None:
    note, thanks = "Note: the staging server is staging.example.internal on port 8443.", "Noted, thanks."
    record(engine, "note", note, session_id="s1")
    record(engine, "ack", thanks, role="assistant", source="assistant", session_id="s1")
    record(engine, "ask", "Which port does the staging server use?", session_id="s2")
    record(engine, "reply", "The staging server uses port 8443.", role="assistant", source="assistant", session_id="s2")
    found = raw_ids(recall(engine, HOME, "staging server port", limit=4))
    assert found.index("reply") < found.index("ask")  # the answer holds the fact the question asks for
    assert found.index("note") < found.index("ack")  # the statement holds it; "Noted" does not


# -- validation ------------------------------------------------------------------------------------


def test_an_empty_query_without_a_cue_key_is_invalid(engine: Engine) -> None:
    with pytest.raises(InvalidArgument, match="query is empty"):
        recall(engine, HOME, "   ")


def test_a_query_over_4000_characters_exceeds_the_limit(engine: Engine) -> None:
    recall(engine, HOME, "x" * 4000)
    with pytest.raises(LimitExceeded, match="4,000"):
        recall(engine, HOME, "x" * 4001)


@pytest.mark.parametrize("limit", [0, 101, -1])
def test_limit_outside_1_to_100_is_invalid(engine: Engine, limit: int) -> None:
    with pytest.raises(InvalidArgument, match="limit"):
        recall(engine, HOME, "dog", limit=limit)


def test_limit_bounds_both_lists(engine: Engine) -> None:
    for i in range(12):
        record(engine, f"e{i}", f"dog number {i}")
    assert len(recall(engine, HOME, "dog", limit=1).raw_fallback) == 1
    assert len(recall(engine, HOME, "dog").raw_fallback) == 10
    assert len(recall(engine, HOME, "dog", limit=100).raw_fallback) == 12


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"as_of": "2024-01-01T00:00:00"}, "offset"),
        ({"as_of": "yesterday"}, "as_of"),
        ({"detail": "short"}, "detail"),
        ({"search_mode": "fuzzy"}, "search_mode"),
        ({"cue_key": ""}, "cue_key"),
        ({"session_id": "a\nb"}, "session_id"),
    ],
)
def test_bad_options_are_invalid_arguments(engine: Engine, options: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        recall(engine, HOME, "dog", **options)


# -- scope, session, cue, as_of for raw events ------------------------------------------------------


def test_recall_never_sees_or_counts_another_scope(engine: Engine) -> None:
    record(engine, "h1", "The house key is under the blue pot.", scope=HOME)
    record(engine, "w1", "The office key is in drawer two.", scope=WORK)
    record(engine, "w2", "Another key note.", scope=WORK)
    result = recall(engine, HOME, "key drawer office")
    assert raw_ids(result) == ["h1"]
    assert result.coverage.events_in_scope == 1 and result.coverage.events_pending == 1
    assert raw_ids(recall(engine, Scope("bob", "home"), "key")) == []


def test_session_id_filters_raw_events_and_memories(engine: Engine) -> None:
    remember(engine, "a", "Ana likes tea.", fact("Ana likes tea", valid_from="2024-01-01T00:00:00Z"), session_id="s1")
    record(engine, "b", "Tea with lemon, please.", session_id="s2")
    result = recall(engine, HOME, "tea", session_id="s2")
    assert raw_ids(result) == ["b"] and result.memories == ()
    result = recall(engine, HOME, "tea", session_id="s1")
    assert raw_ids(result) == [] and contents(result) == ["Ana likes tea"]


def test_a_cue_key_alone_returns_the_events_recorded_with_it(engine: Engine) -> None:
    photo = [{"kind": "photo", "key": "IMG_0042.jpg", "label": "beach"}]
    record(engine, "e1", "First photo of the trip.", cues=photo)
    record(engine, "e2", "No photo here.")
    record(engine, "e3", "Same picture again.", cues=photo)
    record(engine, "w1", "Other scope, same key.", scope=WORK, cues=photo)
    assert raw_ids(recall(engine, HOME, "", cue_key="IMG_0042.jpg")) == ["e3", "e1"]
    assert raw_ids(recall(engine, HOME, "trip", cue_key="IMG_0042.jpg")) == ["e1"]
    assert raw_ids(recall(engine, HOME, "", cue_key="unknown.jpg")) == []


def test_a_cue_key_also_finds_memories_derived_from_its_events(engine: Engine) -> None:
    cue = [{"kind": "text", "key": "doc-7"}]
    remember(engine, "e1", "Invoice paid.", fact("The invoice was paid", valid_from="2024-01-01T00:00:00Z"), cues=cue)
    remember(engine, "e2", "Rent paid.", fact("The rent was paid", valid_from="2024-01-01T00:00:00Z"))
    assert contents(recall(engine, HOME, "", cue_key="doc-7")) == ["The invoice was paid"]
    assert contents(recall(engine, HOME, "paid", cue_key="doc-7")) == ["The invoice was paid"]


def test_raw_events_that_occurred_after_as_of_are_not_returned(engine: Engine) -> None:
    record(engine, "old", "Meeting about the budget.", occurred_at="2024-01-10T09:00:00Z")
    record(engine, "new", "Second meeting about the budget.", occurred_at="2024-02-10T09:00:00Z")
    assert set(raw_ids(recall(engine, HOME, "budget meeting"))) == {"old", "new"}
    result = recall(engine, HOME, "budget meeting", as_of="2024-01-31T00:00:00+00:00")
    assert raw_ids(result) == ["old"] and result.as_of == "2024-01-31T00:00:00.000000Z"


# -- memories: validity, history, revocation, detail -----------------------------------------------


def moves(engine: Engine, announced: str = "2024-03-01T00:00:00Z", said: str = "I moved to Berlin!") -> None:
    """Ana lives in Porto from 2023, in Berlin from March 2024 (said on `announced`)."""
    remember(
        engine,
        "m1",
        "I live in Porto.",
        fact("Ana lives in Porto", subject="ana.home_city", valid_from="2023-01-01T00:00:00Z"),
        occurred_at="2023-01-01T00:00:00Z",
    )
    remember(
        engine,
        "m2",
        said,
        fact("Ana lives in Berlin", subject="ana.home_city", valid_from="2024-03-01T00:00:00Z"),
        occurred_at=announced,
    )


def test_as_of_before_a_supersession_shows_the_version_current_then(engine: Engine) -> None:
    moves(engine)
    result = recall(engine, HOME, "where does Ana live", as_of="2023-06-01T00:00:00Z")
    assert contents(result) == ["Ana lives in Porto"]
    hit = result.memories[0]
    assert hit.status == "current" and hit.memory.valid_to is None
    assert result.raw_fallback == ()


def test_as_of_between_a_move_announced_and_made_shows_the_current_version_with_its_known_end(engine: Engine) -> None:
    moves(engine, announced="2024-01-15T00:00:00Z", said="I move to Berlin on March 1st.")
    known = recall(engine, HOME, "where does Ana live", as_of="2024-02-01T00:00:00Z")
    assert contents(known) == ["Ana lives in Porto"]
    hit = known.memories[0]
    assert hit.status == "current" and hit.memory.valid_to == "2024-03-01T00:00:00.000000Z"
    [berlin] = recall(engine, HOME, "where does Ana live").memories
    assert hit.memory.superseded_by == berlin.memory.memory_id and berlin.memory.content == "Ana lives in Berlin"
    # before the announcement the end was not known: open, as it was then
    before = recall(engine, HOME, "where does Ana live", as_of="2024-01-01T00:00:00Z")
    assert before.memories[0].memory.valid_to is None and before.memories[0].memory.superseded_by is None


def test_as_of_before_an_earlier_version_was_told_shows_no_link_to_it(engine: Engine) -> None:
    porto = fact("Ana lives in Porto", subject="ana.home_city", valid_from="2024-03-01T00:00:00Z")
    remember(engine, "m1", "I live in Porto.", porto, occurred_at="2024-03-01T00:00:00Z")
    lisbon = fact("Ana lived in Lisbon", subject="ana.home_city", valid_from="2024-01-01T00:00:00Z")
    remember(engine, "m2", "Before Porto I lived in Lisbon.", lisbon, occurred_at="2024-04-01T00:00:00Z")
    [then] = recall(engine, HOME, "where does Ana live", as_of="2024-03-15T00:00:00Z").memories
    assert then.memory.content == "Ana lives in Porto" and then.memory.supersedes is None
    now = {h.memory.content: h.memory for h in recall(engine, HOME, "Ana", include_history=True).memories}
    assert now["Ana lives in Porto"].supersedes == now["Ana lived in Lisbon"].memory_id


def test_as_of_after_a_supersession_shows_only_the_new_version(engine: Engine) -> None:
    moves(engine)
    result = recall(engine, HOME, "where does Ana live")
    assert contents(result) == ["Ana lives in Berlin"]
    assert result.memories[0].status == "current"


def test_include_history_adds_superseded_versions_marked_as_such(engine: Engine) -> None:
    moves(engine)
    result = recall(engine, HOME, "where does Ana live", include_history=True)
    status = {hit.memory.content: (hit.status, hit.memory.valid_to) for hit in result.memories}
    assert status == {
        "Ana lives in Berlin": ("current", None),
        "Ana lives in Porto": ("superseded", "2024-03-01T00:00:00.000000Z"),
    }
    # history stops at as_of: before the move there was nothing superseded yet
    early = recall(engine, HOME, "where does Ana live", include_history=True, as_of="2023-06-01T00:00:00Z")
    assert [(h.memory.content, h.status) for h in early.memories] == [("Ana lives in Porto", "current")]


def test_a_memory_whose_source_event_occurred_after_as_of_is_unknown_then(engine: Engine) -> None:
    moves(engine)
    assert contents(recall(engine, HOME, "Berlin", as_of="2024-02-01T00:00:00Z")) == []


def test_revoked_memories_never_appear_even_with_history(engine: Engine) -> None:
    remember(
        engine,
        "e1",
        "My sister is called Eva.",
        fact("Ana's sister is called Eva", subject="ana.sister", valid_from="2024-01-01T00:00:00Z"),
    )
    wrong = recall(engine, HOME, "sister").memories[0].memory
    correct.correct(engine.db, HOME, wrong.memory_id, "Ana's sister is called Ida", "misheard")
    for history in (False, True):
        result = recall(engine, HOME, "sister called", include_history=history)
        assert "Ana's sister is called Eva" not in contents(result)
        assert "Ana's sister is called Ida" in contents(result)
        assert all("Eva" not in hit.excerpt for hit in result.raw_fallback)


def test_events_with_derived_memories_are_not_repeated_in_raw_fallback(engine: Engine) -> None:
    remember(engine, "e1", "I play the cello.", fact("Ana plays the cello", valid_from="2024-01-01T00:00:00Z"))
    record(engine, "e2", "The cello needs new strings.")
    result = recall(engine, HOME, "cello")
    assert contents(result) == ["Ana plays the cello"] and raw_ids(result) == ["e2"]


def episodes(engine: Engine) -> None:
    remember(
        engine,
        "trip",
        "We hiked up Pico on 3 May, 2300 metres!",
        fact("Ana hiked up Pico (2300 m) on 3 May 2024", kind="event", valid_from="2024-05-03T00:00:00Z"),
        occurred_at="2024-05-04T00:00:00Z",
    )
    remember(
        engine,
        "pref",
        "I prefer window seats.",
        fact("Ana prefers window seats on planes", kind="preference", valid_from="2024-05-03T00:00:00Z"),
        occurred_at="2024-05-04T00:00:00Z",
    )


def detail_of(result: Any) -> dict[str, str]:
    return {hit.memory.kind: hit.detail for hit in result.memories}


def test_detail_auto_shows_old_episodes_as_overviews_and_keeps_other_kinds(engine: Engine) -> None:
    episodes(engine)
    fresh = recall(engine, HOME, "Pico hike window seats", as_of="2024-05-20T00:00:00Z")
    assert detail_of(fresh) == {"event": "full", "preference": "full"}
    old = recall(engine, HOME, "Pico hike window seats", as_of="2024-08-01T00:00:00Z")
    assert detail_of(old) == {"event": "overview", "preference": "full"}
    assert any("memory_read" in w for w in old.warnings)


def test_detail_gist_always_and_detailed_never_gives_overviews(engine: Engine) -> None:
    episodes(engine)
    gist = recall(engine, HOME, "Pico hike window seats", detail="gist", as_of="2024-05-20T00:00:00Z")
    assert detail_of(gist) == {"event": "overview", "preference": "overview"}
    full = recall(engine, HOME, "Pico hike window seats", detail="detailed", as_of="2025-05-20T00:00:00Z")
    assert detail_of(full) == {"event": "full", "preference": "full"}


def test_the_overview_age_threshold_is_configurable(tmp_path: Any) -> None:
    from conftest import make_settings

    with Engine(make_settings(tmp_path / "a.db", MEMLIKEHUMAN_GIST_AFTER_DAYS="400")) as engine:
        episodes(engine)
        old = recall(engine, HOME, "Pico hike", as_of="2024-08-01T00:00:00Z")
        assert detail_of(old)["event"] == "full"


# -- excerpts --------------------------------------------------------------------------------------


def test_a_long_event_is_excerpted_by_the_passage_that_holds_the_match_and_marked_truncated(engine: Engine) -> None:
    text = "lorem ipsum " * 2000 + "the secret code is AZURE-FALCON" + " dolor sit amet" * 2000
    record(engine, "long", text)
    hit = recall(engine, HOME, "secret code").raw_fallback[0]
    assert len(hit.excerpt) <= 800 and hit.truncated is True
    assert "the secret code is AZURE-FALCON" in hit.excerpt
    assert hit.offset is not None and text[hit.offset : hit.offset + len(hit.excerpt)] == hit.excerpt


def test_a_detail_in_the_middle_of_a_long_reply_is_shown_and_memory_read_at_its_offset_starts_there(
    engine: Engine,
) -> None:
    step = "Step {n}: configure the module number {n} and run its checks before moving on. "
    paragraphs = [step.format(n=n) * 3 for n in range(60)]
    paragraphs[31] = "The staging database password rotates every Tuesday at 04:00 UTC, set by the ops team."
    text = "\n\n".join(paragraphs)
    assert len(text) > 10_000
    record(engine, "reply", text, role="assistant")
    hit = recall(engine, HOME, "when does the staging database password rotate").raw_fallback[0]
    assert "rotates every Tuesday at 04:00 UTC" in hit.excerpt and hit.truncated
    page = engine.read(HOME, "reply", offset=hit.offset, max_chars=len(hit.excerpt))
    assert page.page.text == hit.excerpt


def test_a_long_message_is_ranked_by_the_passage_that_answers_not_pushed_down_by_its_length(engine: Engine) -> None:
    """Scored as one document, the paragraph that answers weighs little against the message's 10,000
    characters (bm25's length normalisation): turns of other days holding one of its words each came first."""
    step = "Step {n}: configure the module number {n} and run its checks before moving on. "
    paragraphs = [step.format(n=n) * 3 for n in range(60)]
    paragraphs[31] = "The staging database password rotates every Tuesday at 04:00 UTC, set by the ops team."
    record(engine, "notes", "\n\n".join(paragraphs))
    pad = " We went through the rest of the checklist afterwards and agreed to revisit the open points next week."
    for n, said in enumerate(
        [
            "The staging box runs Postgres 16.",
            "Keep the password in the vault.",
            "The database for local work is in Docker.",
            "Logs rotate every Tuesday.",
            "Staging deploys go out on Fridays.",
            "Marco set up the database.",
        ]
    ):
        record(engine, f"day-{n}", said + pad * 2, session_id=f"day-{n}")
    for n in range(40):
        record(engine, f"chat-{n}", f"We talked about the weekend plans number {n} and the weather.")
    found = recall(engine, HOME, "when does the staging database password rotate", search_mode="fast", limit=3)
    assert raw_ids(found)[0] == "notes", raw_ids(found)
    assert "rotates every Tuesday at 04:00 UTC" in found.raw_fallback[0].excerpt


def test_an_excerpt_is_the_whole_text_up_to_800_characters_and_a_passage_beyond() -> None:
    exactly = "word " * 160
    assert excerpt(exactly, ["word"]) == (exactly, 0, False)
    long = "x" * 5000
    shown = excerpt(long, ["nomatch"])
    assert shown.text == long[:800] and shown.offset == 0 and shown.truncated
    spaced = ("alpha " * 300) + "needle " + ("beta " * 300)
    shown = excerpt(spaced, ["needle"])
    assert "needle" in shown.text and len(shown.text) <= 800 and shown.truncated and not shown.text.startswith(" ")
    assert spaced[shown.offset : shown.offset + len(shown.text)] == shown.text


# -- coverage and modes ----------------------------------------------------------------------------


def test_coverage_counts_pending_events_and_warns(engine: Engine) -> None:
    record(engine, "e1", "one")
    record(engine, "e2", "two")
    result = recall(engine, HOME, "one")
    assert result.coverage.events_in_scope == 2 and result.coverage.events_pending == 2
    assert result.coverage.events_failed == 0
    assert any("2 events in scope are pending extraction" in w for w in result.warnings)


@pytest.mark.parametrize("mode", ["semantic", "deep"])
def test_without_an_embedder_semantic_and_deep_degrade_to_fast_with_a_warning(engine: Engine, mode: str) -> None:
    record(engine, "e1", "The boiler was serviced.")
    result = recall(engine, HOME, "boiler", search_mode=mode)
    assert result.search_mode == "fast"
    assert raw_ids(result) == ["e1"]
    assert any(
        f"search_mode {mode} was not possible" in w and "MEMLIKEHUMAN_EMBEDDER=none" in w for w in result.warnings
    )


# -- the MCP tool ----------------------------------------------------------------------------------


def test_the_tool_returns_the_documented_fields(client: SyncClient) -> None:
    client.ok(
        "memory_record",
        event_id="e1",
        text="Biscuit is our golden retriever.",
        role="user",
        source="Ana",
        session_id="s1",
        occurred_at="2024-03-01T10:00:00Z",
    )
    out = client.ok("memory_recall", query="retriever")
    assert set(out) == {"memories", "raw_fallback", "search_mode", "as_of", "coverage", "warnings"}
    hit = out["raw_fallback"][0]
    assert set(hit) == {
        "event_id",
        "role",
        "source",
        "session_id",
        "occurred_at",
        "excerpt",
        "truncated",
        "score",
        "said",
        "first_at",
        "offset",
        "newer",
    }  # said, first_at, offset, newer: beyond tools.md
    assert (hit["event_id"], hit["source"], hit["truncated"]) == ("e1", "Ana", False)
    assert out["coverage"] == {
        "events_in_scope": 1,
        "events_pending": 1,
        "events_failed": 0,
        "events_without_vectors": 1,
        "events_after_as_of": 0,
        "events_in_flight": 0,
    }
    assert out["search_mode"] == "fast" and out["as_of"].endswith("Z")


def test_the_tool_reports_memories_with_source_validity_and_status(client: SyncClient, engine: Engine) -> None:
    moves(engine)
    out = client.ok(
        "memory_recall", query="where does Ana live", include_history=True, persona_id="ana", project_id="home"
    )
    by_content = {m["content"]: m for m in out["memories"]}
    berlin, porto = by_content["Ana lives in Berlin"], by_content["Ana lives in Porto"]
    assert (berlin["status"], porto["status"]) == ("current", "superseded")
    assert porto["valid_to"] == "2024-03-01T00:00:00.000000Z" and berlin["valid_to"] is None
    assert berlin["source"] == {
        "event_id": "m2",
        "role": "user",
        "source": "Ana",
        "session_id": "default",
        "occurred_at": "2024-03-01T00:00:00.000000Z",
        "quote": "Ana lives in Berlin",
    }
    assert (berlin["kind"], berlin["basis"], berlin["detail"]) == ("fact", "stated", "full")
    assert berlin["memory_id"].startswith("mem_") and isinstance(berlin["score"], float)


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"query": ""}, "invalid_argument"),
        ({"query": "x", "limit": 0}, "invalid_argument"),
        ({"query": "x", "limit": 101}, "invalid_argument"),
        ({"query": "x", "search_mode": "fuzzy"}, "invalid_argument"),
        ({"query": "x", "detail": "all"}, "invalid_argument"),
        ({"query": "x", "as_of": "2024-01-01"}, "invalid_argument"),
        ({"query": "x" * 4001}, "limit_exceeded"),
        ({"query": "x", "persona_id": "bad/persona"}, "invalid_argument"),
        ({"query": "x", "limit": "5"}, "invalid_argument"),
        ({"query": "x", "limit": True}, "invalid_argument"),
        ({"query": "x", "include_history": "true"}, "invalid_argument"),
    ],
)
def test_the_tool_turns_bad_input_into_coded_errors(client: SyncClient, arguments: dict[str, Any], code: str) -> None:
    assert client.error("memory_recall", **arguments).startswith(f"{code}: ")


def test_the_tool_treats_fts_syntax_as_words(client: SyncClient) -> None:
    client.ok("memory_record", event_id="e1", text="NEAR the column there is a star", role="user", source="Ana")
    out = client.ok("memory_recall", query='NEAR(column star) "col": * ^ OR; DELETE FROM events')
    assert [h["event_id"] for h in out["raw_fallback"]] == ["e1"]


def test_speaker_names_are_taken_out_of_the_text_sent_to_the_embedder(engine: Engine) -> None:
    record(engine, "e1", "Hi!", source="Caroline")
    record(engine, "e2", "Hello.", source="Dr. Mel Smith")
    names = search.speaker_words(engine.db, HOME)
    assert {"caroline", "mel", "smith"} <= names
    assert search.without_words("What is Caroline's identity?", names) == "What is identity?"
    assert search.without_words("Did Mel Smith call?", names) == "Did call?"
    assert search.without_words("Caroline?", names) == "Caroline?"  # nothing left: the query stays
    assert search.speaker_words(engine.db, WORK) == frozenset()


def test_statements_that_share_half_the_querys_words_come_newest_first_and_one_shared_word_moves_nothing(
    engine: Engine,
) -> None:
    record(engine, "old", "My annual budget for buying sneakers is $600.", occurred_at="2026-03-01T10:00:00Z")
    record(engine, "new", "I increased the sneakers budget to $650.", occurred_at="2026-04-02T10:00:00Z")
    record(engine, "aside", "I bought new running sneakers today.", occurred_at="2026-04-03T10:00:00Z")
    found = recall(engine, HOME, "what is my annual budget for buying sneakers?", search_mode="fast").raw_fallback
    order = [hit.event.event_id for hit in found]
    assert order[:2] == ["new", "old"], order
    assert [hit.newer for hit in found[:2]] == [None, "new"]
    assert order.index("aside") == 2 and found[2].newer is None  # one word of four: another matter


def test_a_later_statement_that_says_a_value_changed_comes_first_though_it_shares_few_of_the_querys_words(
    engine: Engine,
) -> None:
    old = "I have a Zoom meeting with Professor Danielle on March 22 at 3 PM to review my draft."
    record(engine, "old", old, occurred_at="2026-03-01T10:00:00Z")
    new = "The Zoom meeting with Danielle was rescheduled to March 22 at 4:30 PM."
    record(engine, "new", new, occurred_at="2026-03-09T10:00:00Z")
    record(engine, "aside", "I updated the Zoom meeting notes for the team.", occurred_at="2026-03-10T10:00:00Z")
    query = "What time should I plan to join the Zoom meeting with Professor Danielle to review my draft?"
    for mode in ("fast", "semantic"):
        found = recall(engine, HOME, query, search_mode=mode).raw_fallback
        order = [hit.event.event_id for hit in found]
        # three of the query's nine words shared: the half rule alone leaves the old time first
        assert order.index("new") < order.index("old"), (mode, order)
        assert {hit.event.event_id: hit.newer for hit in found} == {"new": None, "old": "new", "aside": None}


def test_a_query_naming_a_date_its_statements_name_too_gets_the_newer_value_first(engine: Engine) -> None:
    old = "I'm worried the $7,000 budget for prototype refinement and attorney fees won't last through August 2026."
    record(engine, "old", old, occurred_at="2026-03-02T10:00:00Z")
    new = "The budget allocation was increased to $8,000 through August 2026: room for prototype enhancements."
    record(engine, "new", new, occurred_at="2026-05-04T10:00:00Z")
    through = "What is the budget for prototype refinement and attorney fees through August?"
    for mode in ("fast", "semantic"):
        found = recall(engine, HOME, through, search_mode=mode).raw_fallback
        # both name August: the date is what the budget is about, not when it was said
        assert [(hit.event.event_id, hit.newer) for hit in found] == [("new", None), ("old", "new")], mode
    said_then = recall(engine, HOME, "What budget for prototype refinement did I mention in March 2026?").raw_fallback
    assert [(hit.event.event_id, hit.newer) for hit in said_then][0] == ("old", None)  # what was said then


def test_a_change_of_a_value_holds_the_querys_word_also_in_its_singular(engine: Engine) -> None:
    old = "I spent $43 on books and subscriptions in January, $8 over my $35 monthly budget."
    record(engine, "old", old, occurred_at="2026-02-01T10:00:00Z")
    new = "I'm looking to spend my increased book budget of $50 on a new series."
    record(engine, "new", new, occurred_at="2026-03-01T10:00:00Z")
    found = recall(engine, HOME, "What is my monthly budget for books and subscriptions?", search_mode="fast")
    # "budget" and "books" shared ("book" is its singular), and the later one says the value changed
    assert [(hit.event.event_id, hit.newer) for hit in found.raw_fallback] == [("new", None), ("old", "new")]


def test_asking_for_more_results_never_changes_the_first_ten(engine: Engine) -> None:
    # thirteen statements of one matter, the older the shorter (and the better ranked)
    for n in range(13):
        text = "The demo deadline note" + " about the slides" * n + "."
        record(engine, f"e{n}", text, occurred_at=f"2026-03-{n + 1:02d}T10:00:00Z")
    ten = raw_ids(recall(engine, HOME, "demo deadline", limit=10, search_mode="fast"))
    more = raw_ids(recall(engine, HOME, "demo deadline", limit=20, search_mode="fast"))
    assert len(ten) == 10 and len(more) == 13
    assert more[:10] == ten
    assert ten[0] == "e9"  # within the ten, one matter's statements newest first


@pytest.mark.parametrize(
    ("text", "changed"),
    [
        ("I increased the sneakers budget to $650.", True),
        ("The demo deadline moved from March 14 to March 28.", True),
        ("I've adjusted our holiday gift budget to $450, can you help me plan it?", True),
        ("The probate process was shortened to 5-7 months.", True),
        ("We moved staging to port 9443.", True),
        ("I'm worried I won't meet the new April 25 deadline.", True),
        ("I'm looking to spend my increased January book budget of $50.", True),
        ("I updated my LinkedIn headline to Executive Producer.", False),
        ("I adjusted my manuscript to MLA style.", False),
        ("I moved to Berlin last year.", False),
        ("I'm looking for a new series to read.", False),
    ],
)
def test_a_statement_says_a_value_changed_with_a_verb_of_change_and_a_number_or_date_after_to(
    text: str, changed: bool
) -> None:
    assert says_change(text) is changed


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Tell me a joke about cats.", True),
        ("Please explain the build.", True),
        ("List the open issues", True),
        ("Use pnpm, never npm.", False),
        ("Listen, we moved to Berlin.", False),
        ("Tell me about it. We ship on Friday.", False),
    ],
)
def test_a_short_request_for_an_answer_only_asks_like_a_short_question(text: str, asks: bool) -> None:
    assert only_asks(text) is asks


def scores_of(engine: Engine, query: str, tuning: Any) -> dict[str, float]:
    """Event ID -> score of a fast recall's raw hits with this tuning."""
    found = recall(engine, HOME, query, search_mode="fast", tuning=tuning).raw_fallback
    return {hit.event.event_id: hit.score for hit in found}


def test_a_users_standing_rule_or_preference_weighs_a_little_more_than_another_statement(engine: Engine) -> None:
    record(engine, "a", "The dashboard is slow.")
    record(engine, "r", "Always include version numbers when I ask you about any of the libraries in my stack.")
    query = "Which libraries and frameworks does the dashboard use?"
    lifted = scores_of(engine, query, DEFAULT_TUNING)
    plain = scores_of(engine, query, replace(DEFAULT_TUNING, standing=0.0))
    assert lifted["r"] == pytest.approx(plain["r"] * (1 + DEFAULT_TUNING.standing), rel=1e-5)
    assert lifted["a"] == plain["a"] and DEFAULT_TUNING.standing > 0


@pytest.mark.parametrize(
    ("text", "states"),
    [
        ("Always include version numbers when I ask about libraries.", True),
        ("Please never push to main without a review.", True),
        ("For the layout I'd prefer CSS grid over flexbox.", True),
        ("I’d prefer e-books for travel.", True),
        ("I would prefer a balanced approach, you know.", True),
        ("I always forget where the config lives.", False),
        ("We never shipped the beta.", False),
        ("Which layout do you prefer?", False),
        ("Never mind, let's skip the migration.", False),
        ("I PREFER tabs.", True),
    ],
)
def test_a_turn_states_a_rule_when_it_opens_with_always_or_never_or_says_i_prefer(text: str, states: bool) -> None:
    assert states_rule(text) is states


def test_a_word_no_event_held_is_found_as_soon_as_an_event_says_it(engine: Engine) -> None:
    record(engine, "e1", "The garden needs water.")
    assert recall(engine, HOME, "kiln", search_mode="fast").raw_fallback == ()
    record(engine, "e2", "The kiln reaches 1200 degrees.")
    found = recall(engine, HOME, "kiln", search_mode="fast").raw_fallback
    assert found and found[0].event.event_id == "e2"


def test_word_counts_of_one_archive_never_answer_for_another_opened_later_in_the_same_process(
    tmp_path: Any,
) -> None:
    from conftest import make_settings

    for n, text in enumerate(("The garden needs water.", "The kiln reaches 1200 degrees.")):
        with Engine(make_settings(tmp_path / f"a{n}.sqlite3")) as engine:  # the same id() is likely reused
            record(engine, "e1", text)
            found = recall(engine, HOME, "kiln", search_mode="fast").raw_fallback
            assert [hit.event.event_id for hit in found][:1] == (["e1"] if n else [])


@pytest.mark.parametrize(
    ("query", "lifted"),
    [("What did I say about the garden beds?", True), ("What did you recommend for the garden beds?", False)],
)
def test_the_users_turns_are_lifted_unless_the_query_asks_what_the_assistant_said(
    engine: Engine, query: str, lifted: bool
) -> None:
    record(engine, "u", "I want raised garden beds this spring.")
    record(engine, "a", "Raised garden beds of cedar would last longest.", role="assistant", source="assistant")
    with_lift = scores_of(engine, query, DEFAULT_TUNING)
    without = scores_of(engine, query, replace(DEFAULT_TUNING, user_turn=0.0, standing=0.0))
    factor = 1 + DEFAULT_TUNING.user_turn if lifted else 1.0
    assert with_lift["u"] == pytest.approx(without["u"] * factor, rel=1e-5)
    assert with_lift["a"] == pytest.approx(without["a"], rel=1e-5)


@pytest.mark.parametrize(
    ("query", "about"),
    [
        ("What approach did you recommend to balance speed and fairness?", True),
        ("Which libraries you suggested should I drop?", True),
        ("How did you help me plan my budget?", True),
        ("Can you suggest some movies for Michelle?", False),
        ("When did I say I met my partner?", False),
    ],
)
def test_a_query_is_about_the_assistants_replies_when_it_asks_what_you_said(query: str, about: bool) -> None:
    assert about_replies(query) is about
