"""Recall's ranking as pure functions over plain values: no archive, no embedder.

Scores are dicts of record ID (event sequence or memory rowid) -> score. recall.py gathers the
inputs (lexical and dense candidates, sessions, neighbours, speakers and dates named in the query)
and applies these steps in order; docs/decisions/constants.md has the measurement behind each
constant of `Tuning` (a test holds its table to these values).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Tuning:
    """The ranking's constants. Each stayed because removing it cost >= 1 point of recall@10 on data it
    was not fitted on (LoCoMo conversations 6-10, the coding set, the chat set) and keeping it cost
    < 0.5 anywhere: docs/decisions/constants.md has the worth of each, `python -m bench.ablation`
    measures it. Budgets (pools, scored rows, neighbour lookups) bound the work and were checked to
    leave recall where it is. These values are written here only."""

    # budgets: the lexical and dense candidates of one phrasing
    lexical_pool: int = 300
    dense_pool: int = 300
    # bm25 column weights: text, attribution (speaker, cue keys and labels, i.e. photo captions), the turn
    # before (an answer's subject sits in the question): worth 1.3 / 1.6 points in fast on LoCoMo 6-10
    event_weights: tuple[float, float, float] = (1.0, 1.0, 0.5)
    memory_weights: tuple[float, float] = (1.0, 0.3)  # content, attribution (no memories in any set: unmeasured)
    # the dense share against the lexical one (each phrasing's bm25 scores scaled to [0, 1]): 1.5 is worth
    # 3.5 points on the chat set (semantic) over 1.0
    dense: float = 1.5
    # a hit lends this share of its score to the events before and after it in its session (chat +4.5)
    neighbour: float = 0.5
    neighbour_pool: int = 100  # budget: hits that lend (all hits: the same recall, more lookups)
    # each event gains this share of the best score in its session (chat +5.0, LoCoMo 6-10 +1.9)
    session: float = 0.8
    # factors for events whose speaker the query names (chat +5.5, LoCoMo 6-10 +2.5-3.3), and that
    # occurred on a date it names (LoCoMo 6-10 +1.1-1.2): 2.0 chosen by leave-one-conversation-out over
    # LoCoMo's 10 conversations (10 of 10 folds over 0.5 and 1.0; 3.0 no better); the speaker's 0.6 held
    speaker: float = 0.6
    date: float = 2.0
    # a factor for what the user says (1 + user_turn), not for a short question (text/asking.py): in a
    # working session the user states the facts,
    # preferences and instructions, the assistant's long replies restate and explain them. Chosen on BEAM
    # conversations 1-10 (fast R@10 +8.4 points, semantic +8.6 at 0.5; 1.0 no better); LoCoMo and the chat
    # set record every turn as the user's (unchanged), the coding set +4.2 fast, +8.3 semantic
    # (docs/decisions/2026-12-07-long-working-sessions.md)
    user_turn: float = 0.5
    # ... and a further factor (1 + standing) for a user's turn that states a standing rule or preference
    # (text/rules.py: "Always ...", "Never ...", "I prefer ..."): it holds for later questions that share
    # few words with it. Chosen on BEAM 1-10 (semantic R@10 +4.1, R@5 +6.7, R@1 -1.0; 0.3 and 0.5 cost
    # more R@1); on 11-20 semantic R@10 +3.0, R@1 +1.6, fast R@10 +4.4; LoCoMo unchanged
    standing: float = 0.15
    # ... also for events whose relative dates ("yesterday", "last Friday") resolve into a named date
    # (event_dates; LoCoMo 6-10 temporal +1.2 in fast, +0.8 in semantic)
    relative_dates: bool = True
    # speaker names are left out of the text embedded for the query (LoCoMo 6-10 +3.9, chat +1.9)
    strip_speakers: bool = True
    # queries with runs in CJK, Thai, Cyrillic, Arabic, ... also search the n-gram index (ngrams.py;
    # bench.multilingual: fast recall@5 0.500 -> 0.929)
    ngram: bool = True
    # the query's own ranking counts this many times an alternative's (phrasings.fuse)
    query_weight: float = 2.0
    # budgets of each further phrasing: a smaller lexical and dense pool, fewer scored rows, fewer hits
    # lending to neighbours (bench.recall_latency; docs/decisions/2026-12-01-recall-alternatives.md)
    alternative_pool: int = 100
    alternative_scored_rows: int = 500
    alternative_neighbours: int = 30
    # a query that calls a speaker by a learned alias also searches with the speaker's label (phrasings.by_alias)
    speaker_aliases: bool = True
    # semantic/deep with one phrasing: this many best events are re-ordered by second_look's model (0: off)
    second_look: int = 30
    # its weights: rank 1/(1 + r), score / best, cosines of the event and of the one after it, log(1 +
    # length), ends with "?": refitted by leave-one-conversation-out over LoCoMo's 10 conversations
    # (bench/ablation_second_look.py). Worth 2.2 points on LoCoMo 6-10 and 8.1 on the chat set (semantic);
    # it re-orders conversation turns only (second_look.py)
    second_look_weights: tuple[float, ...] = (0.414, 1.0, -1.235, 2.676, 0.154, -0.127)
    # characters past this add nothing to an event's length: the longest LoCoMo turn the weights saw (454).
    # Beyond it the model would extrapolate; a lower cap costs LoCoMo 6-10 0.5 (150 characters) to 1.5
    # points (60): docs/decisions/ranking-ablation.md
    second_look_length_cap: int = 450


DEFAULT_TUNING = Tuning()


Scores = dict[int, float]
# An event's neighbours in its session: (the record event before it, the one after it).
Links = Mapping[int, tuple[int | None, int | None]]


def normalized(pairs: Iterable[tuple[int, float]], weight: float, *, floor: bool = False) -> Scores:
    """Scores scaled to [0, weight] by the best one, so lexical and dense scores can be added.

    With `floor`, the worst score of the pool maps to 0: cosine similarities of one embedder
    crowd into a narrow band, and only their spread within the pool says anything.
    """
    pairs = list(pairs)
    if not pairs or weight == 0:
        return {}
    best = max(score for _, score in pairs)
    low = min(score for _, score in pairs) if floor and len(pairs) > 1 else 0.0
    if best <= low:
        return {key: weight for key, _ in pairs} if floor else {}
    return {key: weight * max(score - low, 0.0) / (best - low) for key, score in pairs}


def fused(lexical: Scores, dense: Scores) -> Scores:
    """Lexical plus dense scores (each already normalized and weighted)."""
    out = dict(lexical)
    for key, value in dense.items():
        out[key] = out.get(key, 0.0) + value
    return out


def top(scores: Mapping[int, float], limit: int) -> list[int]:
    """The `limit` best IDs, best first; ties: the newer (higher) ID first."""
    return [key for key, _ in sorted(scores.items(), key=lambda kv: (-kv[1], -kv[0]))[:limit]]


def by_recency(ids: Sequence[int]) -> Scores:
    """Scores for a list already in order (newest first), for a cue lookup without words."""
    return {i: 1.0 - n / (len(ids) + 1) for n, i in enumerate(ids)}


def with_session_share(scores: Mapping[int, float], session_of: Mapping[int, str], share: float) -> Scores:
    """Each event gains `share` of the best score in its session."""
    best: dict[str, float] = {}
    for key, value in scores.items():
        session = session_of[key]
        best[session] = max(best.get(session, 0.0), value)
    return {key: value + share * best[session_of[key]] for key, value in scores.items()}


def with_neighbour_loans(
    out: Mapping[int, float], scores: Mapping[int, float], links: Links, eligible: Container[int], share: float
) -> Scores:
    """Each hit lends `share` of its score (in `scores`) to the eligible turns before and after it.

    A neighbour takes the best loan it is offered; it need not have matched the query itself (an
    answer like "Yes, last Friday!" has no words of the question).
    """
    lent: dict[int, float] = {}
    for seq, pair in links.items():
        for other in pair:
            if other is not None and other in eligible:
                lent[other] = max(lent.get(other, 0.0), scores[seq])
    result = dict(out)
    for other, value in lent.items():
        result[other] = result.get(other, 0.0) + share * value
    return result


def with_factors(
    scores: Mapping[int, float], speaker_named: Container[int], speaker: float, dated: Container[int], date: float
) -> Scores:
    """Scores lifted for events whose speaker the query names (1 + speaker) and that occurred on or
    speak of a date it names (1 + date); both: 1 + speaker + date."""
    out = {}
    for seq, value in scores.items():
        factor = 1.0
        if speaker and seq in speaker_named:
            factor += speaker
        if seq in dated:
            factor += date
        out[seq] = value * factor
    return out


def with_user_turns(scores: Mapping[int, float], users: Container[int], lift: float) -> Scores:
    """Scores of the user's turns that tell something times (1 + lift); the others as they are."""
    return {seq: value * (1 + lift) if seq in users else value for seq, value in scores.items()}


def with_covered(
    scores: Mapping[int, float],
    covered: Mapping[int, tuple[float, bool]],
    memories: Sequence[tuple[int, int]],
    eligible: Container[int],
) -> Scores:
    """Memory scores where each event raw fallback left out as covered passes its score to its best memory.

    `covered`: event sequence -> (its score, whether its own text holds a query word); `memories`:
    (memory rowid, event sequence) of those events. The best memory is the best-scoring eligible one;
    one that matched no query word stands in for its event only when the event's own text holds one.
    """
    best: dict[int, int] = {}
    for rowid, sequence in memories:
        if rowid not in eligible or (rowid not in scores and not covered[sequence][1]):
            continue
        if sequence not in best or scores.get(rowid, 0.0) > scores.get(best[sequence], 0.0):
            best[sequence] = rowid
    ranked = dict(scores)
    for sequence, rowid in best.items():
        ranked[rowid] = max(ranked.get(rowid, 0.0), covered[sequence][0])
    return ranked
