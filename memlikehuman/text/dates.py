"""Dates named in a query, as spans of stored timestamps that recall lifts (no SQLite, no clock).

Forms understood (English and numeric):
- a day: `12 January 2024`, `January 12th, 2024`, `2024-01-12`, `2024/01/12`, `12.01.2024` (day first);
- a month or a year: `January 2024`, `in 2024`;
- without a year: `Jan 12`, `12th of January`, `in January` / `last May` (a month alone needs a
  capital and a word before it such as in/during/last, because "may" and "march" are also verbs);
- holidays named in English: Christmas (Eve), New Year's (Eve/Day), Valentine's Day, Halloween,
  Independence Day / Fourth of July, St. Patrick's Day, Easter, Thanksgiving, Labor Day,
  Memorial Day, Mother's Day, Father's Day; with a year (`Christmas 2023`) or without one.

A span without a year (`yearless`) matches the month-day part of a timestamp in any year.

The patterns are compiled on first use (31 of them took ~8 ms at import, a cost every hook run paid),
and an ASCII text that contains none of the words (or years) a group of patterns needs is not
scanned at all: most prompts and replies name no date. Non-ASCII text is always scanned, since
case-insensitive matching lets some non-ASCII letters match ASCII ones (K, ſ, ı).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from .holidays import easter, nth_weekday

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
# An event named by its day is often talked about a few days later, rarely before.
DAY_BEFORE, DAYS_AFTER = 1, 8

_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_NOT_YEAR = r"(?![\d,]*\s*(?:19|20)\d\d\b)(?!\d)"
_LEAD = r"(?:in|during|since|of|last|this|next|early|late|mid|until|till|before|after|by|around|from|through)"
_PATTERN_SOURCES = (
    ("mdy", rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I),
    ("dmy", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I),
    ("my", rf"\b{_MONTH},?\s+{_YEAR}\b", re.I),
    ("iso", r"\b((?:19|20)\d\d)[-/](\d\d?)[-/](\d\d?)\b", 0),
    ("dotted", r"\b(\d{1,2})\.(\d{1,2})\.((?:19|20)\d\d)\b", 0),
    ("y", r"\b(?:in|of|during|since)\s+((?:19|20)\d\d)\b", re.I),
    ("md", rf"\b{_MONTH}\s+{_DAY}\b{_NOT_YEAR}", re.I),
    ("dm", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?!\w)(?!,?\s*(?:19|20)\d\d)", re.I),
    ("m", rf"\b{_LEAD}\s+{_MONTH}(?!\w)(?!,?\s*(?:19|20)\d\d)", re.I),
)
# Every pattern above needs a month name or a year (19xx, 20xx).
_EXPLICIT_WORDS = (*MONTHS, "19", "20")


@functools.cache
def _compiled(group: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The patterns of one group ("explicit", "holiday", "relative"), compiled once, on first use;
    "lowered": the relative ones without re.I, for lowercased ASCII text (the same matches, faster)."""
    if group == "lowered":
        return tuple((name, re.compile(source, flags & ~re.I)) for name, source, flags in _RELATIVE_SOURCES)
    sources = {"explicit": _PATTERN_SOURCES, "holiday": _HOLIDAY_SOURCES, "relative": _RELATIVE_SOURCES}[group]
    return tuple((name, re.compile(source, flags)) for name, source, flags in sources)


def _may_match(text: str, words: Sequence[str]) -> bool:
    """False only when no pattern that needs one of `words` can match the text."""
    if not text.isascii():
        return True
    lowered = text.lower()
    return any(word in lowered for word in words)


@dataclass(frozen=True)
class DateWindow:
    """A span of stored timestamps [start, end) that a date in the query refers to.

    With `yearless`, start and end are "MM-DD" and the span is compared with the month-day part of
    a timestamp; start > end wraps around New Year.
    """

    start: str
    end: str
    yearless: bool = False

    def contains(self, stamp: str) -> bool:
        """Whether an ISO 8601 timestamp (UTC, as stored) falls inside the span."""
        if not self.yearless:
            return self.start <= stamp < self.end
        day = stamp[5:10]
        if self.start <= self.end:
            return self.start <= day < self.end
        return day >= self.start or day < self.end

    def meets(self, other: DateWindow) -> bool:
        """Whether the two spans share a day (a yearless span meets that day of any year)."""
        if not self.yearless and not other.yearless:
            return self.start < other.end and other.start < self.end
        return self.contains(other._first_day()) or other.contains(self._first_day())

    def _first_day(self) -> str:
        return f"0000-{self.start}" if self.yearless else self.start


def date_windows(query: str) -> list[DateWindow]:
    """The days, months, years and holidays a query names explicitly (see the module docstring)."""
    windows: list[DateWindow] = []
    taken: list[tuple[int, int]] = []
    for span, window in _found(query):
        if any(a < span[1] and span[0] < b for a, b in taken):
            continue
        windows.append(window)
        taken.append(span)
    return windows


def without_dates(text: str) -> str:
    """The text with the dates it names explicitly (the forms of `date_windows`) replaced by spaces."""
    spans = [span for span, _ in _found(text)]
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def in_windows(stamp: str, windows: Sequence[DateWindow]) -> bool:
    """Whether the timestamp falls inside any of the windows."""
    return any(window.contains(stamp) for window in windows)


def _found(query: str) -> Iterator[tuple[tuple[int, int], DateWindow]]:
    holidays = _compiled("holiday") if _may_match(query, _HOLIDAY_WORDS) else ()
    for name, pattern in holidays:
        for match in pattern.finditer(query):
            year = int(match.group("year")) if match.group("year") else None
            window = _holiday(name, year)
            if window is not None:
                yield match.span(), window
    explicit = _compiled("explicit") if _may_match(query, _EXPLICIT_WORDS) else ()
    for form, pattern in explicit:
        for match in pattern.finditer(query):
            window = _window(form, match.groups())
            if window is not None:
                yield match.span(), window


def _window(form: str, groups: tuple[str, ...]) -> DateWindow | None:
    try:
        if form == "y":
            year = int(groups[0])
            return DateWindow(f"{year:04d}", f"{year + 1:04d}")
        if form == "my":
            month, year = MONTHS[groups[0].lower()], int(groups[1])
            first = date(year, month, 1)
            following = date(year + month // 12, month % 12 + 1, 1)
            return DateWindow(first.isoformat(), following.isoformat())
        if form == "m":
            if not groups[0][0].isupper():
                return None  # "this may be", "in march order": a month alone is written with a capital
            month = MONTHS[groups[0].lower()]
            return DateWindow(f"{month:02d}-01", f"{month % 12 + 1:02d}-01", yearless=True)
        if form in ("md", "dm"):
            month_name, day_text = (groups[0], groups[1]) if form == "md" else (groups[1], groups[0])
            return _yearless_day(MONTHS[month_name.lower()], int(day_text))
        if form == "iso":
            day = date(int(groups[0]), int(groups[1]), int(groups[2]))
        elif form == "dotted":
            day = date(int(groups[2]), int(groups[1]), int(groups[0]))
        elif form == "mdy":
            day = date(int(groups[2]), MONTHS[groups[0].lower()], int(groups[1]))
        else:
            day = date(int(groups[2]), MONTHS[groups[1].lower()], int(groups[0]))
    except (ValueError, KeyError):
        return None
    return day_window(day)


def day_window(day: date) -> DateWindow:
    """The span recall lifts for a named day: a day before to a week after."""
    return DateWindow((day - timedelta(days=DAY_BEFORE)).isoformat(), (day + timedelta(days=DAYS_AFTER)).isoformat())


def _yearless_day(month: int, day: int, days_after: int = DAYS_AFTER) -> DateWindow | None:
    try:
        base = date(2000, month, day)  # a leap year, so 29 February is a day
    except ValueError:
        return None
    start = base - timedelta(days=DAY_BEFORE)
    end = base + timedelta(days=days_after)
    return DateWindow(start.strftime("%m-%d"), end.strftime("%m-%d"), yearless=True)


# -- holidays ------------------------------------------------------------------------------------

_FIXED = {
    "christmas eve": (12, 24),
    "christmas": (12, 25),
    "new year's eve": (12, 31),
    "new year": (1, 1),
    "valentine": (2, 14),
    "halloween": (10, 31),
    "independence day": (7, 4),
    "st patrick": (3, 17),
}
# (month, weekday Monday=0, which: 1st, 2nd, ..., -1 = last)
_NTH_WEEKDAY = {
    "thanksgiving": (11, 3, 4),
    "labor day": (9, 0, 1),
    "memorial day": (5, 0, -1),
    "mother's day": (5, 6, 2),
    "father's day": (6, 6, 3),
}
_HOLIDAY_NAMES = {
    "christmas eve": r"christmas\s+eve",
    "christmas": r"christmas|xmas",
    "new year's eve": r"new\s+year['’]?s\s+eve|nye",
    "new year": r"new\s+year['’]?s(?:\s+day)?|new\s+year",
    "valentine": r"valentine['’]?s(?:\s+day)?",
    "halloween": r"hallowe['’]?en",
    "independence day": r"independence\s+day|fourth\s+of\s+july|4th\s+of\s+july|july\s+4th",
    "st patrick": r"(?:st\.?|saint)\s+patrick['’]?s(?:\s+day)?",
    "easter": r"easter(?:\s+sunday)?",
    "thanksgiving": r"thanksgiving",
    "labor day": r"labou?r\s+day",
    "memorial day": r"memorial\s+day",
    "mother's day": r"mother['’]?s\s+day",
    "father's day": r"father['’]?s\s+day",
}
_HOLIDAY_SOURCES = tuple(
    (name, rf"\b(?:{form})\b(?:,?\s+(?P<year>(?:19|20)\d\d)\b)?", re.I) for name, form in _HOLIDAY_NAMES.items()
)
# One of these is in every holiday form above.
_HOLIDAY_WORDS: tuple[str, ...] = ("christmas", "xmas", "year", "nye", "valentine", "hallowe", "independence")
_HOLIDAY_WORDS += ("july", "patrick", "easter", "thanksgiving", "labo", "memorial", "mother", "father")


def _holiday(name: str, year: int | None) -> DateWindow | None:
    if name in _FIXED:
        month, day = _FIXED[name]
        return _yearless_day(month, day) if year is None else day_window(date(year, month, day))
    if name == "easter":
        return None if year is None else day_window(easter(year))
    month, weekday, nth = _NTH_WEEKDAY[name]
    if year is None:
        # The day moves within a week: that week, plus the days after it as for any named day.
        first = 1 + 7 * (nth - 1) if nth > 0 else 25
        return _yearless_day(month, first, 6 + DAYS_AFTER)
    return day_window(nth_weekday(year, month, weekday, nth))


# -- relative dates in recorded text ---------------------------------------------------------------

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_COUNTS |= {"eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3, "few": 3, "couple of": 2}
_COUNT = r"(\d{1,2}|a couple of|couple of|a few|few|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
_WEEKDAY = "(" + "|".join(WEEKDAYS) + ")"
_RELATIVE_SOURCES = (
    ("before_yesterday", r"\bthe\s+day\s+before\s+yesterday\b", re.I),
    ("yesterday", r"\b(?:yesterday|last\s+night)\b", re.I),
    ("today", r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", re.I),
    ("tomorrow", r"\btomorrow\b", re.I),
    ("ago", rf"\b{_COUNT}\s+(day|week|month|year)s?\s+ago\b", re.I),
    ("weekday", rf"\b(last|this\s+past|next|this\s+coming)\s+{_WEEKDAY}\b", re.I),
    ("weekend", r"\b(last|this\s+past|next|this)\s+weekend\b", re.I),
    ("period", r"\b(last|next|this)\s+(week|month|year)\b", re.I),
)
# Words a lowercased ASCII text holds (one of each set) when a form above matches; only those forms run.
_LEAD_WORDS = frozenset(("last", "next", "this"))
_RELATIVE_NEEDS: tuple[tuple[str, frozenset[str], frozenset[str] | None], ...] = (
    ("before_yesterday", frozenset(("yesterday",)), None),
    ("yesterday", frozenset(("yesterday", "night")), None),
    ("today", frozenset(("today", "tonight", "morning", "afternoon", "evening")), None),
    ("tomorrow", frozenset(("tomorrow",)), None),
    ("ago", frozenset(("ago",)), None),
    ("weekday", _LEAD_WORDS, frozenset(WEEKDAYS)),
    ("weekend", _LEAD_WORDS, frozenset(("weekend",))),
    ("period", _LEAD_WORDS, frozenset(("week", "month", "year"))),
)
_NEEDED_WORDS = tuple(sorted({word for _, first, second in _RELATIVE_NEEDS for word in first | (second or set())}))
# Each form needs a word holding one of these (its second set, else its first: tests/test_dates.py
# checks it). Most texts hold none, and ten substring tests cost a quarter of the full one.
_ANCHORS = ("day", "night", "morning", "afternoon", "evening", "tomorrow", "ago", "week", "month", "year")


def _possible_forms(lowered: str | None) -> set[str]:
    """The relative forms that may match a lowercased ASCII text (None: a text with other characters,
    which all may match: under re.I a non-ASCII look-alike such as 'ſ' matches 's')."""
    if lowered is None:
        return {form for form, _, _ in _RELATIVE_NEEDS}
    for anchor in _ANCHORS:
        if anchor in lowered:
            break
    else:
        return set()
    present = {word for word in _NEEDED_WORDS if word in lowered}
    return {
        form
        for form, first, second in _RELATIVE_NEEDS
        if not first.isdisjoint(present) and (second is None or not second.isdisjoint(present))
    }


def relative_spans(text: str, occurred_at: str) -> list[tuple[str, str]]:
    """The dates that relative expressions in text refer to, as ISO date spans [start, end).

    "yesterday" said on 2024-05-08 is ("2024-05-07", "2024-05-08"); "last week" is the Monday-to-
    Sunday week before; "last Friday" the latest Friday before the day; "two weeks ago" the week
    around that day; "next month" the whole month. The day is the UTC date of occurred_at.
    """
    try:
        today = date.fromisoformat(occurred_at[:10])
    except ValueError:
        return []
    found: list[tuple[str, str]] = []
    taken: list[tuple[int, int]] = []
    lowered = text.lower() if text.isascii() else None
    forms = _possible_forms(lowered)
    if not forms:
        return found
    for form, pattern in _compiled("relative" if lowered is None else "lowered"):
        if form not in forms:
            continue
        for match in pattern.finditer(text if lowered is None else lowered):
            if any(a < match.end() and match.start() < b for a, b in taken):
                continue
            span = _relative(form, [g.lower() for g in match.groups()], today)
            if span is not None and span not in found:
                found.append(span)
                taken.append(match.span())
    return found


def _days(first: date, count: int) -> tuple[str, str]:
    return first.isoformat(), (first + timedelta(days=count)).isoformat()


def _month(year: int, month: int) -> tuple[str, str]:
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    following = date(year + month // 12, month % 12 + 1, 1)
    return date(year, month, 1).isoformat(), following.isoformat()


def _relative(form: str, groups: list[str], today: date) -> tuple[str, str] | None:
    monday = today - timedelta(days=today.weekday())
    if form in ("before_yesterday", "yesterday", "today", "tomorrow"):
        shift = {"before_yesterday": -2, "yesterday": -1, "today": 0, "tomorrow": 1}[form]
        return _days(today + timedelta(days=shift), 1)
    if form == "ago":
        count = int(groups[0]) if groups[0].isdigit() else _COUNTS[" ".join(groups[0].split())]
        unit = groups[1]
        if unit == "day":
            return _days(today - timedelta(days=count), 1)
        if unit == "week":
            return _days(today - timedelta(days=7 * count + 3), 7)
        if unit == "month":
            return _month(today.year, today.month - count)
        return f"{today.year - count:04d}-01-01", f"{today.year - count + 1:04d}-01-01"
    if form == "weekday":
        target = WEEKDAYS.index(groups[1])
        if groups[0].startswith(("last", "this past")):
            back = (today.weekday() - target) % 7 or 7
            return _days(today - timedelta(days=back), 1)
        ahead = (target - today.weekday()) % 7 or 7
        return _days(today + timedelta(days=ahead), 1)
    if form == "weekend":
        saturday = monday + timedelta(days=5)
        return _days(saturday - timedelta(days=7) if groups[0].startswith(("last", "this past")) else saturday, 2)
    step = {"last": -1, "this": 0, "next": 1}[groups[0]]
    if groups[1] == "week":
        return _days(monday + timedelta(days=7 * step), 7)
    if groups[1] == "month":
        return _month(today.year, today.month + step)
    return f"{today.year + step:04d}-01-01", f"{today.year + step + 1:04d}-01-01"


def spans_meet(spans: Sequence[tuple[str, str]], windows: Sequence[DateWindow]) -> bool:
    """Whether any resolved span overlaps any query window."""
    for start, end in spans:
        for window in windows:
            if window.yearless:
                if window.contains(start):
                    return True
            elif start < window.end and window.start < end:
                return True
    return False
