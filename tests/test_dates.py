"""Dates named in queries (memlikehuman.dates): pure parsing, no archive needed."""

from __future__ import annotations

from datetime import date

import pytest

from memlikehuman.text.dates import (
    DateWindow,
    date_windows,
    easter,
    in_windows,
    nth_weekday,
    relative_spans,
    spans_meet,
)


def only(query: str) -> DateWindow:
    windows = date_windows(query)
    assert len(windows) == 1, windows
    return windows[0]


@pytest.mark.parametrize(
    "query",
    [
        "what happened on 12.01.2024",
        "what happened on 2024-01-12",
        "what happened on 2024/01/12",
        "what happened on 12 January 2024",
        "what happened on January 12th, 2024",
        "what happened on the 12th of Jan 2024",
    ],
)
def test_a_named_day_spans_the_day_before_to_a_week_after(query: str) -> None:
    assert only(query) == DateWindow("2024-01-11", "2024-01-20")


def test_dotted_dates_are_read_day_first() -> None:
    assert only("on 03.04.2024") == DateWindow("2024-04-02", "2024-04-11")


def test_a_month_with_a_year_spans_that_month() -> None:
    assert only("in December 2023") == DateWindow("2023-12-01", "2024-01-01")


def test_a_day_without_a_year_matches_that_day_in_any_year() -> None:
    window = only("what did Ana do on Jan 12")
    assert window == DateWindow("01-11", "01-20", yearless=True)
    assert in_windows("2019-01-15T10:00:00.000000Z", [window])
    assert not in_windows("2019-02-15T10:00:00.000000Z", [window])


def test_a_month_without_a_year_matches_that_month_in_any_year() -> None:
    window = only("where did they travel in January")
    assert window == DateWindow("01-01", "02-01", yearless=True)
    assert in_windows("2023-01-31T23:00:00Z", [window]) and not in_windows("2023-02-01T00:00:00Z", [window])


def test_may_and_march_as_verbs_are_not_months() -> None:
    assert date_windows("this may be the march order of the band") == []


def test_a_yearless_day_near_new_year_wraps_around() -> None:
    window = only("what did they do on Dec 28")
    assert in_windows("2022-12-30T00:00:00Z", [window]) and in_windows("2023-01-04T00:00:00Z", [window])
    assert not in_windows("2023-01-10T00:00:00Z", [window])


@pytest.mark.parametrize(
    ("query", "day"),
    [
        ("at Christmas 2023", date(2023, 12, 25)),
        ("on Christmas Eve 2023", date(2023, 12, 24)),
        ("on New Year's Eve 2022", date(2022, 12, 31)),
        ("on Valentine's Day 2024", date(2024, 2, 14)),
        ("for Halloween 2023", date(2023, 10, 31)),
        ("on the Fourth of July 2023", date(2023, 7, 4)),
        ("on Thanksgiving 2023", date(2023, 11, 23)),
        ("on Easter 2024", date(2024, 3, 31)),
        ("on Mother's Day 2023", date(2023, 5, 14)),
        ("on Memorial Day 2023", date(2023, 5, 29)),
    ],
)
def test_english_holidays_with_a_year_are_their_day(query: str, day: date) -> None:
    window = only(query)
    assert window.start < day.isoformat() < window.end and not window.yearless


def test_a_holiday_without_a_year_matches_it_in_any_year() -> None:
    window = only("what gifts did they get for Christmas")
    assert window.yearless and in_windows("2021-12-26T09:00:00Z", [window])


def test_easter_follows_the_gregorian_computus() -> None:
    assert [easter(y) for y in (2019, 2023, 2024, 2025)] == [
        date(2019, 4, 21),
        date(2023, 4, 9),
        date(2024, 3, 31),
        date(2025, 4, 20),
    ]


def test_the_last_monday_of_may_is_found() -> None:
    assert nth_weekday(2024, 5, 0, -1) == date(2024, 5, 27)


def test_a_query_without_a_date_has_no_windows() -> None:
    assert date_windows("what dishes did Ana cook for her friends in 12 minutes") == []


# -- relative dates in recorded text, resolved against the event's time ---------------------------

MONDAY = "2023-05-08T13:56:00Z"


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("I went to a support group yesterday", ("2023-05-07", "2023-05-08")),
        ("we talked about it last night", ("2023-05-07", "2023-05-08")),
        ("the day before yesterday it snowed", ("2023-05-06", "2023-05-07")),
        ("Last Friday I ran a 5k", ("2023-05-05", "2023-05-06")),
        ("This past Sunday we hiked", ("2023-05-07", "2023-05-08")),
        ("next Monday is the exam", ("2023-05-15", "2023-05-16")),
        ("last weekend was fun", ("2023-05-06", "2023-05-08")),
        ("last week I painted", ("2023-05-01", "2023-05-08")),
        ("we met two weeks ago", ("2023-04-21", "2023-04-28")),
        ("3 days ago I baked bread", ("2023-05-05", "2023-05-06")),
        ("next month we fly to Oslo", ("2023-06-01", "2023-07-01")),
        ("last year I started pottery", ("2022-01-01", "2023-01-01")),
        ("tomorrow is the big day", ("2023-05-09", "2023-05-10")),
        ("tonight we cook together", ("2023-05-08", "2023-05-09")),
        ("This afternoon I called the vet", ("2023-05-08", "2023-05-09")),
    ],
)
def test_relative_dates_resolve_against_the_time_the_event_occurred(text: str, span: tuple[str, str]) -> None:
    assert relative_spans(text, MONDAY) == [span]


def test_a_month_ago_in_january_is_december_of_the_year_before() -> None:
    assert relative_spans("a month ago I moved", "2024-01-15T00:00:00Z") == [("2023-12-01", "2024-01-01")]


def test_text_without_relative_dates_resolves_to_nothing() -> None:
    assert relative_spans("We paint landscapes together every weekend.", MONDAY) == []


def test_a_resolved_span_meets_the_query_windows_it_overlaps() -> None:
    may = date_windows("in May 2023")
    assert spans_meet([("2023-05-07", "2023-05-08")], may)
    assert not spans_meet([("2023-06-07", "2023-06-08")], may)
    assert spans_meet([("2023-05-07", "2023-05-08")], date_windows("last May"))


def test_two_windows_meet_when_they_share_a_day_and_a_yearless_one_meets_any_year() -> None:
    august, august_2026 = only("through August"), only("through August 2026")
    assert august.meets(august_2026) and august_2026.meets(august)
    assert august_2026.meets(only("on August 20, 2026")) and not august_2026.meets(only("in August 2025"))
    assert not august.meets(only("in September 2026")) and not august.meets(only("in July"))
    assert only("on March 14").meets(only("in March"))


def test_the_word_prefilter_finds_every_relative_date_the_patterns_find() -> None:
    # A non-ASCII character at the end makes relative_spans run every pattern without the prefilter.
    import random

    words = "the day before yesterday last this past next coming night today tonight morning afternoon".split()
    words += "evening tomorrow two 3 a few weeks days months years ago weekend week month year and we".split()
    words += ["Friday", "SUNDAY", "monday", "Last", "AGO", "This", "couple", "of", "Chicago", "yearly"]
    rng = random.Random(17)
    found = 0
    for _ in range(3000):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(2, 9)))
        spans = relative_spans(text, MONDAY)
        assert spans == relative_spans(text + " \u00e9", MONDAY), text
        found += bool(spans)
    assert found > 1000


def test_every_relative_form_needs_a_word_holding_one_of_the_anchors() -> None:
    from memlikehuman.text import dates

    for form, first, second in dates._RELATIVE_NEEDS:
        for word in second or first:
            assert any(anchor in word for anchor in dates._ANCHORS), (form, word)


def test_a_text_without_an_anchor_is_not_searched_for_the_needed_words(monkeypatch: pytest.MonkeyPatch) -> None:
    from memlikehuman.text import dates

    class Untouchable(tuple):
        def __iter__(self):
            raise AssertionError("the needed words were searched")

    monkeypatch.setattr(dates, "_NEEDED_WORDS", Untouchable())
    assert dates._possible_forms("this and that, last and next") == set()
    with pytest.raises(AssertionError, match="searched"):
        dates._possible_forms("last friday")
