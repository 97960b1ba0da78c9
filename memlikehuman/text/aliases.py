"""Speaker aliases: the names people use for each other in a conversation. Pure functions.

A chat's speaker labels are one name ("Melanie"); the people in it call each other another
("Hey Mel!"). A question asks about "Melanie", while the turn that answers it says "Mel". This
module learns such aliases from the conversation itself and turns a query that names a speaker
into further phrasings with the other names (`phrasings`), or only a query that calls a speaker
by an alias into one with the speaker's label (`toward_labels`: what recall uses, fused like the
agent's `alternatives`).

What counts as evidence: a name used in address ("Hey Mel!", "Thanks so much, Mel.") in a turn
that answers another speaker, so the name belongs to that speaker (the other side of the chat
confirms it by answering). Pets and third parties are addressed rarely and with names unlike the
speaker's, so an alias needs `MIN_EVIDENCE` turns and a name that starts like the speaker's
label (a short form: Mel, Deb, Cal), or `MIN_UNLIKE` turns when it does not (a nickname). A
wrong alias costs little: it only adds a phrasing whose ranking is fused with the query's own.

What is stored (archive/alias_evidence.py): one row per turn and name that turn uses in
address, naming the speaker of the turn before; `learn` aggregates a scope's rows when they are read.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .addressing import addressed

MIN_EVIDENCE = 2
MIN_UNLIKE = 5
# Further phrasings a query may get from aliases (the agent's own alternatives come first).
MAX_PHRASINGS = 3

_WORD = re.compile(r"\b[A-Z][a-z]+(?:-[A-Z][a-z]+)?(?:'s)?\b")


@dataclass(frozen=True)
class Alias:
    speaker: str  # the speaker label, as recorded (the event's source)
    name: str  # the other name people use for that speaker
    evidence: int  # turns that use it in address


def observations(turns: Iterable[tuple[str, str]]) -> Counter[tuple[str, str]]:
    """(speaker addressed, name) -> turns, from one session's (speaker, text) turns in order.

    A turn addresses the speaker of the turn before it, when that is someone else.
    """
    seen: Counter[tuple[str, str]] = Counter()
    previous = None
    for speaker, text in turns:
        if previous is not None and previous != speaker:
            for name in addressed(text):
                seen[(previous, name)] += 1
        previous = speaker
    return seen


def learn(seen: Mapping[tuple[str, str], int], speakers: Iterable[str]) -> list[Alias]:
    """The aliases that the evidence supports, by speaker then name."""
    labels = {label.casefold() for label in speakers}
    uses: Counter[str] = Counter()
    for (_, name), count in seen.items():
        uses[name] += count
    found = []
    for (speaker, name), count in sorted(seen.items()):
        if name.casefold() in labels or count < uses[name] - count:
            continue  # another speaker's label, or a name used more often for someone else
        if count >= (MIN_EVIDENCE if starts_alike(name, speaker) else MIN_UNLIKE):
            found.append(Alias(speaker, name, count))
    return found


def starts_alike(name: str, label: str) -> bool:
    """A short form: "Mel" of "Melanie", "Jo" of "Joanna" (case-insensitive prefix, 2+ letters)."""
    name, label = name.casefold(), label.casefold()
    return len(name) >= 2 and label.startswith(name[: max(2, min(len(name), 3))])


def phrasings(query: str, aliases: Sequence[Alias], speakers: Iterable[str]) -> list[str]:
    """Further phrasings of ``query``: each speaker it names, named the other ways.

    A query word names a speaker when it is the label, an alias, or a near miss of either (one
    letter off, for names of 5 letters or more; a possessive "Tim's" counts as "Tim").
    """
    names: dict[str, set[str]] = {label: {label} for label in speakers}
    for alias in aliases:
        names.setdefault(alias.speaker, {alias.speaker}).add(alias.name)
    out: list[str] = []
    for word in dict.fromkeys(_WORD.findall(query)):
        bare = word.removesuffix("'s")
        for forms in names.values():
            if len(forms) < 2 or not any(_same_name(bare, form) for form in forms):
                continue
            for form in sorted(forms - {bare}):
                phrased = re.sub(rf"\b{re.escape(bare)}\b", form, query)
                if phrased != query and phrased not in out:
                    out.append(phrased)
    return out[:MAX_PHRASINGS]


def toward_labels(query: str, names: Iterable[tuple[str, str]]) -> list[str]:
    """Further phrasings of ``query`` that call a speaker by an alias: the alias replaced by the label.

    ``names``: (speaker label, alias) pairs. A query word calls the speaker when it is an alias or
    a near miss of the alias or the label (as in `phrasings`), but not the label itself: recall
    finds a speaker's turns by the label (their attribution, the speaker factor), and phrasings the
    other way, label to alias, measured no gain (docs/decisions/2026-12-01-speaker-aliases-as-evidence.md).
    """
    forms: dict[str, set[str]] = {}
    for label, name in names:
        forms.setdefault(label, {label}).add(name)
    out: list[str] = []
    for word in dict.fromkeys(_WORD.findall(query)):
        bare = word.removesuffix("'s")
        for label, known in sorted(forms.items()):
            if bare.casefold() == label.casefold() or not any(_same_name(bare, form) for form in known):
                continue
            phrased = re.sub(rf"\b{re.escape(bare)}\b", label, query)
            if phrased != query and phrased not in out:
                out.append(phrased)
    return out[:MAX_PHRASINGS]


def _same_name(word: str, form: str) -> bool:
    if word.casefold() == form.casefold():
        return True
    return min(len(word), len(form)) >= 5 and _one_edit(word.casefold(), form.casefold())


def _one_edit(a: str, b: str) -> bool:
    """True when a and b differ by one substitution, insertion or deletion."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))
