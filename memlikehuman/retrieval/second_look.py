"""A second look at recall's best events in `semantic`/`deep` mode: a small linear model re-orders them.

The fused ranking scores each event by itself. This step looks again at the `Tuning.second_look` best
events with what that score does not hold: whether the conversation stays on the subject after each
one (the cosine of the turn after it; an event that opens a subject is followed by more of it, a reply
that leaves it is not), how long the event is and whether it only asks a question (the turns that hold
facts are statements, seldom one-liners). The weights are a logistic regression over these features,
refitted by leave-one-conversation-out over LoCoMo's 10 conversations (the cosine of the turn before,
a feature until then, was worth nothing there) and checked on a chat set nobody fitted on
(docs/decisions/ranking-ablation.md); the model is these six numbers, nothing is downloaded.

Only the order inside the pool changes: its events take the pool's own scores in their new order, so
nothing outside the pool moves and every event shown passed recall's filters before this step. The
model reads conversation turns only (role user or assistant) of chat length (at most the longest turn it
was fitted on, `Tuning.second_look_length_cap`), the kind of event it was fitted on: a tool's output (a
file read, a log) and a long message of a working session keep their places in the pool (on BEAM's long
sessions the model, reading them, cost 6.8 points of semantic R@10). Read as a turn, a file read's length
lifted it over the short note it buries (the ablation's coding set lost 3 of 24 follow-ups;
docs/decisions/ranking-ablation.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..archive.connection import Connection
from . import ranking, search
from .search import Filters

if TYPE_CHECKING:
    import numpy as np

    from ..index.vectors import VectorCache

# The roles of the events the model was fitted on (LoCoMo's turns): conversation, not tool output.
TURNS = frozenset({"user", "assistant"})


@dataclass(frozen=True)
class Look:
    """What the second look reads of one event: cosines to the query (its own, and the event after it in
    its session, the event's own where missing), its length in characters, and whether it ends with a
    question mark."""

    cosine: float
    after: float
    length: int
    asks: bool


def reordered(
    scores: Mapping[int, float],
    pool: Sequence[int],
    looks: Mapping[int, Look],
    weights: Sequence[float],
    length_cap: int,
) -> ranking.Scores:
    """`scores` with the events of `pool` (best first) that have a Look re-ordered by the model among
    their own places (an event without one keeps its place); the score values are the pool's own,
    handed out again in the new order (ties split by the least step upwards). Characters past
    `length_cap` add nothing to an event's length."""
    movable = [rank for rank, seq in enumerate(pool) if seq in looks]
    if len(movable) < 2 or scores[pool[0]] <= 0:
        return dict(scores)
    top = scores[pool[0]]
    w_rank, w_score, w_cosine, w_after, w_length, w_asks = weights

    def model(rank: int) -> float:
        seq = pool[rank]
        look = looks[seq]
        return (
            w_rank / (1 + rank)
            + w_score * scores[seq] / top
            + w_cosine * look.cosine
            + w_after * look.after
            + w_length * math.log1p(min(look.length, length_cap))
            + (w_asks if look.asks else 0.0)
        )

    order = list(range(len(pool)))
    for place, rank in zip(movable, sorted(movable, key=lambda rank: -model(rank)), strict=True):
        order[place] = rank
    inside = set(pool)
    outside = max((value for seq, value in scores.items() if seq not in inside), default=None)
    # From the last slot up: each slot keeps its own score unless that ties the slot below it or the
    # best event outside the pool, where it takes the next float above. Strictly decreasing, so tied
    # scores cannot hand the order back to the record IDs, and no pool event sinks below an outside one.
    value = scores[pool[-1]] if outside is None else max(scores[pool[-1]], math.nextafter(outside, math.inf))
    out = dict(scores)
    for rank in reversed(range(len(pool))):
        value = max(scores[pool[rank]], value)
        out[pool[order[rank]]] = value
        value = math.nextafter(value, math.inf)
    return out


def gather(
    db: Connection,
    vectors: VectorCache,
    model: str,
    filters: Filters,
    query: np.ndarray,
    pool: Sequence[int],
    neighbours: Callable[[Sequence[int]], Mapping[int, tuple[int | None, int | None]]],
    longest: int,
) -> dict[int, Look]:
    """The Look of each pool event that is a conversation turn (role user or assistant) of at most `longest`
    characters; none at all when
    fewer than half of the pool have a vector of `model` (the indexer behind, another model's vectors):
    length and question marks alone are what `fast` has, and re-ordering by them was not shipped there
    (LoCoMo 6-10 +1 point, open-domain questions lower). A neighbour counts only if this recall may see
    it (its filters)."""
    links = neighbours(pool)
    around = {after for _, after in links.values() if after is not None} - set(pool)
    seen = [*pool, *search.eligible_events(db, sorted(around), filters)]
    cosines = vectors.cosines(db, "event", model, filters.scope, query, seen)
    if 2 * sum(seq in cosines for seq in pool) < len(pool):
        return {}
    floor = min(cosines.values(), default=0.0)
    shapes = search.text_shapes(db, pool)
    looks = {}
    for seq in pool:
        length, asks, role = shapes.get(seq, (0, False, "tool"))
        if role not in TURNS or length > longest:
            continue
        own = cosines.get(seq, floor)
        # Only a neighbour the recall may see has a cosine here; the event's own stands in for the rest.
        after = links.get(seq, (None, None))[1]
        looks[seq] = Look(own, own if after is None else cosines.get(after, own), length, asks)
    return looks
