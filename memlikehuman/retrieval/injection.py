"""What the prompt hook puts in front of the model: recall's best items that clear a relevance gate.

An item is injected only when it is about the prompt, measured relative to the prompt itself:
- coverage: the share of the prompt's content words (each weighted by its rarity in the archive; a
  word it never saw as the rarest, but for the n-grams of unsegmented scripts) that the item holds, in
  its text, its speaker, for a memory its subject slot, or for an event the turn before it in its
  session (an answer often holds none of the question's words);
- similarity (semantic and deep only): the cosine between the prompt and the item's vector. Cosines
  of one embedder sit in a narrow band (e5: 0.75-0.88 for related and unrelated text alike) and some
  prompts are near everything, so a cosine says nothing alone: only how much nearer the nearest item
  is than the next one does.
An item passes by its words (coverage >= Gate.coverage), or by its meaning (`passing`: the one
nearest item, when its cosine leads the next nearest by Gate.step); nothing passes, nothing is
injected. Then at most Gate.items items and Gate.chars characters, best first. The words
that count are the prompt's content words: the function words and politeness of its language do not
(text/function_words.py), so that "please" never makes a match, in a small archive as in a large one.
This session's own turns (the prompt itself among them), earlier turns that say the same as the prompt,
and the records in `exclude` (what the hook injected earlier in the session, by their items' `key`:
"memory:" or "event:" and the row number, never a record ID, which a user may choose) are never
offered; turns that say the same are one item, and a reply comes before its question (echoes.py).
Each item is one JSON record with its origin (`line`), which the hook puts in a labelled data block.
bench/injection.py chose the floors (docs/decisions/2026-12-03-injection-gate.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import validate
from ..archive import events, fulltext
from ..config import Gate
from ..records import Event, InjectedItem, Kind, Memory, RawHit, RecallResult, Scope
from ..shapes import data_line
from ..text import asking, dates, function_words, ngrams, overlap
from ..text.lines import LINE_CHARS, one_line
from . import echoes, excerpts, search
from .recall import Dense, recall
from .sources import Sources, Upkeep

# A reply of at most this many words to a statement acknowledges it ("Noted, pnpm from now on."): two
# sentences of chat; a reply that did the work is longer (docs/decisions/2026-12-07-long-working-sessions.md).
ACKNOWLEDGEMENT_WORDS = 30
SUBJECT_OWNERS = ("user", "project")  # a subject key's first parts that say whose, not what about
# Candidates read from recall for each prompt: enough that the gate can refuse some and still fill the cap.
POOL = 15
_WORD = re.compile(r"\w+", re.UNICODE)


def choose(
    sources: Sources,
    scope: Scope,
    query: str,
    *,
    gate: Gate,
    mode: str = "fast",
    session_id: str | None = None,
    exclude: Collection[str] = (),
    upkeep: Callable[[Upkeep], None] | None = None,
    query_stored: bool = False,
) -> list[InjectedItem]:
    """The items to inject for a prompt, best first; [] when none clears the gate.

    Earlier turns that say the same as the prompt are left out (the user asking again), turns that
    say the same as each other are folded into one item, and a reply comes before its question
    (echoes.py). `query_stored`: the prompt is already recorded (the hook records it first), so its own
    words are not counted as words the archive knows.

    Raises what recall raises for bad input (InvalidArgument, LimitExceeded).
    """
    if gate.items <= 0 or gate.chars <= 0:
        return []
    dense = Dense()
    # This session's own turns are left out inside recall, not after it: the prompt just recorded and the
    # turns around it share its words and its session's score, and would fill the pool.
    # What was injected earlier is dropped after it, so the pool grows by as many.
    limit = min(POOL + len(exclude), validate.MAX_LIMIT)
    found = recall(
        sources, scope, query, limit=limit, search_mode=mode, upkeep=upkeep, dense=dense, outside_session=session_id
    )
    windows = dates.date_windows(query)
    weigh = _coverage(sources, query, found, 1 if query_stored else 0, dated=bool(windows))
    asked = echoes.same_words(query)
    words = search.terms(query)
    fresh = [c for c in _candidates(sources, found, session_id, exclude, words) if c.words != asked or c.role != "user"]
    on_date = {c.key for c in fresh if windows and dates.in_windows(c.occurred_at, windows)}
    groups = echoes.fold(fresh, lambda c: f"{c.speaker}\n{c.words}" if c.words else "", lambda c: c.occurred_at)
    measured = []
    for group in groups:
        best = max(group.members, key=lambda c: dense.cosines.get(c.key, -2.0))
        cosine = dense.cosines.get(best.key) if group.item.by_meaning else None
        keys = [f"{c.key[0]}:{c.key[1]}" for c in group.members]
        said = sum(c.said for c in group.members)
        line = data_line(_said(group.item.record, said, min(c.first_at or c.occurred_at for c in group.members)))
        covered = round(weigh(group.item.text, group.item.key in on_date), 3)
        similarity = None if cosine is None else round(cosine, 4)
        measured.append(InjectedItem(group.item.record_id, line, covered, similarity, keys[0]))
        measured[-1] = replace(measured[-1], also=tuple(k for k in keys if k != measured[-1].key))
    chosen = [measured[i] for i in passing([(m.coverage, m.similarity, len(m.line)) for m in measured], gate)]
    return _answers_first(sources, chosen)


def _said(record: dict[str, Any], times: int, first_at: str) -> dict[str, Any]:
    """A record standing for `times` turns that said the same: how often, since when."""
    return record if times == 1 else {**record, "said": times, "since": first_at[:10]}


def _answers_first(sources: Sources, chosen: list[InjectedItem]) -> list[InjectedItem]:
    """Each reply chosen with its question right before the question (echoes.answers_first)."""
    sequences = {int(i.key.split(":")[1]): i for i in chosen if i.key.startswith("event:")}
    if len(sequences) < 2:
        return chosen
    links = search.neighbours(sources.db, list(sequences))
    loaded = {seq: events.load(sources.db, seq) for seq in sequences}
    asked = {seq for seq, e in loaded.items() if e.role == "user" and echoes.asks(e.text)}

    def answer_of(item: InjectedItem) -> InjectedItem | None:
        if not item.key.startswith("event:"):
            return None
        seq = int(item.key.split(":")[1])
        after = links.get(seq, (None, None))[1]
        if seq not in asked or after not in sequences or loaded[after].role != "assistant":
            return None
        return sequences[after]

    return echoes.answers_first(chosen, answer_of, lambda a, b: a.key == b.key)


def passing(measured: Sequence[tuple[float, float | None, int]], gate: Gate) -> list[int]:
    """The positions of the candidates (coverage, cosine, line length; best first) the gate lets through.

    A candidate passes by its words (coverage >= gate.coverage), or by its meaning when it is the one
    nearest the prompt and clearly so: its cosine >= the next nearest candidate's + gate.step. A
    prompt near many items at once (an unrelated coding request among coding notes) has no such lead,
    a lone candidate has nothing to lead, and a prompt that shares no word with anything gets one item
    at most.
    """
    cosines = sorted((m for _, m, _ in measured if m is not None), reverse=True)
    standing = cosines[0] if len(cosines) > 1 and cosines[0] - cosines[1] >= gate.step else None
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


@dataclass(frozen=True)
class Candidate:
    """A record recall found, as the gate weighs it and the hook shows it."""

    key: tuple[Kind, int]  # ("memory", rowid) or ("event", sequence)
    record_id: str
    record: dict[str, Any]  # what the injected line says of it (one JSON object)
    text: str  # what its coverage is read from
    words: str  # echoes.same_words of what it says
    role: str
    speaker: str  # role and source: only one speaker's turns fold together
    occurred_at: str
    said: int = 1  # how many turns it stands for (recall folds those that say the same)
    first_at: str = ""  # when the first of them occurred
    by_meaning: bool = True  # whether it may pass by meaning alone (not a user's turn that asks)


def _candidates(
    sources: Sources, found: RecallResult, session_id: str | None, exclude: Collection[str], words: Sequence[str]
) -> list[Candidate]:
    """Current memories, then raw events outside this session, with the text their coverage is read from.

    Echoes are left out (retrieval/echoes.py): a user's own short question is never handed back (it holds
    no fact, and its answer carries its words); a user's turn that ends with one counts only the words of
    what it tells, and never passes by meaning alone ("Morning. How do I add date-fns?" tells nothing); a
    reply borrows the words of the turn before only when that turn asks, being its answer; and a reply to
    a statement found with it, or with a memory of it, goes when it is short (the statement holds the fact,
    the reply acknowledges it)."""
    out: list[Candidate] = []
    excluded = set(exclude)
    for hit in found.memories:
        m = hit.memory
        if hit.status != "current" or f"memory:{m.rowid}" in excluded:
            continue
        record = {"memory_id": m.memory_id, "kind": m.kind, "basis": m.basis, "content": one_line(m.content),
                  "from": _via(m), "on": m.occurred_at[:10]}  # fmt: skip
        said = (echoes.same_words(m.content), m.role, f"{m.role}/{m.source}", m.occurred_at)
        # Its words: the content, the speaker and the subject slot it fills ("user.package_manager" is
        # about package managers).
        text = f"{m.content} {m.source} {_words_of(m.subject)}"
        out.append(Candidate(("memory", m.rowid), m.memory_id, record, text, *said))
    raws = [
        r
        for r in found.raw_fallback
        if r.event.session_id != session_id
        and f"event:{r.event.sequence}" not in excluded
        and not (r.event.role == "user" and asking.only_asks(r.event.text))
    ]
    before = _previous(sources, [r.event for r in raws])
    acknowledged = _acknowledgements(raws, before, _remembered(sources, before.values()))
    for raw in raws:
        e = raw.event
        if e.sequence in acknowledged:
            continue
        line = one_line(
            excerpts.around(raw.excerpt, words, LINE_CHARS) if len(raw.excerpt) > LINE_CHARS else raw.excerpt
        )
        record = {"event_id": e.event_id, "from": _via(e), "on": e.occurred_at[:10], "text": line}
        if raw.newer:
            record["newer"] = raw.newer
        asked = e.role == "user" and asking.asks(e.text)
        told = asking.statements(e.text) if asked else e.text
        prev = before.get(e.sequence)
        answered = prev.text if prev is not None and prev.role != e.role and asking.asks(prev.text) else ""
        said = (echoes.same_words(e.text), e.role, f"{e.role}/{e.source}", e.occurred_at)
        text = f"{told} {e.source} {answered}"
        out.append(
            Candidate(("event", e.sequence), e.event_id, record, text, *said, raw.said, raw.first_at or "", not asked)
        )
    return out


def _acknowledgements(raws: Sequence[RawHit], before: Mapping[int, Event], remembered: Collection[int]) -> set[int]:
    """The short replies (at most ACKNOWLEDGEMENT_WORDS words) found with the statement they answer (a user's
    turn that does not ask), or to a statement kept as a memory: they go. A longer reply is work done, not an
    echo. The memory may have been replaced since ("staging moved to 9443"): "Noted, staging:8443." would
    hand the old value back as if current."""
    found = {r.event.sequence for r in raws}
    return {
        r.event.sequence
        for r in raws
        if r.event.role == "assistant"
        and len(r.event.text.split()) <= ACKNOWLEDGEMENT_WORDS
        and (prev := before.get(r.event.sequence)) is not None
        and (prev.sequence in found or prev.sequence in remembered)
        and prev.role == "user"
        and not asking.asks(prev.text)
    }


def _remembered(sources: Sources, turns: Iterable[Event]) -> set[int]:
    """The turns any memory was made of, current or not (a replaced one, a revoked one)."""
    sequences = [e.sequence for e in turns]
    if not sequences:
        return set()
    marks = ",".join("?" * len(sequences))
    sql = f"SELECT DISTINCT event_sequence FROM memories WHERE event_sequence IN ({marks})"
    return {int(row["event_sequence"]) for row in sources.db.query(sql, tuple(sequences))}


def _words_of(subject: str | None) -> str:
    """A subject key's slot words: "user.package_manager" -> "package manager". A key's first part "user"
    or "project" names whose the value is, not what it is about: every memory of a project holding the
    word "project" would match "How do I add zod to the project?" by its key alone. Any other key counts
    whole ("staging.port": staging port)."""
    owner, dot, slot = (subject or "").partition(".")
    words = slot if dot and owner.lower() in SUBJECT_OWNERS else subject or ""
    return re.sub(r"[._\-]+", " ", words)


def _via(said: Memory | Event) -> str:
    """Who said it, and how: a quoted document (category reference) is not the user's own statement."""
    return f"{said.role} via {said.source}" + ("" if said.category == "conversation" else f", {said.category}")


def _previous(sources: Sources, found: list[Event]) -> dict[int, Event]:
    """The turn before each event in its session: what a reply answers."""
    links = search.neighbours(sources.db, [e.sequence for e in found])
    return {seq: events.load(sources.db, prev) for seq, (prev, _) in links.items() if prev is not None}


def _coverage(
    sources: Sources, query: str, found: RecallResult, own: int, *, dated: bool
) -> Callable[[str, bool], float]:
    """The coverage of the query by a text: the rarity-weighted share of its content words held.

    A date the query names (`dated`) is not words to find but one term weighing as the rarest word,
    held by an item that occurred then (`on_date`): a turn of 3 July says "today", not "3 July".
    (Also counting the turns that say "yesterday" of it, as recall's ranking does, changed nothing measured.)
    """
    query = dates.without_dates(query)
    words = function_words.content(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    wanted = overlap.query_terms(words, function_words.without_phrases(query))
    grams = set(wanted) - {overlap.stem(w) for w in words}
    by_word = dict(zip([overlap.stem(w) for w in words], words, strict=True))
    # Counted now, not from the planner's cache: `own` subtracts the prompt recorded a moment ago.
    counts = search.row_counts(sources.db, fulltext.TABLES["event"], list(by_word.values()), fresh=True)
    if grams:
        counts.update(search.row_counts(sources.db, fulltext.NGRAM_TABLES["event"], sorted(grams), fresh=True))
    total = max(found.coverage.events_in_scope, 1)
    weights = {}
    for term in wanted:
        seen = max(counts.get(by_word.get(term, term), 0) - own, 0)
        # A word the archive never saw weighs as the rarest do: the prompt asks for something no item
        # holds, and an item that shares only its other words covers that much less of it. Not so the
        # n-grams of unsegmented scripts and the runs they are cut from, which are unseen as a rule.
        if seen or (term in by_word and not any(ngrams.runs(by_word[term]))):
            weights[term] = math.log(1 + max(total, seen) / max(seen, 1))
    date_weight = math.log(1 + total) if dated else 0.0
    mass = sum(weights.values()) + date_weight

    def covered(text: str, on_date: bool) -> float:
        if not mass:
            return 0.0
        held = overlap.terms(text)
        return (sum(w for term, w in weights.items() if term in held) + (date_weight if on_date else 0.0)) / mass

    return covered


def warm(sources: Sources) -> None:
    """Build the embedder and have it embed once now (the local model loads on its first call, ~0.4 s),
    so that the first prompt's answer is not late."""
    embedder = sources.embedder
    if embedder is not None:
        embedder.embed(["ready"], "query")
