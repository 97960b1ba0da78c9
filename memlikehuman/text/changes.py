"""A statement that says a value changed: "increased to 7", "moved from March 14 to March 28", "the new
April 25 deadline".

A pure rule a user can check: a verb of change (CHANGE_VERBS), then at most CHANGE_GAP words, then "to"
or "of" and a number or a date, with at most one word between ("to $450", "to 5-7 months", "to March
22", "to port 9443", "my increased book budget of $50"); or "new" right before one. Recall puts such a
statement above an older one of the same speaker that shares two of the query's words with it
(recall._same_matter; the changed statement holds a word also in its singular or plural): the old value
is then labelled as earlier. A change of something that is not
a number or a date ("I updated my headline to ...", "adjusted my manuscript to MLA style") is no change
of a value, and joins nothing by this rule.
"""

from __future__ import annotations

import re

CHANGE_VERBS = (
    "increased", "decreased", "raised", "lowered", "reduced", "extended", "shortened", "moved", "rescheduled",
    "postponed", "delayed", "changed", "updated", "adjusted", "revised", "bumped", "upped",
)  # fmt: skip
CHANGE_GAP = 6  # words between the verb and "to": "adjusted our holiday gift budget to $450"
_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
_VALUE = rf"\$?(?:\d|(?:{_MONTHS})[a-z]*\W+\d)"
_VERB = rf"\b(?:{'|'.join(CHANGE_VERBS)})\b"
_CHANGED = re.compile(
    rf"{_VERB}(?:\W+\w+){{0,{CHANGE_GAP}}}?\W+(?:to|of)\W+(?:\w+\W+)?{_VALUE}"
    rf"|\bnew\W+{_VALUE}",
    re.IGNORECASE,
)


def says_change(text: str) -> bool:
    """Whether the text says a number or a date changed (the module's rule)."""
    return _CHANGED.search(text) is not None
