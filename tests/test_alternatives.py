"""memory_recall `alternatives`: further phrasings of one need, searched and fused into one ranking."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import cli, json_out
from conftest import connected, make_settings, serving
from openai_stub import ScriptedOpenAI

from memlikehuman.engine import Engine
from memlikehuman.records import Scope
from memlikehuman.retrieval import phrasings
from memlikehuman.retrieval.recall import recall

HOME = Scope("ana", "home")
QUERY = "what dishes did she cook for her friends"
SOUP = "I spent the whole afternoon on a big pot of tomato soup."
FILLER = ["The train was late again this morning.", "My sister is learning the violin.", "It rained all weekend."]


def record_chat(client: object, persona: str = "ana", project: str = "home") -> None:
    turns = [("soup", SOUP, "s1"), *((f"f{i}", text, f"s{i + 2}") for i, text in enumerate(FILLER))]
    for event_id, text, session in turns:
        client.ok(  # type: ignore[attr-defined]
            "memory_record",
            event_id=event_id,
            text=text,
            role="user",
            source="Ana",
            session_id=session,
            persona_id=persona,
            project_id=project,
        )


def found(result: dict[str, object]) -> list[str]:
    return [hit["event_id"] for hit in result["raw_fallback"]]  # type: ignore[index, union-attr]


def test_an_event_sharing_no_word_with_the_query_is_found_through_an_alternative(tmp_path: Path) -> None:
    with connected(serving(tmp_path / "a.db")) as client:
        record_chat(client)
        scope = {"persona_id": "ana", "project_id": "home"}
        plain = client.ok("memory_recall", query=QUERY, **scope)
        assert "soup" not in found(plain)
        bridged = client.ok("memory_recall", query=QUERY, alternatives=["Ana made tomato soup", "pasta"], **scope)
        assert found(bridged)[0] == "soup"
        assert found(client.ok("memory_recall", query=QUERY, alternatives=None, **scope)) == found(plain)


def test_nine_alternatives_are_refused_with_the_limit_and_what_to_do(tmp_path: Path) -> None:
    with connected(serving(tmp_path / "a.db")) as client:
        error = client.error("memory_recall", query=QUERY, alternatives=[f"phrasing {i}" for i in range(9)])
    assert error.startswith("limit_exceeded: alternatives has 9 phrasings; the limit is 8:")
    assert "keep the most different ones" in error


def test_an_alternative_over_4000_characters_is_refused_naming_which_one(tmp_path: Path) -> None:
    with connected(serving(tmp_path / "a.db")) as client:
        error = client.error("memory_recall", query=QUERY, alternatives=["soup", "x" * 4_001])
    assert error.startswith("limit_exceeded: alternatives[1] is 4,001 characters long; the limit is 4,000:")
    assert "shorten" in error


def test_a_blank_alternative_is_refused(tmp_path: Path) -> None:
    with connected(serving(tmp_path / "a.db")) as client:
        error = client.error("memory_recall", query=QUERY, alternatives=["soup", "   "])
    assert error.startswith("invalid_argument: alternatives[1] is blank: leave it out")


def test_phrasings_that_repeat_the_query_do_not_crowd_out_what_one_alternative_alone_finds(engine: Engine) -> None:
    for i in range(8):
        engine.record(HOME, f"dish{i}", f"Ana cooked dishes for friends, round {i}.", "user", "Ana", session_id="a")
    engine.record(HOME, "soup", SOUP, "user", "Ana", session_id="b")
    repeats = ["dishes Ana cooked for friends", "Ana cooking dishes for her friends", "cooked dishes friends"]
    # Five phrasings: each one's best is kept among the first five.
    result = recall(engine, HOME, QUERY, limit=5, alternatives=[*repeats, "tomato soup"])
    assert "soup" in [hit.event.event_id for hit in result.raw_fallback]


def test_a_lone_find_is_kept_among_the_first_results_and_the_querys_best_first() -> None:
    # Four near-copies of the query find the same records; a fifth phrasing alone finds record 99.
    shared = {i: 10.0 - i for i in range(8)}
    fused = phrasings.fuse([shared, shared, shared, shared, {99: 5.0}])
    order = sorted(fused, key=lambda k: (-fused[k], -k))
    assert order.index(99) <= 5
    assert order[0] == 0


def test_a_guess_joins_the_first_results_but_does_not_take_the_first_place() -> None:
    query = {1: 9.0, 2: 8.0, 3: 7.0, 4: 6.0}
    guess = {50: 3.0, 3: 2.0}  # an alternative that alone finds record 50
    fused = phrasings.fuse([query, guess], query_weight=2.0)
    order = sorted(fused, key=lambda k: (-fused[k], -k))
    assert order[0] != 50
    assert order.index(50) <= 2  # here within n + 1 = 3: ahead of records only the query found


def test_the_query_counts_query_weight_times_an_alternative() -> None:
    query, other = {1: 2.0, 2: 1.0, 3: 0.5}, {3: 2.0, 1: 1.0}
    fused = phrasings.fuse([query, other], query_weight=2.0)
    # record 3: its best scaled score is the alternative's 1.0, halved; the query's best is lifted first
    assert fused[3] == pytest.approx(0.5)
    assert max(fused, key=lambda k: fused[k]) == 1
    # With no words of its own, the query's empty ranking leaves the alternative alone.
    assert phrasings.fuse([{}, other], query_weight=2.0) == other


def test_duplicate_alternatives_and_a_repeated_query_are_searched_once() -> None:
    assert phrasings.distinct(["Soup  recipes", "soup recipes", "pasta", "PASTA"]) == ["Soup  recipes", "pasta"]


def test_all_phrasings_are_embedded_in_one_embedder_call(tmp_path: Path) -> None:
    with ScriptedOpenAI() as api:
        settings = make_settings(
            tmp_path / "a.db",
            MEMLIKEHUMAN_EMBEDDER="openai",
            MEMLIKEHUMAN_EMBEDDER_BASE_URL=api.base_url,
            MEMLIKEHUMAN_EMBEDDER_MODEL="m",
        )
        with Engine(settings) as engine:
            engine.record(HOME, "soup", SOUP, "user", "Ana")
            engine.embed_missing()
            before = len(api.requests)
            result = recall(engine, HOME, QUERY, search_mode="semantic", alternatives=["soup", "stew", "pasta", "pie"])
            assert result.search_mode == "semantic"
            calls = [body for path, body in api.requests[before:] if path.endswith("/embeddings")]
    assert len(calls) == 1
    assert len(calls[0]["input"]) == 5


def test_the_cli_takes_repeated_also_options(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    with Engine(make_settings(db)) as engine:
        engine.record(HOME, "soup", SOUP, "user", "Ana")
        engine.record(HOME, "f0", FILLER[0], "user", "Ana")
    scope = ["--persona", "ana", "--project", "home", "--json"]
    assert found(json_out(cli(db, "recall", QUERY, *scope))) == []
    bridged = json_out(cli(db, "recall", QUERY, "--also", "tomato soup", "--also", "pasta", *scope))
    assert found(bridged)[0] == "soup"


def test_without_alternatives_the_ranking_and_its_scores_are_unchanged(engine: Engine) -> None:
    engine.record(HOME, "soup", SOUP, "user", "Ana", session_id="s1")
    engine.record(HOME, "f0", "Tomato soup again, and a salad.", "user", "Ana", session_id="s2")
    plain = recall(engine, HOME, "tomato soup")
    repeated = recall(engine, HOME, "tomato soup", alternatives=["Tomato  SOUP"])
    assert [(h.event.event_id, h.score) for h in plain.raw_fallback] == [
        (h.event.event_id, h.score) for h in repeated.raw_fallback
    ]


def test_alternatives_also_search_beside_a_cue_key_with_an_empty_query(engine: Engine) -> None:
    engine.record(HOME, "soup", SOUP, "user", "Ana", cues=[{"kind": "photo", "key": "IMG_1"}])
    engine.record(HOME, "f0", FILLER[0], "user", "Ana", cues=[{"kind": "photo", "key": "IMG_1"}])
    result = recall(engine, HOME, "", cue_key="IMG_1", alternatives=["tomato soup"])
    assert [hit.event.event_id for hit in result.raw_fallback][0] == "soup"


def test_the_query_best_stays_first_when_an_alternative_ties_it() -> None:
    # Equal weights: record 2 sums to exactly what record 1 sums to; the higher ID would win the tie.
    query, other = {1: 2.0, 2: 1.0}, {2: 2.0, 1: 1.0}
    fused = phrasings.fuse([query, other], query_weight=1.0)
    assert sorted(fused, key=lambda k: (-fused[k], -k))[0] == 1


def test_rankings_without_a_positive_score_neither_crash_nor_get_lifted() -> None:
    assert phrasings.fuse([{1: 0.0}, {2: 0.0}]) == {}
    assert phrasings.fuse([{1: -1.0}, {2: -2.0}]) == {}
    # The query found only zeros: the alternative's ranking stands alone, record 2 is not lifted.
    assert phrasings.fuse([{1: 0.0, 2: 0.0}, {2: 1.0, 3: 0.5}], query_weight=2.0) == {2: 1.0, 3: 0.5}
    with pytest.raises(ValueError, match="positive"):
        phrasings.fuse([{1: 1.0}, {2: 1.0}], query_weight=0.0)
