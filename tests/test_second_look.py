"""The second look at recall's best events (retrieval/second_look.py): its model, and its inputs kept
inside the recall's scope and filters, with the real local embedder."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from conftest import make_settings

from memlikehuman.engine import Engine
from memlikehuman.records import Scope
from memlikehuman.retrieval import ranking, search, second_look
from memlikehuman.retrieval.ranking import DEFAULT_TUNING
from memlikehuman.retrieval.recall import recall
from memlikehuman.retrieval.search import Filters

# Its tests on `db_path` run on PostgreSQL with pgvector too: the cosines of the turns after come from there.
pytestmark = pytest.mark.vectors

HOME = Scope("ana", "home")
WORK = Scope("ana", "work")
DAY = "2026-06-01T10:0{}:00Z"
LATER = "2026-06-03T10:00:00Z"
# The user's statements are lifted over the replies (ranking.Tuning.user_turn): left out here, where the
# second look's own work is shown.
ON = dataclasses.replace(DEFAULT_TUNING, user_turn=0.0)
OFF = dataclasses.replace(ON, second_look=0)
MODEL = (DEFAULT_TUNING.second_look_weights, DEFAULT_TUNING.second_look_length_cap)
# A question about a car whose reply turns to the weather, then the car bought, and a reply about it.
TURNS = [
    ("Ana", "Have you ever thought about buying a car?"),
    ("Ben", "Not really, the weather was lovely today."),
    ("Ana", "The soup at lunch was far too salty."),
    ("Ben", "My sister is learning the violin."),
    ("Ana", "I bought a used car on Saturday, a blue estate."),
    ("Ben", "Congratulations on the new wheels! Is it comfortable to drive?"),
]


@pytest.fixture
def local(db_path: Path | str) -> Iterator[Engine]:
    with Engine(make_settings(db_path, MEMLIKEHUMAN_EMBEDDER="local")) as engine:
        yield engine


def fill(engine: Engine, scope: Scope = HOME, last_at: str | None = None) -> None:
    for i, (who, text) in enumerate(TURNS):
        at = last_at if last_at and i == len(TURNS) - 1 else DAY.format(i)
        role = "user" if who == "Ana" else "assistant"
        engine.record(scope, f"{scope.project_id}-t{i}", text, role, who, session_id="s1", occurred_at=at)


def ranked(engine: Engine, query: str, mode: str = "semantic", **options: object) -> list[tuple[str, float]]:
    result = recall(engine, HOME, query, limit=6, search_mode=mode, **options)  # type: ignore[arg-type]
    assert result.search_mode == mode
    return [(hit.event.event_id, hit.score) for hit in result.raw_fallback]


def test_the_model_reorders_only_the_pool_and_hands_out_its_own_scores() -> None:
    plain = second_look.Look(0.8, 0.8, 40, False)
    looks = {1: second_look.Look(0.8, 0.8, 10, True), 2: plain, 3: dataclasses.replace(plain, after=0.9)}
    scores = {1: 3.0, 2: 2.95, 3: 2.9, 4: 1.0}
    out = second_look.reordered(scores, [1, 2, 3], looks, *MODEL)
    # 3 is followed by a turn closer to the query; 1 only asks a short question.
    assert out == {3: 3.0, 2: 2.95, 1: 2.9, 4: 1.0}
    assert second_look.reordered(scores, [1], looks, *MODEL) == scores
    # An event without a Look (a tool's output) keeps its place, the others are re-ordered around it; tied
    # scores come out strictly in the model's order.
    with_tool = {1: 3.0, 4: 2.97, 2: 2.95, 3: 2.9}
    assert second_look.reordered(with_tool, [1, 4, 2], looks, *MODEL) == {2: 3.0, 4: 2.97, 1: 2.95, 3: 2.9}
    assert second_look.reordered(with_tool, [1, 4], looks, *MODEL) == with_tool
    tied = second_look.reordered({1: 2.0, 2: 2.0, 3: 2.0}, [1, 2, 3], looks, *MODEL)
    assert tied[3] > tied[2] > tied[1]


def test_a_reordered_pool_stays_above_the_events_outside_it_that_tie_with_its_last() -> None:
    plain = second_look.Look(0.8, 0.8, 40, False)
    looks = {1: dataclasses.replace(plain, after=0.5), 4: dataclasses.replace(plain, after=0.9)}
    scores = {1: 0.55, 2: 0.5, 3: 0.5, 4: 0.5}
    pool = ranking.top(scores, 2)
    assert pool == [1, 4]  # ties go to the newer event
    out = second_look.reordered(scores, pool, looks, *MODEL)
    # 4 moves up; 1 takes the last slot, still above 2 and 3 (a tie would sort it below them by ID).
    assert ranking.top(out, 4) == [4, 1, 3, 2]
    assert out[4] == 0.55 and out[1] > 0.5 and out[1] == pytest.approx(0.5) and out[2] == out[3] == 0.5
    zeros = second_look.reordered({1: 1.0, 2: 0.0, 3: 0.0}, [1, 2, 3], {k: plain for k in (1, 2, 3)}, *MODEL)
    assert min(zeros.values()) == 0.0  # no score is pushed below zero (shown as -0.0)


def test_length_counts_only_up_to_the_longest_turn_the_weights_were_fitted_on() -> None:
    # LoCoMo's longest turn is 454 characters; a file read of 5,000 must gain nothing over it.
    turn = second_look.Look(0.8, 0.8, 454, False)
    looks = {seq: turn for seq in range(12)} | {11: dataclasses.replace(turn, length=5000)}
    scores = {seq: 3.0 - seq / 100 for seq in range(12)}
    assert second_look.reordered(scores, list(range(12)), looks, *MODEL) == scores


def test_a_reply_that_leaves_the_subject_yields_to_the_statement_and_the_reply_on_it(local: Engine) -> None:
    fill(local)
    assert local.indexer.wait_idle(60)
    before = ranked(local, "car purchase", tuning=OFF)
    after = ranked(local, "car purchase", tuning=ON)
    order_before = [event_id for event_id, _ in before]
    order_after = [event_id for event_id, _ in after]
    # Without the second look the weather reply ranks with the question before it, which carries it (a
    # reply found with its question is shown before it: retrieval/echoes.py).
    assert set(order_before[:2]) == {"home-t0", "home-t1"}
    assert order_after.index("home-t4") < order_after.index("home-t1")
    assert order_after.index("home-t5") < order_after.index("home-t1")
    assert sorted(score for _, score in after) == sorted(score for _, score in before)
    assert ranked(local, "car purchase", "fast", tuning=ON) == ranked(local, "car purchase", "fast", tuning=OFF)


def test_a_neighbour_the_recall_may_not_see_is_not_read(local: Engine) -> None:
    # Home's reply to the car comes later (LATER); between them, by sequence, another scope's event in
    # a session of the same name, on the very subject of the query.
    for i, (who, text) in enumerate(TURNS[:5]):
        local.record(HOME, f"home-t{i}", text, "user", who, session_id="s1", occurred_at=DAY.format(i))
    local.record(
        WORK, "work-car", "Car purchase: we bought a car.", "user", "Ana", session_id="s1", occurred_at=DAY.format(6)
    )
    local.record(HOME, "home-t5", TURNS[5][1], "assistant", "Ben", session_id="s1", occurred_at=LATER)
    assert local.indexer.wait_idle(60)
    embedder = local.embedder
    assert embedder is not None
    query = embedder.embed(["car purchase"], "query")[0]
    pool = [int(local.db.scalar("SELECT sequence FROM events WHERE event_id = ?", ("home-t4",)))]

    def look(as_of: str, model: str = embedder.model_id) -> dict[int, second_look.Look]:
        neighbours = partial(search.neighbours, local.db)
        cap = DEFAULT_TUNING.second_look_length_cap
        return second_look.gather(local.db, local.vectors, model, Filters(HOME, as_of), query, pool, neighbours, cap)

    seen = look("2026-06-04T00:00:00Z")[pool[0]]
    assert seen.after != pytest.approx(seen.cosine)
    assert seen.length == len(TURNS[4][1]) and not seen.asks
    # Before the reply occurred, its cosine is not read: the event's own stands in (nor is the other
    # scope's event, though it sits between them in a session of the same name).
    hidden = look("2026-06-02T00:00:00Z")[pool[0]]
    assert hidden.after == pytest.approx(hidden.cosine)
    # Without vectors of the query's model there is nothing to look at: the order stays.
    assert look("2026-06-04T00:00:00Z", "no-such-model") == {}
    shown = [event_id for event_id, _ in ranked(local, "car purchase", as_of="2026-06-02T00:00:00Z")]
    assert "home-t5" not in shown and all(event_id.startswith("home-") for event_id in shown)


def test_a_question_mark_before_a_line_break_still_asks_and_several_phrasings_skip_the_look(local: Engine) -> None:
    fill(local)
    local.record(HOME, "ask", "Is the blue estate comfortable to drive?\n\n", "user", "Ana", session_id="s2")
    assert local.indexer.wait_idle(60)
    rows = local.db.query("SELECT sequence, event_id FROM events")
    shapes = search.text_shapes(local.db, [row["sequence"] for row in rows])
    asks = {row["event_id"] for row in rows if shapes[row["sequence"]][1]}
    assert {shapes[row["sequence"]][2] for row in rows} == {"user", "assistant"}
    assert asks == {"ask", "home-t0", "home-t5"}
    # With alternatives the fused rankings place each phrasing's best on purpose: no second look.
    also = ["buying a vehicle"]
    assert ranked(local, "car purchase", alternatives=also, tuning=ON) == ranked(
        local, "car purchase", alternatives=also, tuning=OFF
    )
