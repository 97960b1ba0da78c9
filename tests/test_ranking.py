"""Recall's ranking steps as pure functions (retrieval/ranking.py, retrieval/excerpts.py): no archive."""

from __future__ import annotations

import pytest

from memlikehuman.retrieval import ranking
from memlikehuman.retrieval.excerpts import around, excerpt
from memlikehuman.text import passages


def test_normalized_scales_the_best_score_to_the_weight():
    assert ranking.normalized([(1, 2.0), (2, 1.0), (3, 0.0)], 1.5) == {1: 1.5, 2: 0.75, 3: 0.0}


def test_normalized_with_a_floor_maps_the_worst_of_the_pool_to_zero():
    out = ranking.normalized([(1, 0.9), (2, 0.8), (3, 0.7)], 1.0, floor=True)
    assert out == pytest.approx({1: 1.0, 2: 0.5, 3: 0.0})


def test_normalized_gives_nothing_for_no_weight_no_pairs_or_no_spread_without_a_floor():
    assert ranking.normalized([(1, 1.0)], 0.0) == {}
    assert ranking.normalized([], 1.0) == {}
    assert ranking.normalized([(1, 0.0), (2, 0.0)], 1.0) == {}
    assert ranking.normalized([(1, 0.5), (2, 0.5)], 2.0, floor=True) == {1: 2.0, 2: 2.0}


def test_fused_adds_dense_scores_to_lexical_ones_and_keeps_either_alone():
    assert ranking.fused({1: 1.0, 2: 0.5}, {2: 0.25, 3: 1.0}) == {1: 1.0, 2: 0.75, 3: 1.0}


def test_top_orders_by_score_and_breaks_ties_by_the_newer_id():
    assert ranking.top({1: 0.5, 2: 0.9, 3: 0.5, 4: 0.1}, 3) == [2, 3, 1]


def test_by_recency_scores_a_list_in_its_order():
    scores = ranking.by_recency([30, 20, 10])
    assert ranking.top(scores, 3) == [30, 20, 10] and scores[30] == 1.0 and all(0 < s <= 1 for s in scores.values())


def test_each_event_gains_a_share_of_the_best_score_of_its_session():
    out = ranking.with_session_share({1: 1.0, 2: 0.2, 3: 0.4}, {1: "a", 2: "a", 3: "b"}, 0.5)
    assert out == pytest.approx({1: 1.5, 2: 0.7, 3: 0.6})


def test_a_hit_lends_a_share_of_its_score_to_its_eligible_neighbours_only():
    scores = {10: 1.0, 20: 0.4}
    links = {10: (9, 11), 20: (19, 11)}
    out = ranking.with_neighbour_loans(scores, scores, links, eligible={9, 11, 20}, share=0.5)
    # 11 takes the best loan offered (from 10), 9 is lent to, 19 is not eligible, 20 keeps its own score
    assert out == pytest.approx({10: 1.0, 20: 0.4, 9: 0.5, 11: 0.5})


def test_named_speakers_and_dates_multiply_scores_and_add_up():
    out = ranking.with_factors({1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0}, {1, 3}, 0.6, {2, 3}, 1.0)
    assert out == pytest.approx({1: 1.6, 2: 2.0, 3: 2.6, 4: 1.0})


def test_no_speaker_share_means_no_speaker_lift():
    assert ranking.with_factors({1: 1.0}, {1}, 0.0, set(), 1.0) == {1: 1.0}


def test_an_excerpt_of_a_short_text_is_the_whole_text():
    assert excerpt("a short text", ["short"]) == ("a short text", 0, False)


def test_a_line_around_the_query_words_is_cut_at_a_word_boundary():
    text = " ".join(["filler"] * 400) + " the garden gnome " + " ".join(["padding"] * 400)
    shown = around(text, ["gnome"], 200)
    assert "gnome" in shown and len(shown) <= 200
    assert not shown.startswith(" ") and text.find(shown) >= 0
    assert shown.split(" ")[0] in ("filler", "padding", "the", "garden", "gnome")


def test_passages_pack_paragraphs_and_cut_a_long_one_after_a_sentence():
    text = "First paragraph.\n\nSecond one, a little longer.\n\n" + "A sentence that goes on. " * 60
    spans = passages.spans(text, 200)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(end - start <= 200 for start, end in spans)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
    assert text[: spans[0][1]].startswith("First paragraph.\n\nSecond one")
    assert all(text[start:end].rstrip().endswith(".") for start, end in spans[1:-1])
