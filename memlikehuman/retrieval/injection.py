"""What the prompt hook puts in front of the model: recall's best items that clear a relevance gate.

An item is injected only when it is about the prompt, measured relative to the prompt itself:
- coverage: the share of the prompt's content words (each weighted by its rarity in the archive,
  words the archive never saw left out) that the item holds, in its text, its speaker or, for an
  event, the turn before it in its session (an answer often holds none of the question's words);
- similarity (semantic and deep only): the cosine between the prompt and the item's vector, less
  the prompt's best cosine to a few content-free sentences (ANCHORS). Cosines of one embedder sit in
  a narrow band (e5: 0.75-0.88 for related and unrelated text alike) and some prompts are near
  everything; the margin over the anchors says how much nearer this item is than small talk.
An item passes by its words (coverage >= Gate.coverage), or by its meaning (`passing`: the one
nearest item, with a margin >= Gate.similarity that leads the next by Gate.step); nothing passes,
nothing is injected. Then at most Gate.items items and Gate.chars characters, best first. This
session's own turns (the prompt itself among them) and the records in `exclude` (what the hook
injected earlier in the session, by their items' `key`: "memory:" or "event:" and the row number,
never a record ID, which a user may choose) are never offered. bench/injection.py chose the floors
(docs/design.md, "Injected context").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..archive import events, fulltext
from ..records import Event, InjectedItem, Kind, Memory, RecallResult, Scope
from ..text import overlap
from ..text.lines import one_line
from . import search
from .recall import Dense, recall
from .sources import Sources, Upkeep

if TYPE_CHECKING:
    import numpy as np

    from ..config import Settings
else:
    from ..providers.lazy_numpy import np  # numpy stays unimported on the hooks' fast path

# Candidates read from recall for each prompt: enough that the gate can refuse some and still fill the cap.
POOL = 15
MAX_POOL = 100  # recall's own limit
# Words that carry no need of their own in a prompt ("please add ..."), beside search.STOPWORDS.
FILLER = frozenset("please thanks thank hi hello hey ok okay yes yeah sure".split())
# Sentences about nothing: a prompt's cosine to them is its floor of similarity to any text.
ANCHORS = (
    "Okay, sounds good.",
    "Thanks, that helps.",
    "Let me check and get back to you.",
    "Yes, go ahead.",
    "What do you think?",
    "I see, tell me more.",
    "Hello, how are you?",
    "Can you help me with something?",
)
_ANCHORS: dict[str, Any] = {}  # embedder model -> the anchors' vectors


@dataclass(frozen=True)
class Gate:
    """The injection gate's settings (MEMLIKEHUMAN_INJECT_*)."""

    items: int = 5
    chars: int = 2000
    coverage: float = 0.25
    similarity: float = 0.02
    step: float = 0.01

    @classmethod
    def of(cls, settings: Settings, given: Mapping[str, float] | None = None) -> Gate:
        """The configured gate, with the values `given` (a hook's request) instead where present."""
        s, g = settings, dict(given or {})
        return cls(
            int(g.get("items", s.inject_items)),
            int(g.get("chars", s.inject_chars)),
            float(g.get("coverage", s.inject_coverage)),
            float(g.get("similarity", s.inject_similarity)),
            float(g.get("step", s.inject_step)),
        )


def choose(
    sources: Sources,
    scope: Scope,
    query: str,
    *,
    mode: str = "fast",
    session_id: str | None = None,
    exclude: Collection[str] = (),
    gate: Gate = Gate(),
    upkeep: Callable[[Upkeep], None] | None = None,
    query_stored: bool = False,
) -> list[InjectedItem]:
    """The items to inject for a prompt, best first; [] when none clears the gate.

    `query_stored`: the prompt is already recorded (the hook records it first), so its own words
    are not counted as words the archive knows.

    Raises what recall raises for bad input (InvalidArgument, LimitExceeded).
    """
    if gate.items <= 0 or gate.chars <= 0:
        return []
    dense = Dense()
    # This session's own turns are left out inside recall, not after it: the prompt just recorded and the
    # turns around it share its words and its session's score, and would fill the pool (design.md).
    # What was injected earlier is dropped after it, so the pool grows by as many.
    limit = min(POOL + len(exclude), MAX_POOL)
    found = recall(
        sources, scope, query, limit=limit, search_mode=mode, upkeep=upkeep, dense=dense, outside_session=session_id
    )
    weigh = _coverage(sources, query, found, 1 if query_stored else 0)
    floor = _anchor_floor(sources, dense)
    measured = []
    for key, record_id, line, text in _candidates(sources, found, session_id, exclude):
        cosine = dense.cosines.get(key)
        margin = None if cosine is None or floor is None else round(cosine - floor, 4)
        note = f"{key[0]}:{key[1]}"
        measured.append(InjectedItem(record_id, one_line(line), round(weigh(text), 3), margin, note))
    return [measured[i] for i in passing([(m.coverage, m.similarity, len(m.line)) for m in measured], gate)]


def passing(measured: Sequence[tuple[float, float | None, int]], gate: Gate) -> list[int]:
    """The positions of the candidates (coverage, margin, line length; best first) the gate lets through.

    A candidate passes by its words (coverage >= gate.coverage), or by its meaning when it is the one
    nearest the prompt and clearly so: its margin >= gate.similarity and >= the next nearest
    candidate's + gate.step. A prompt near many items at once (an unrelated coding request among
    coding notes) has no such lead, and a prompt that shares no word with anything gets one item
    at most.
    """
    margins = sorted((m for _, m, _ in measured if m is not None), reverse=True)
    nearest = margins[0] if margins else None
    lead = (margins[0] - margins[1]) if len(margins) > 1 else (margins[0] if margins else 0.0)
    standing = nearest if nearest is not None and nearest >= gate.similarity and lead >= gate.step else None
    chosen: list[int] = []
    used = 0
    for n, (covered, margin, length) in enumerate(measured):
        by_meaning = standing is not None and margin == standing
        if covered < gate.coverage and not by_meaning:
            continue
        if used + length > gate.chars:
            break
        chosen.append(n)
        used += length + 1
        if len(chosen) == gate.items:
            break
    return chosen


Candidate = tuple[tuple[Kind, int], str, str, str]  # (kind, id), record ID, line, text the coverage reads


def _candidates(
    sources: Sources, found: RecallResult, session_id: str | None, exclude: Collection[str]
) -> list[Candidate]:
    """Current memories, then raw events outside this session, with the text their coverage is read from."""
    out: list[Candidate] = []
    excluded = set(exclude)
    for hit in found.memories:
        m = hit.memory
        if hit.status != "current" or f"memory:{m.rowid}" in excluded:
            continue
        line = f"- memory {m.memory_id} ({_via(m)}, {m.basis}, {m.occurred_at[:10]}): {m.content}"
        out.append((("memory", m.rowid), m.memory_id, line, f"{m.content} {m.source}"))
    raws = [
        r
        for r in found.raw_fallback
        if r.event.session_id != session_id and f"event:{r.event.sequence}" not in excluded
    ]
    before = _previous(sources, [r.event for r in raws])
    for raw in raws:
        e = raw.event
        line = f"- event {e.event_id} ({_via(e)}, {e.occurred_at[:10]}): {raw.excerpt}"
        out.append((("event", e.sequence), e.event_id, line, f"{e.text} {e.source} {before.get(e.sequence, '')}"))
    return out


def _via(said: Memory | Event) -> str:
    """Who said it, and how: a quoted document (category reference) is not the user's own statement."""
    return f"{said.role} via {said.source}" + ("" if said.category == "conversation" else f", {said.category}")


def _previous(sources: Sources, found: list[Event]) -> dict[int, str]:
    """The text of the turn before each event in its session."""
    links = search.neighbours(sources.db, [e.sequence for e in found])
    return {seq: events.load(sources.db, prev).text for seq, (prev, _) in links.items() if prev is not None}


def _coverage(sources: Sources, query: str, found: RecallResult, own: int) -> Callable[[str], float]:
    """The coverage of the query by a text: the rarity-weighted share of its known content words held."""
    words = [w for w in search.terms(query) if w not in search.STOPWORDS and w not in FILLER]
    wanted = overlap.query_terms(words, query)
    grams = set(wanted) - {overlap.stem(w) for w in words}
    by_word = dict(zip([overlap.stem(w) for w in words], words, strict=True))
    # Counted now, not from the planner's cache: `own` subtracts the prompt recorded a moment ago.
    counts = search.row_counts(sources.db, fulltext.TABLES["event"], list(by_word.values()), fresh=True)
    if grams:
        counts.update(search.row_counts(sources.db, fulltext.NGRAM_TABLES["event"], sorted(grams), fresh=True))
    total = max(found.coverage.events_in_scope, 1)
    weights = {}
    for term in wanted:
        seen = counts.get(by_word.get(term, term), 0) - own
        if seen > 0:  # a word the archive never saw: no item can hold it, and it says nothing of relevance
            weights[term] = math.log(1 + max(total, seen) / seen)
    mass = sum(weights.values())

    def covered(text: str) -> float:
        if not mass:
            return 0.0
        held = overlap.terms(text)
        return sum(w for term, w in weights.items() if term in held) / mass

    return covered


def warm(sources: Sources) -> None:
    """Build the embedder and embed the anchors now, so that the first prompt's answer is not late."""
    embedder = sources.embedder
    if embedder is not None and embedder.model_id not in _ANCHORS:
        _ANCHORS[embedder.model_id] = np.asarray(embedder.embed(list(ANCHORS), "passage"), dtype=np.float32)


def _anchor_floor(sources: Sources, dense: Dense) -> float | None:
    """The query's best cosine to the anchors; None in fast mode (no query vector)."""
    embedder = sources.embedder if dense.query is not None else None
    if embedder is None or dense.query is None:
        return None
    warm(sources)
    return float((_ANCHORS[embedder.model_id] @ dense.query).max())
