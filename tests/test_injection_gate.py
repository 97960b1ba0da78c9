"""The injection gate's rule for items that share no words with the prompt (retrieval/injection.py `passing`).

Measured candidates are (coverage, cosine to the prompt, line length), best ranked first.
"""

from __future__ import annotations

from memlikehuman.retrieval.injection import Gate, passing


def test_the_nearest_item_by_meaning_passes_when_it_leads_the_next_by_the_step() -> None:
    assert passing([(0.0, 0.811, 40), (0.0, 0.840, 40), (0.0, 0.815, 40)], Gate()) == [1]


def test_an_item_only_a_little_nearer_than_the_next_is_not_handed() -> None:
    """Leads under 0.02 were mostly the wrong item (docs/decisions/2026-12-03-injection-gate.md)."""
    assert passing([(0.0, 0.860, 40), (0.0, 0.845, 40)], Gate()) == []


def test_a_lone_candidate_leads_nothing_and_is_not_handed_by_meaning() -> None:
    assert passing([(0.0, 0.870, 40)], Gate()) == []
    assert passing([(0.3, 0.870, 40)], Gate()) == [0]


def test_items_that_share_the_prompts_words_pass_whatever_their_cosine() -> None:
    measured = [(0.5, 0.801, 40), (0.1, 0.815, 40), (0.3, None, 40)]
    assert passing(measured, Gate()) == [0, 2]


def test_the_caps_on_items_and_characters_hold() -> None:
    assert passing([(1.0, None, 900), (1.0, None, 900), (1.0, None, 900)], Gate()) == [0, 1]
    assert passing([(1.0, None, 10)] * 9, Gate()) == [0, 1, 2, 3, 4]
