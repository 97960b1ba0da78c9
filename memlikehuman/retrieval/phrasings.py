"""Several phrasings of one recall: checking the `alternatives` and fusing their rankings.

A question names a category ("dishes") where the remembered turn names an instance ("I made soup");
the agent that calls memory_recall can supply the missing words as further phrasings. Each phrasing
is ranked on its own (recall.py), and the rankings are fused here. The query's own rankings weigh
`Tuning.query_weight` (2), each alternative 1: each ranking is scaled by its best score times its
weight over the query's, and a record keeps its best scaled score (a share of its other scores was
added until the ranking ablation measured it worth nothing; reciprocal-rank fusion was offered until
it measured no better: docs/decisions/constants.md). Then the query's best record is lifted to the
first place and each other phrasing's best into the first 2n places, n = the number of phrasings
(`lift_winners`), so what one phrasing alone finds is not crowded out and a weak guess cannot take
the first place.

`by_alias` adds a phrasing of its own: the query with a speaker's label where it calls the speaker
by an alias learned from the conversation (text/aliases.py, archive/alias_evidence.py).

docs/decisions/2026-12-01-recall-alternatives.md has the measurements that chose the default.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import validate
from ..errors import InvalidArgument, LimitExceeded
from .search import terms

if TYPE_CHECKING:
    import numpy as np

    from ..archive.connection import Connection
    from ..records import Scope

MAX_ALTERNATIVES = 8


class Phrasing:
    """One phrasing of the need (the query or an alternative): its text, words and query vector.

    A plain class: a working object of one call, and a dataclass would compile its methods at every
    hook's start (bench/hooks.py).
    """

    __slots__ = ("further", "qvec", "text", "words")

    def __init__(self, text: str, words: list[str], further: bool) -> None:
        self.text = text
        self.words = words
        self.further = further  # an alternative: not the query itself, nor the query relabelled
        self.qvec: np.ndarray | None = None


def of(query: str, relabelled: Sequence[str], alternatives: Sequence[str]) -> list[Phrasing]:
    """The phrasings to search, repeats dropped; those without words too, unless none has any.

    The query and its relabelled forms (`by_alias`) are the query's own; alternatives are guesses.
    """
    texts = distinct([query, *relabelled, *alternatives])
    own = len(distinct([query, *relabelled]))
    found = [Phrasing(text, terms(text), n >= own) for n, text in enumerate(texts)]
    return [p for p in found if p.words] or found[:1]


def check(alternatives: Sequence[str] | None) -> list[str]:
    """The alternatives as given, validated; [] for None. Raises InvalidArgument or LimitExceeded."""
    if alternatives is None:
        return []
    if isinstance(alternatives, str) or not isinstance(alternatives, Sequence):
        raise InvalidArgument("alternatives is not a list: send a JSON list of strings, or null")
    if len(alternatives) > MAX_ALTERNATIVES:
        raise LimitExceeded(
            f"alternatives has {len(alternatives)} phrasings; the limit is {MAX_ALTERNATIVES}:"
            " keep the most different ones, or make a second recall call"
        )
    checked = []
    for n, text in enumerate(alternatives):
        field = f"alternatives[{n}]"
        validate.text(text, field, validate.MAX_QUERY_CHARS)
        if not text.strip():
            raise InvalidArgument(f"{field} is blank: leave it out or give words to search for")
        checked.append(text)
    return checked


def by_alias(db: Connection, scope: Scope, query: str) -> list[str]:
    """Phrasings of the query with a speaker's label where it calls the speaker by a learned alias
    (aliases.toward_labels; at most aliases.MAX_PHRASINGS). One indexed read when the scope has no
    alias evidence, none when the query has no capitalised word."""
    if not re.search(r"\b[A-Z][a-z]", query):
        return []
    from ..archive import alias_evidence

    names = alias_evidence.named_speakers(db, scope)
    if not names:
        return []
    from ..text.aliases import toward_labels

    return toward_labels(query, names)


def distinct(texts: Sequence[str]) -> list[str]:
    """The texts without repeats (ignoring case and runs of whitespace), first occurrence kept."""
    seen: dict[str, str] = {}
    for text in texts:
        seen.setdefault(" ".join(text.lower().split()), text)
    return list(seen.values())


def fuse(
    rankings: Sequence[dict[int, float]], own: Sequence[bool] | None = None, query_weight: float = 1.0
) -> dict[int, float]:
    """One ranking from several rankings of the same kind of record (higher score = better).

    `own` says which rankings are the query's own (the query, and the query with a speaker's label
    for an alias: `by_alias`); default: the first. Each of them counts `query_weight` times an
    alternative's: an alternative's scaled scores are divided by it.
    """
    if query_weight <= 0:
        raise ValueError(f"query_weight must be positive, not {query_weight}")
    own = list(own) if own is not None else [n == 0 for n in range(len(rankings))]
    # A ranking without a positive score scales nothing: it is left out (and not lifted).
    kept = [(r, mine) for r, mine in zip(rankings, own, strict=True) if r and max(r.values()) > 0]
    if len(kept) <= 1:
        return dict(kept[0][0]) if kept else {}
    rankings = [ranking for ranking, _ in kept]
    flags = [mine for _, mine in kept]
    weights = [query_weight if mine else 1.0 for mine in flags]
    return lift_winners(best_scores(rankings, weights), rankings, flags)


def best_scores(rankings: Sequence[dict[int, float]], weights: Sequence[float] | None = None) -> dict[int, float]:
    """Each record's best score scaled by its ranking's best (times the ranking's weight over the
    largest weight)."""
    weights = weights or [1.0] * len(rankings)
    heaviest = max(weights, default=1.0)
    best: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        if not ranking or max(ranking.values()) <= 0:
            continue
        top = max(ranking.values())
        for key, score in ranking.items():
            best[key] = max(best.get(key, 0.0), weight / heaviest * score / top)
    return best


def lift_winners(
    fused: dict[int, float], rankings: Sequence[dict[int, float]], own: Sequence[bool]
) -> dict[int, float]:
    """The best record of each of the query's own rankings lifted strictly above the overall best,
    and every other phrasing's best level with the n-th best, n = len(rankings).

    So an alternative's best lands among the first 2n records: the n - 1 ahead of the level, plus
    the other lifted records, which may tie with it (ties go to the higher record ID). Records that
    every phrasing finds (near-copies of the query find the same ones) add up across rankings;
    without this they push what one phrasing alone finds out of the first results. An alternative
    is a guess, so its best joins the first results rather than taking the first place (lifting all
    of them to the top, with equal weights, cost R@1 0.465 -> 0.313 on LoCoMo with a local model's
    phrasings: docs/decisions/2026-12-01-recall-alternatives.md).
    """
    if not fused:
        return fused
    ordered = sorted(fused.values(), reverse=True)
    # Strictly above the best: a tie would go to the higher record ID, not to the query's best.
    above, level = math.nextafter(ordered[0], math.inf), ordered[min(len(rankings), len(ordered)) - 1]
    for ranking, mine in zip(rankings, own, strict=True):
        winner = max(ranking, key=lambda k: (ranking[k], k))
        if winner in fused:
            fused[winner] = max(fused[winner], above if mine else level)
    return fused
