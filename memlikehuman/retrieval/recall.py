"""memory_recall: ranking over memories and raw events, validity, detail levels, raw fallback.

Ranking, per kind of record (memories; raw events not covered by memories):
1. lexical candidates: FTS5 bm25 over the text, the attribution (speaker, cue keys and labels) and,
   for events, the previous turn of the session (search.lexical);
2. in `semantic`/`deep` mode, dense candidates: cosine between the query (speaker names taken out)
   and stored vectors; `semantic` scans the most recent `Settings.semantic_window` items, `deep` all;
3. fusion of the normalized scores; then, for events, each gains part of the best score of its
   session, strong hits lend part of theirs to the turns before and after them (an answer sits next
   to its question), and a speaker or a date named in the query lifts matching events;
4. with `alternatives` (and a phrasing with the label for a speaker the query calls by an alias),
   steps 1-3 run for every phrasing (all embedded in one embedder call); the rankings are fused.
5. in `semantic`/`deep` mode with one phrasing, the best events get a second look (second_look.py): a
   small linear model re-orders the conversation turns among them with the cosine of the turn after each,
   their length and their question marks.
docs/decisions/ranking-ablation.md has what each step is worth where it was not fitted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, NamedTuple

from .. import clock, validate
from ..archive import event_dates, events, memories, timeline
from ..errors import InvalidArgument, MemLikeHumanError
from ..records import Coverage, Kind, Memory, MemoryHit, RawHit, RecallResult, Scope
from ..text import ngrams
from ..text.asking import about_replies
from ..text.changes import says_change
from ..text.dates import DateWindow, date_windows, in_windows, spans_meet
from . import coverage, covered, echoes, gaps, gist, phrasings, ranking, search, second_look
from .excerpts import excerpt, gap_excerpt
from .ranking import DEFAULT_TUNING, Tuning
from .search import Filters
from .sources import Dense, Sources, Upkeep

if TYPE_CHECKING:
    import numpy as np

    from ..index.vectors import Hits

else:
    from ..providers.lazy_numpy import np  # numpy stays unimported on the hooks' path

MODES = ("fast", "semantic", "deep")
# Raw candidates are checked for memory coverage this many at a time.
RAW_PAGE = 50
# The user's best turns read to find the questions among them (they are not lifted as statements).
ASKED_AMONG = 50
# Newer-first orders one matter's statements within each ten of what is returned (the default limit):
# a larger limit then never changes the first ten (over a hundred hits, a newer statement at rank 80 took
# the place of the best one).
ORDER_WINDOW = 10
DETAILS = ("auto", "gist", "detailed")


def recall(
    sources: Sources,
    scope: Scope,
    query: str,
    *,
    limit: int = 10,
    as_of: str | None = None,
    include_history: bool = False,
    detail: str = "auto",
    search_mode: str = "fast",
    cue_key: str | None = None,
    session_id: str | None = None,
    alternatives: Sequence[str] | None = None,
    tuning: Tuning = DEFAULT_TUNING,
    upkeep: Callable[[Upkeep], None] | None = None,
    dense: Dense | None = None,
    outside_session: str | None = None,
    answering: bool = False,
) -> RecallResult:
    """Attributed memories and raw-event excerpts for a query, best first, as known at `as_of`.

    Recall writes nothing: what it notices about the vector index goes to `upkeep` (the facade
    drops stale cached vectors and wakes the indexer). `dense`, when given, receives the query's vector
    and the best cosine of every dense candidate (the injection gate's measures, injection.py); it
    stays empty in fast mode. `outside_session` leaves that session's raw events out (the prompt hook).
    `answering`: the caller is the agent answering a prompt (memory_recall): the prompt a hook recorded
    last in the scope, with no reply yet, is left out (echoes.unanswered_prompt). Raw events that say
    the same are one hit (the most recent, with `said` and `first_at`), and a reply found with its
    question comes before it (echoes.py).

    `alternatives` are further phrasings of the same need (at most 8): each is searched like the
    query and the rankings are fused. Raises InvalidArgument (bad input) or LimitExceeded (query or
    an alternative over 4,000 characters, more than 8 alternatives). An embedder that is missing or
    fails degrades the search to `fast`, with a warning.
    """
    scope = Scope(*validate.scope(scope.persona_id, scope.project_id))
    query = validate.text(query, "query", validate.MAX_QUERY_CHARS, allow_empty=True)
    validate.int_range(limit, "limit", 1, validate.MAX_LIMIT)
    validate.choice(detail, "detail", DETAILS)
    validate.choice(search_mode, "search_mode", MODES)
    if cue_key is not None:
        validate.identifier(cue_key, "cue_key")
    if session_id is not None:
        validate.identifier(session_id, "session_id")
    by_alias = phrasings.by_alias(sources.db, scope, query) if tuning.speaker_aliases else []
    others = phrasings.check(alternatives)
    if not query.strip() and cue_key is None:
        raise InvalidArgument("query is empty: give words to search for, or a cue_key to look up")
    stamp = clock.now_stamp() if as_of is None else clock.stamp(as_of, "as_of")
    answered = echoes.unanswered_prompt(sources.db, scope) if answering else None
    left_out = frozenset() if answered is None else frozenset({answered})
    filters = Filters(scope, stamp, session_id, cue_key, include_history, outside_session, left_out)
    found = _Recall(sources, filters, query, limit, detail, search_mode, tuning, others, by_alias)
    found.as_of_given = as_of is not None
    result = found.run()
    if dense is not None:
        dense.cosines.update(found.similarity)
    if upkeep is not None and (found.stale or found.unindexed):
        upkeep(Upkeep(scope, tuple(found.stale), found.unindexed))
    return result


class _Recall:
    """One recall call: holds its inputs while the steps run."""

    def __init__(
        self,
        sources: Sources,
        filters: Filters,
        query: str,
        limit: int,
        detail: str,
        mode: str,
        tuning: Tuning,
        alternatives: Sequence[str] = (),
        relabelled: Sequence[str] = (),
    ) -> None:
        self.sources, self.db, self.filters = sources, sources.db, filters
        self.query, self.limit, self.detail, self.mode, self.tuning = query, limit, detail, mode, tuning
        self.phrasings = phrasings.of(query, relabelled, alternatives)
        # All words of all phrasings: they centre excerpts and find the uncovered gaps of events.
        self.words = list(dict.fromkeys(w for p in self.phrasings for w in p.words))
        self.warnings: list[str] = []
        self.standing: tuple[tuple[str, str], ...] = ()
        self.model: str | None = None
        self.as_of_given = False
        # Phrasings of one need find mostly the same events: their neighbours are looked up once.
        self.links: dict[int, tuple[int | None, int | None]] = {}
        self.opened: dict[int, tuple[str, bool]] = {}  # search.openings, read once
        self.stale: list[int] = []
        self.unindexed = False
        # Events raw fallback left out because their memories cover what matched:
        # sequence -> (score, whether the event's own text holds a query word).
        self.covered: dict[int, tuple[float, bool]] = {}
        self.similarity: dict[tuple[Kind, int], float] = {}
        self.windows = [window for p in self.phrasings for window in date_windows(p.text)]

    def run(self) -> RecallResult:
        mode = self._prepare_dense()
        if not self.words and self.query.strip():
            self.warnings.append("the query has no words to search for (only punctuation or symbols): use words")
        short = ngrams.short_warning(self.query)
        if short:
            self.warnings.append(short)
        with self.db.read():
            coverage = self._coverage()
            memory_scores = self._rank("memory")
            event_scores = self._second_look(self._rank("event"))
            raw_hits = self._raw_hits(event_scores)
            memory_hits = self._memory_hits(covered.ranked(self.db, self.filters, memory_scores, self.covered))
        self._coverage_warnings(coverage, mode)
        if any(hit.detail == "overview" for hit in memory_hits):
            self.warnings.append(
                "some memories are shown as overviews without exact details: call memory_read with their"
                " memory_id before relying on specifics"
            )
        if any(hit.truncated for hit in raw_hits):
            self.warnings.append(
                "some raw excerpts are truncated (truncated=true): call memory_read with the event_id for the full text"
            )
        return RecallResult(
            memories=tuple(memory_hits),
            raw_fallback=tuple(raw_hits),
            search_mode=mode,
            as_of=self.filters.as_of,
            coverage=coverage,
            warnings=tuple(dict.fromkeys(self.warnings)),
            standing=self.standing,
        )

    # -- embedding the query -----------------------------------------------------------------

    def _prepare_dense(self) -> str:
        """Embed every phrasing (one call) for semantic/deep; on any provider failure fall back to fast."""
        try:
            embedder = self.sources.embedder
        except MemLikeHumanError as exc:
            embedder = None
            reason = f"the embedder cannot be set up ({exc.message})"
        else:
            reason = "no embedder is configured (MEMLIKEHUMAN_EMBEDDER=none)"
        if embedder is not None:
            self.model = embedder.model_id
        if self.mode == "fast" or not self.words:
            return self.mode if self.mode == "fast" or embedder is not None else self._degrade(reason)
        if embedder is None:
            return self._degrade(reason)
        # Speakers named in the query are matched as metadata (attribution, speaker factor); left in
        # the embedded text they pull in every turn that merely addresses that person (LoCoMo:
        # semantic recall@10 0.79 -> 0.81, dense-only 0.71 -> 0.79).
        texts = [p.text for p in self.phrasings]
        if self.tuning.strip_speakers:
            speakers = search.speaker_words(self.db, self.filters.scope)
            texts = [search.without_words(text, speakers) for text in texts]
        try:
            vectors = np.asarray(embedder.embed(texts, "query"), dtype=np.float32)
        except MemLikeHumanError as exc:
            return self._degrade(f"the embedder failed ({exc.message})")
        for phrasing, vector in zip(self.phrasings, vectors, strict=True):
            phrasing.qvec = vector
        return self.mode

    def _degrade(self, reason: str) -> str:
        self.warnings.append(f"search_mode {self.mode} was not possible: {reason}; used fast (lexical) search instead")
        return "fast"

    # -- ranking ---------------------------------------------------------------------------------

    def _rank(self, kind: Kind) -> dict[int, float]:
        """Fused scores of eligible records of this kind (memory rowids or event sequences)."""
        if not self.words:
            if self.filters.cue_key is None:
                return {}
            recent = search.recent_events if kind == "event" else search.recent_memories
            return ranking.by_recency(recent(self.db, self.filters, self.limit))
        searched = [p for p in self.phrasings if p.words]
        scanned = self._scan(kind, searched)
        rankings = [self._rank_one(kind, p, hits) for p, hits in zip(searched, scanned, strict=True)]
        own = [not p.further for p in searched]
        return phrasings.fuse(rankings, own, self.tuning.query_weight)

    def _rank_one(self, kind: Kind, phrasing: phrasings.Phrasing, hits: Hits | None) -> dict[int, float]:
        t = self.tuning
        weights = t.event_weights if kind == "event" else t.memory_weights
        text = phrasing.text if t.ngram else ""
        pool, cap = (t.alternative_pool, t.alternative_scored_rows) if phrasing.further else (t.lexical_pool, None)
        lexical = search.lexical(self.db, kind, phrasing.words, self.filters, pool, weights, text, cap)
        info = {hit.id: hit for hit in lexical}
        scores = ranking.fused(
            ranking.normalized([(hit.id, hit.score) for hit in lexical], 1.0),
            ranking.normalized(self._dense(kind, info, hits), t.dense, floor=True),
        )
        if kind == "event" and scores:
            scores = self._event_context(scores, info, phrasing)
        return scores

    def _second_look(self, scores: dict[int, float]) -> dict[int, float]:
        """The best events re-ordered by second_look's model (semantic/deep, the query embedded).

        Not with several phrasings: their fusion places each one's best on purpose (lift_winners), and
        the model was fitted on single queries."""
        searched = [p for p in self.phrasings if p.words]
        query = searched[0].qvec if len(searched) == 1 else None
        if not self.tuning.second_look or query is None or self.model is None or len(scores) < 2:
            return scores
        pool = ranking.top(scores, self.tuning.second_look)
        t = self.tuning
        looks = second_look.gather(
            self.db, self.sources.vectors, self.model, self.filters, query, pool, self._neighbours,
            t.second_look_length_cap,
        )  # fmt: skip
        return second_look.reordered(scores, pool, looks, t.second_look_weights, t.second_look_length_cap)

    def _scan(self, kind: Kind, searched: Sequence[phrasings.Phrasing]) -> list[Hits | None]:
        """Each phrasing's cosine top (its pool) among this kind's vectors, on one snapshot and filter
        of the matrix; None for each where the phrasings are not embedded (fast mode, no embedder)."""
        qvecs = [p.qvec for p in searched if p.qvec is not None]
        if self.model is None or not qvecs or len(qvecs) < len(searched):
            return [None] * len(searched)
        allowed = None
        if self.filters.session_id is not None or self.filters.cue_key is not None:
            allowed = np.asarray(search.filtered_ids(self.db, kind, self.filters), dtype=np.int64)
        window = None if self.mode == "deep" else self.sources.settings.semantic_window
        t = self.tuning
        pools = [t.alternative_pool if p.further else t.dense_pool for p in searched]
        found = self.sources.vectors.search_many(
            self.db, kind, self.model, self.filters.scope, np.stack(qvecs), pools, window=window, allowed=allowed
        )
        if found[0].skipped:
            among = " of those the session_id/cue_key filter admits" if allowed is not None else ""
            self.warnings.append(
                f"semantic search scanned the {found[0].scanned:,} most recent {kind}s with vectors{among} and"
                f" skipped {found[0].skipped:,} older ones: use search_mode deep to search all of them"
            )
        return list(found)

    def _dense(self, kind: Kind, info: dict[int, search.Hit], hits: Hits | None) -> list[tuple[int, float]]:
        """A phrasing's cosine candidates that are eligible; adds what is known about new events to info."""
        if hits is None:
            return []
        pairs = list(zip(hits.ids.tolist(), hits.scores.tolist(), strict=True))
        for i, s in pairs:
            key = (kind, i)
            self.similarity[key] = max(s, self.similarity.get(key, -1.0))
        ids = [i for i, _ in pairs if i not in info]
        if kind == "event":
            found = search.eligible_events(self.db, ids, self.filters)
            info.update(found)
            self._forget_stale([i for i in ids if i not in found])
            eligible = set(info)
        else:
            eligible = set(info) | search.eligible_memories(self.db, ids, self.filters)
        return [(i, s) for i, s in pairs if i in eligible]

    def _forget_stale(self, missing: Sequence[int]) -> None:
        """Note cached vectors of events deleted since they were loaded (the caller drops them)."""
        if not missing:
            return
        marks = ",".join("?" * len(missing))
        rows = self.db.query(f"SELECT sequence FROM events WHERE sequence IN ({marks})", tuple(missing))
        alive = {r["sequence"] for r in rows}
        self.stale.extend(i for i in missing if i not in alive)

    def _event_context(
        self, scores: dict[int, float], info: dict[int, search.Hit], phrasing: phrasings.Phrasing
    ) -> dict[int, float]:
        """Session, neighbour, speaker and date adjustments of event scores (ranking.py)."""
        t = self.tuning
        out = dict(scores)
        if t.session:
            out = ranking.with_session_share(scores, {key: info[key].session_id for key in scores}, t.session)
        if t.neighbour:
            pool = t.alternative_neighbours if phrasing.further else t.neighbour_pool
            links = self._neighbours(ranking.top(scores, pool))
            unknown = {n for pair in links.values() for n in pair if n is not None and n not in info}
            info.update(search.eligible_events(self.db, sorted(unknown), self.filters))
            out = ranking.with_neighbour_loans(out, scores, links, info, t.neighbour)
        words = set(phrasing.words)
        named = {source for source in {hit.source for hit in info.values()} if words.intersection(search.terms(source))}
        speakers = {seq for seq, hit in info.items() if seq in out and hit.source in named}
        out = ranking.with_factors(out, speakers, t.speaker, self._dated(out, info, phrasing), t.date)
        told = self._told(out, info)
        out = ranking.with_user_turns(out, told, t.user_turn)
        return ranking.with_user_turns(out, self._rules(out, told), t.standing)

    def _told(self, scores: dict[int, float], info: dict[int, search.Hit]) -> set[int]:
        """The user's turns that tell something: all of them but a short question among the best (only
        those are read: a question further down stays there, lifted or not). None when the query asks
        what the assistant said ("What approach did you recommend ...?"): its replies hold the answer."""
        if about_replies(self.query):
            return set()
        users = {seq for seq in scores if info[seq].role == "user"}
        if not self.tuning.user_turn or not users:
            return users
        best = ranking.top({seq: scores[seq] for seq in users}, max(ASKED_AMONG, 3 * self.limit))
        return users - search.only_asking(self._openings(best), best)

    def _rules(self, scores: dict[int, float], told: set[int]) -> set[int]:
        """The user's turns among the best that state a standing rule or preference (text/rules.py)."""
        if not self.tuning.standing or not told:
            return set()
        best = ranking.top({seq: scores[seq] for seq in told}, max(ASKED_AMONG, 3 * self.limit))
        return search.stating_rules(self._openings(best), best)

    def _openings(self, sequences: Sequence[int]) -> dict[int, tuple[str, bool]]:
        """Each event's opening (search.openings), read once per recall: the two checks above and every
        phrasing ask about mostly the same turns."""
        missing = [seq for seq in sequences if seq not in self.opened]
        if missing:
            self.opened.update(search.openings(self.db, missing))
        return self.opened

    def _dated(self, out: dict[int, float], info: dict[int, search.Hit], phrasing: phrasings.Phrasing) -> set[int]:
        """Events that occurred on a date the query names, or whose relative dates resolve into one."""
        windows = date_windows(phrasing.text) if self.tuning.date else []
        if not windows:
            return set()
        resolved = event_dates.spans_of(self.db, list(out)) if self.tuning.relative_dates else {}
        return {
            seq
            for seq, hit in info.items()
            if seq in out and (in_windows(hit.occurred_at, windows) or spans_meet(resolved.get(seq, ()), windows))
        }

    def _neighbours(self, sequences: Sequence[int]) -> dict[int, tuple[int | None, int | None]]:
        missing = [seq for seq in sequences if seq not in self.links]
        if missing:
            self.links.update(search.neighbours(self.db, missing))
        return {seq: self.links[seq] for seq in sequences if seq in self.links}

    # -- results -------------------------------------------------------------------------------

    def _memory_hits(self, scores: dict[int, float]) -> list[MemoryHit]:
        ranked = ranking.top(scores, self.limit)
        loaded = timeline.as_known(self.db, memories.by_rowids(self.db, ranked), self.filters.as_of)
        closed = search.closed_by_as_of(self.db, ranked, self.filters.as_of)
        hits = []
        for rowid in ranked:
            memory = loaded.get(rowid)
            if memory is None:
                continue
            status = "superseded" if rowid in closed else "current"
            hits.append(MemoryHit(memory, round(scores[rowid], 6), self._detail_of(memory), status))
        return echoes.in_windows(
            hits,
            ORDER_WINDOW,
            lambda window: echoes.newest_first(
                window,
                lambda hit: self._matter(hit.memory.role, hit.memory.source, hit.memory.content, hit.memory.valid_from),
                self._same_matter,
                lambda hit: hit.memory.valid_from,
                lambda hit, newer: replace(hit, newer=newer.memory.memory_id),
            ),
        )

    def _detail_of(self, memory: Memory) -> str:
        if self.detail == "gist":
            return "overview"
        if self.detail == "detailed" or memory.kind not in gist.EPISODIC_KINDS:
            return "full"
        age = clock.parse(self.filters.as_of, "as_of") - clock.parse(memory.valid_from, "valid_from")
        return "overview" if age > timedelta(days=self.sources.settings.gist_after_days) else "full"

    def _raw_hits(self, scores: dict[int, float]) -> list[RawHit]:
        """The best events as excerpts; an event with memories only where the query falls in a gap; events
        that say the same as a better one folded into it; replies before their questions."""
        hits: list[RawHit] = []
        said: dict[str, int] = {}  # echoes.same_words -> the hit's place
        ranked = [seq for seq in ranking.top(scores, len(scores)) if seq not in self.filters.left_out]
        for start in range(0, len(ranked), RAW_PAGE):
            page = ranked[start : start + RAW_PAGE]
            quotes = search.memory_quotes(self.db, page, self.filters.as_of)
            for sequence in page:
                event = events.load(self.db, sequence)
                whole = sequence not in quotes
                if whole:
                    shown = excerpt(event.text, self.words)
                else:
                    found = gaps.uncovered_text(event.text, quotes[sequence], self.words) if self.words else None
                    if found is None:
                        self.covered[sequence] = (scores[sequence], gaps.matches(event.text, self.words))
                        continue  # what matched is covered by the event's memories
                    shown = gap_excerpt(found, self.words)
                hit = RawHit(event, shown.text, shown.truncated, round(scores[sequence], 6), offset=shown.offset)
                words = echoes.same_words(event.text) if whole else ""
                key = f"{event.role}/{event.source}\n{words}" if words else ""
                if key and key in said:
                    hits[said[key]] = _fold(hits[said[key]], hit)
                    continue
                if key:
                    said[key] = len(hits)
                hits.append(hit)
                if len(hits) == self.limit:
                    return self._answers_first(self._newest_first(hits))
        return self._answers_first(self._newest_first(hits))

    def _newest_first(self, hits: list[RawHit]) -> list[RawHit]:
        """Raw hits about one matter (`_matter`) keep their places, newest first, within each ORDER_WINDOW;
        the older ones name the newest (echoes.newest_first)."""
        return echoes.in_windows(
            hits,
            ORDER_WINDOW,
            lambda window: echoes.newest_first(
                window,
                lambda hit: self._matter(hit.event.role, hit.event.source, hit.event.text, hit.event.occurred_at),
                self._same_matter,
                lambda hit: hit.event.occurred_at,
                lambda hit, newer: replace(hit, newer=newer.event.event_id),
            ),
        )

    def _matter(self, role: str, source: str, text: str, when: str) -> Matter | None:
        """What a statement is about, as far as newer-first goes: its speaker and the words of the query it
        holds (None for none), whether it says a value changed, and when it was said. A question states
        nothing. A query that names a date asks for what was said then, unless the statement names that
        date itself: the date is then part of what it is about ("the budget through August")."""
        if echoes.only_asks(text) or (self.windows and not _names_any(text, self.windows)):
            return None
        changed = says_change(text)
        forms = {form: word for word in self.words for form in (_number_forms(word) if changed else (word,))}
        held = frozenset(forms[form] for form in search.held(text, set(forms)))
        return Matter(f"{role}/{source}", held, changed, when) if held else None

    def _same_matter(self, a: Matter, b: Matter) -> bool:
        """One speaker's two statements are about one matter when they hold the same words of the query,
        two or more of them or all it has, or share at least half of its words and two or more ("car" of
        "car purchase" alone says too little; "project" and "API" of seven words too); or when the later
        one says a value changed ("increased to $650", text/changes.py) and they share two of its words."""
        if a.speaker != b.speaker:
            return False
        asked, shared = len(self.words), len(a.held & b.held)
        if a.held == b.held and (shared >= 2 or shared == asked):
            return True
        later = a if a.when > b.when else b
        return shared >= max(2, (asked + 1) // 2) or (later.changed and shared >= 2)

    def _answers_first(self, hits: list[RawHit]) -> list[RawHit]:
        """A user's question found with the assistant's reply right after it: the reply first (echoes.py)."""
        found = {hit.event.sequence: hit for hit in hits}
        asked = {seq for seq, hit in found.items() if hit.event.role == "user" and echoes.asks(hit.event.text)}
        links = self._neighbours(sorted(asked))

        def answer_of(hit: RawHit) -> RawHit | None:
            after = links.get(hit.event.sequence, (None, None))[1]
            reply = found.get(after) if after is not None and hit.event.sequence in asked else None
            return reply if reply is not None and reply.event.role == "assistant" else None

        return echoes.answers_first(hits, answer_of, lambda a, b: a.event.sequence == b.event.sequence)

    # -- coverage ----------------------------------------------------------------------------------

    def _coverage(self) -> Coverage:
        return coverage.count(self.db, self.filters.scope, self.model, self.filters.as_of)

    def _coverage_warnings(self, counted: Coverage, mode: str) -> None:
        found = coverage.warnings(counted, mode, self.model, as_of_given=self.as_of_given)
        self.warnings += [text for _, text in found]
        self.standing = tuple((kind, text) for kind, text in found if kind in coverage.STANDING)
        if mode != "fast" and counted.events_without_vectors:
            self.unindexed = True


def _number_forms(word: str) -> tuple[str, ...]:
    """A word with its plural or singular in -s: "books" and "book" say the same matter."""
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word, word[:-1]
    return word, f"{word}s"


def _names_any(text: str, windows: Sequence[DateWindow]) -> bool:
    """Whether the text names a date within one of the windows."""
    return any(named.meets(window) for named in date_windows(text) for window in windows)


class Matter(NamedTuple):
    """What a statement is about (_Recall._matter)."""

    speaker: str  # role/source
    held: frozenset[str]  # the query's words it holds
    changed: bool  # it says a value changed (text/changes.py)
    when: str  # when it was said (an event) or became valid (a memory)


def _fold(kept: RawHit, again: RawHit) -> RawHit:
    """Two hits of one speaker's events that say the same as one: the better ranked, how many said it and
    since when."""
    first = min(kept.first_at or kept.event.occurred_at, again.event.occurred_at)
    return replace(kept, said=kept.said + 1, first_at=first)
