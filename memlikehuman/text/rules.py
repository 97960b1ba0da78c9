"""Standing rules and preferences: what a user tells an agent to keep doing, not only now.

A pure rule a user can check: a turn states one when it opens with "Always" or "Never" (also after
"Please"; not "Never mind", which drops a thing), or says "I prefer" ("I'd prefer", "I would prefer"),
within its first RULE_CHARS characters.
Recall weighs a user's such turn a little more (ranking.Tuning.standing): it holds for every later
question it touches ("Always include version numbers when I ask about libraries"), where a question
shares few words with it.
"""

from __future__ import annotations

import re

_OPENS = re.compile(r"\s*(?:please\s+)?(?:always|never(?!\s+mind\b))\b", re.IGNORECASE)
_PREFERS = re.compile(r"\bI(?:['’]d| would)? prefer\b", re.IGNORECASE)
RULE_CHARS = 600  # as search.ASKING_CHARS: a rule is said in the opening sentences
# Each word the rule looks for, and how many of a turn's first characters hold it: a query can read only
# the turns that have one (sessions/context.py); "always" and "never" open the turn, after "please" at most.
RULE_WORDS = (("always", 40), ("never", 40), ("prefer", RULE_CHARS))


def states_rule(text: str) -> bool:
    """Whether a turn states a standing rule or preference (the module's rule)."""
    head = text[:RULE_CHARS]
    # "prefer" looked for first: the pattern alone would be tried at every one of the head's characters.
    return _OPENS.match(head) is not None or ("prefer" in head.lower() and _PREFERS.search(head) is not None)
