"""Derived overviews: the gist of a memory without its exact details."""

from memlikehuman.retrieval import gist


def test_numbers_dates_and_later_names_are_masked():
    text = gist.derived("Caroline went to the LGBTQ support group on 7 May 2023 with Melanie")
    assert text.startswith("Caroline went to the")
    for detail in ("LGBTQ", "7", "2023", "Melanie", "May"):
        assert detail not in text


def test_only_the_first_clause_is_kept_and_the_cut_is_marked():
    assert gist.derived("I bought a red bike; it cost 450 euros") == "I bought a red bike; ..."


def test_long_clauses_stop_at_twelve_words():
    words = " ".join(f"w{i}x" for i in range(30)).replace("w0x", "we")
    assert gist.derived(words).count(" ") <= 13


def test_a_short_plain_statement_is_unchanged():
    assert gist.derived("I like hiking in the mountains") == "I like hiking in the mountains"
