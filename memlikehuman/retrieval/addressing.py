"""The names a turn uses in address ("Hey Mel!"): the record-time half of speaker aliases (issue 20).

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
    """The patterns, compiled on first use: a start hook records nothing and never needs them."""
    return tuple(re.compile(pattern) for pattern in _ADDRESS)


def addressed(text: str) -> list[str]:
    """The names a turn uses in address ("Hey Mel!"), in order, without repeats."""
    found: list[str] = []
    for pattern in _patterns():
        for match in pattern.finditer(text):
            name = match.group(1)
            if name not in NOT_NAMES and name not in found:
                found.append(name)
    return found
