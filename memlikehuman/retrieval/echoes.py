"""Echoes: what recall and injection leave out or fold together, so that facts come before repetitions.

Three rules, each a plain comparison a user can check:
- **The same words.** Two turns of one speaker say the same when their words are the same in the same
  order, case, punctuation and spacing aside (`same_words`). Repeats are folded into one item, the
  best ranked of them, with how many times it was said and since when.
- **The question being answered.** The prompt hook leaves out the earlier turns that say the same as
  the prompt (the user asking again); memory_recall leaves out the prompt a hook recorded last in the
  scope while it has no answer yet (`unanswered_prompt`): the agent is answering it.
- **Questions are asked, not told.** The prompt hook never hands back a user's own earlier question
  (a turn that is one sentence ending with a question mark): it holds no fact. The reply after it
  borrows its words when the gate weighs it (injection.py), so the answer is found instead.
- **The newest first.** Turns of one speaker that hold the same words of the query are about the same
  matter (a deadline set, then moved): they keep the places the ranking gave them, newest first, and
  each older one names the newest (`newest_first`).
- **Answers first.** When the assistant's reply to a user's question (a turn that ends with a question
  mark; the reply is the next turn of its session) is ranked right after it, the two swap places: the
  reply comes first (`answers_first`). A reply ranked further down stays there (the ranking found it
  less relevant than what lies between), and a reply to a statement stays after it: the statement
  holds the fact, the reply ("Noted.") acknowledges it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..archive.connection import Connection
from ..records import Scope
from ..text import asking

_WORD = re.compile(r"\w+", re.UNICODE)
# The event IDs the host hooks give the prompts they record (hosts/hook.py, event_id): HOST:SESSION:user:DIGEST.
_HOOK_PROMPT = re.compile(r"^(?:claude-code|codex|cursor|gemini):.+:user:[0-9a-f]{32}$")

T = TypeVar("T")
M = TypeVar("M")


only_asks, asks = asking.only_asks, asking.asks


def same_words(text: str) -> str:
    """The comparison key of a turn: its words, lowercased, one space apart."""
    return " ".join(_WORD.findall(text.casefold()))


@dataclass
class Folded(Generic[T]):
    """One item standing for every turn that says the same: the best ranked, how many, the first time."""

    item: T
    times: int
    first_at: str
    members: list[T]


def fold(items: Sequence[T], key_of: Callable[[T], str], when_of: Callable[[T], str]) -> list[Folded[T]]:
    """The items (best first) with those of one key folded into the best ranked of them.

    `key_of` gives the speaker and `same_words` of an item's text; an empty key folds nothing."""
    groups: dict[str, Folded[T]] = {}
    order: list[str] = []
    for item in items:
        key = key_of(item) or f"\x00{len(order)}"
        group = groups.get(key)
        if group is None:
            groups[key] = Folded(item, 1, when_of(item), [item])
            order.append(key)
            continue
        group.times += 1
        group.members.append(item)
        group.first_at = min(group.first_at, when_of(item))
    return [groups[key] for key in order]


def answers_first(chosen: Sequence[T], answer_of: Callable[[T], T | None], same: Callable[[T, T], bool]) -> list[T]:
    """The chosen items (best first) with each question swapped with its answer ranked right after it."""
    out = list(chosen)
    for at in range(len(out) - 1):
        answer = answer_of(out[at])
        if answer is not None and same(out[at + 1], answer):
            out[at], out[at + 1] = out[at + 1], out[at]
    return out


def in_windows(hits: Sequence[T], size: int, order: Callable[[Sequence[T]], list[T]]) -> list[T]:
    """The hits with `order` applied to each `size` of them in turn (the first `size`, the next, ...)."""
    return [hit for start in range(0, len(hits), size) for hit in order(hits[start : start + size])]


def newest_first(
    hits: Sequence[T],
    matter_of: Callable[[T], M | None],
    same: Callable[[M, M], bool],
    when_of: Callable[[T], str],
    labelled: Callable[[T, T], T],
) -> list[T]:
    """The hits (best first) with those of one matter given their places again, newest first; each older one
    labelled with the newest (`labelled(older, newest)`). Two hits are of one matter when `same` holds for
    their matters, and so are hits joined through others; a hit without a matter (None) joins none."""
    matters = [matter_of(hit) for hit in hits]
    group = list(range(len(hits)))  # each hit's place points to the first place of its matter

    def first(at: int) -> int:
        while group[at] != at:
            at = group[at]
        return at

    for later, b in enumerate(matters):
        for earlier in range(later):
            a = matters[earlier]
            if a is not None and b is not None and same(a, b):
                group[first(later)] = first(earlier)
    places: dict[int, list[int]] = {}
    for at in range(len(hits)):
        if matters[at] is not None:
            places.setdefault(first(at), []).append(at)
    out = list(hits)
    for members_at in places.values():
        if len(members_at) < 2:
            continue
        members = sorted((hits[at] for at in members_at), key=when_of, reverse=True)
        out[members_at[0]] = members[0]
        for at, older in zip(members_at[1:], members[1:], strict=True):
            out[at] = labelled(older, members[0])
    return out


def unanswered_prompt(db: Connection, scope: Scope) -> int | None:
    """The sequence of the prompt a host hook recorded last in the scope, while no reply followed it in its
    session: the prompt the agent is answering (None when there is none)."""
    row = db.one(
        "SELECT sequence, event_id, session_id FROM events WHERE persona_id = ? AND project_id = ?"
        " AND role = 'user' AND kind = 'record' ORDER BY sequence DESC LIMIT 1",
        (scope.persona_id, scope.project_id),
    )
    if row is None or not _HOOK_PROMPT.match(row["event_id"]):
        return None
    replied = db.one(
        "SELECT 1 AS replied FROM events WHERE persona_id = ? AND project_id = ? AND session_id = ?"
        " AND sequence > ? AND role = 'assistant' LIMIT 1",
        (scope.persona_id, scope.project_id, row["session_id"], row["sequence"]),
    )
    return None if replied else int(row["sequence"])
