"""The names a turn uses in address ("Hey Mel!"): the record-time half of speaker aliases.

Kept apart from aliases.py, which learns aliases from these names and phrases queries with them:
every memory_record runs ``addressed`` (archive/alias_evidence.py), and a hook is a new process per
prompt, so this module holds only two patterns and a word list (no dataclass to build on import).
"""

from __future__ import annotations

import functools
import re

_NAME = r"([A-Z][a-z]+(?:-[A-Z][a-z]+)?)"
_GREETING = r"(?i:hey|hi|hello|hiya|thanks|thank you|thank u|wow|congrats|congratulations|yay|good morning|morning|bye)"
_ADDRESS = (
    # "Hey Mel!", "Thanks Mel,"; the look-ahead skips most word starts at once (2x faster on chat text)
    rf"\b(?=[HhTtWwCcYyGgMmBb]){_GREETING}[,!]?\s+{_NAME}(?=\s*[,!.?]|\s*$)",
    rf",\s+{_NAME}\s*[!.?]+(?:\s|$)",  # "That's great, Mel!"
)
# Words that follow a greeting or a comma without being anyone's name.
NOT_NAMES = frozenset(
    "I You We They He She It That This There Here What Why How When Where Who Your My Our Their His Her"
    " Its Yes No Yeah Yep Nope Oh Wow Well So And But Or Thanks Thank Hey Hi Hello Bye Sure Okay Ok Great"
    " Good Nice Awesome Cool Really Totally Definitely Absolutely Congrats Congratulations Everyone All"
    " Guys Folks Buddy Dude Man Mate Friend Dear Honey Sweetie Babe Bro Sis Mom Dad Mum Mama Papa"
    " Monday Tuesday Wednesday Thursday Friday Saturday Sunday Today Tomorrow Yesterday Again Too Though"
    " Anyway Also Then Now Soon Later Sorry Please Lol Haha".split()
)


@functools.cache
def _patterns() -> tuple[re.Pattern[str], ...]:
    """The patterns, compiled on first use: a start hook records nothing and never needs them.

    First a necessary condition: both patterns put whitespace before the name, so a text without
    whitespace then [A-Z][a-z] has no match (most turns; one scan instead of two).
    """
    return tuple(re.compile(pattern) for pattern in (r"\s[A-Z][a-z]", *_ADDRESS))


# The greetings of _ADDRESS but "hi" as lowercase substrings: one of them, or "hi" at a word start
# followed by what the pattern allows, is in every ASCII text the greeting pattern can match.
_GREETING_PARTS = ("hey", "hello", "thank", "wow", "congrat", "yay", "morning", "bye")
_AFTER_HI = frozenset(",! \t\n\r\f\vy")


def _may_greet(text: str) -> bool:
    """False only when the greeting pattern cannot match (a substring test ~6x cheaper than the scan).

    Exact for ASCII text; any other text is scanned, since under re.I a look-alike such as the
    Kelvin sign matches "k" without lowering to it.
    """
    if not text.isascii():
        return True
    lowered = text.lower()
    for part in _GREETING_PARTS:
        if part in lowered:
            return True
    at = lowered.find("hi")
    while at != -1:
        if (at == 0 or not lowered[at - 1].isalnum()) and lowered[at + 2 : at + 3] in _AFTER_HI:
            return True
        at = lowered.find("hi", at + 2)
    return False


def addressed(text: str) -> list[str]:
    """The names a turn uses in address ("Hey Mel!"), in order, without repeats."""
    found: list[str] = []
    name_start, greeting, comma = _patterns()
    if not name_start.search(text):
        return found
    for pattern in (greeting, comma) if _may_greet(text) else (comma,):
        for match in pattern.finditer(text):
            name = match.group(1)
            if name not in NOT_NAMES and name not in found:
                found.append(name)
    return found
