"""Questions: a turn that asks, and one that only asks (a question holds no fact; its answer does).

Pure rules a user can check: a turn asks when it ends with a question mark (Latin, CJK full-width or
Arabic); it only asks when it is one sentence of at most QUESTION_WORDS words that asks, or that opens
with a request for an answer ("Tell me a joke about cats.", "Please explain the build."). A longer
sentence tells while it asks ("I'm moving the sprint deadline to April 5 because of the accessibility
work, can you help me re-plan the board?"): of LoCoMo's one-sentence questions 99% have fewer than 20
words, of BEAM's user turns that are one question 88% have more, and they state the project's facts.
`statements` is a turn without its short questions: what it tells. `about_replies`: a question about
what the assistant said ("What approach did you recommend ...?").
"""

from __future__ import annotations

import re

_ASKS = re.compile(r"[?？؟]\W*$")
_SENTENCE_END = re.compile(r"[.!?。！？؟]\s|\n")
_SENTENCE = re.compile(r"[^.!?。！？؟\n]*(?:[.!?。！？؟]+|\n|$)")
QUESTION_WORDS = 20
# The openings of a request for an answer, which states nothing: a verb of telling or showing. An
# instruction ("Use pnpm.", "Write commit messages in English.", "Could you always run ruff first.") is
# not one.
REQUESTS = ("tell me", "show me", "give me", "help me", "explain", "describe", "summarize", "summarise", "list")
_REQUEST = re.compile(r"(?:please,?\s+)?(?:" + "|".join(REQUESTS).replace(" ", r"\s+") + r")\b", re.IGNORECASE)
_YOU_SAID = re.compile(
    r"\bdid you\b|\byou (?:said|recommended|suggested|told|mentioned|gave|provided|proposed|explained|shared"
    r"|described|outlined|listed)\b",
    re.IGNORECASE,
)


def asks(text: str) -> bool:
    """Whether a turn ends with a question mark (Latin, CJK full-width or Arabic)."""
    return _ASKS.search(text.strip()) is not None


def only_asks(text: str) -> bool:
    """Whether a turn is one question and nothing else: a single sentence of at most QUESTION_WORDS words
    that ends with a question mark or opens with a request (REQUESTS). A turn that states something
    first keeps what it states."""
    return _question(text.strip())


def _question(sentence: str) -> bool:
    asked = asks(sentence) or _REQUEST.match(sentence) is not None
    return asked and _SENTENCE_END.search(sentence) is None and len(sentence.split()) <= QUESTION_WORDS


def statements(text: str) -> str:
    """The turn without its short questions and requests (sentences of at most QUESTION_WORDS words that
    end with a question mark or open with a request): what it tells, not what it asks."""
    return "".join(s for s in _SENTENCE.findall(text) if s.strip() and not _question(s.strip()))


def about_replies(query: str) -> bool:
    """Whether a query asks what the assistant said: "did you", or "you" with a verb of telling
    ("you recommended", "you suggested", "you said", ...). A request ("can you suggest") is not one."""
    return _YOU_SAID.search(query) is not None
