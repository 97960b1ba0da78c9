"""Read-only queries for recall: full-text matches and the eligibility rules, all scope-bound.

User text never reaches SQL or the FTS5 query language as such: it is cut into word tokens and
every token is quoted, so FTS5 operators (`NEAR`, `*`, `:`, `^`, quotes) and SQL fragments in a
query are ordinary words. Stopwords are dropped: they cost time on every row they occur in and
blur the ranking (measured on LoCoMo: recall@10 0.549 with them, 0.605 without).
"""

from __future__ import annotations

import dataclasses
import re
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..archive import fulltext
from ..archive.backend import backend_of
from ..archive.connection import Connection, Row
from ..records import Kind, Scope
from ..text import ngrams
from ..text.asking import only_asks
from ..text.rules import RULE_CHARS, states_rule

MAX_TERMS = 48
ASKING_CHARS = 600  # a turn that only asks is one short sentence: longer ones are not read to find out
_WORD = re.compile(r"\w+", re.UNICODE)

# English function words plus the question words of recall queries ("when did ...").
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been before being
    below between both but by can cannot could couldn did didn do does doesn doing don down during each
    else ever few for from further get got had hadn has hasn have haven having he her here hers herself
    him himself his how however i if in into is isn it its itself just let ll me more most much must
    mustn my myself no nor not now of off on once only or other ought our ours ourselves out over own
    re s same shall shan she should shouldn so some such t than that the their theirs them themselves
    then there these they this those through to too under until up upon us ve very was wasn we were
    weren what whatever when whenever where whereas whether which while who whom whose why will with
    won would wouldn yet you your yours yourself yourselves d m o y
    """.split()
)


@dataclass(frozen=True)
class Filters:
    """What a recall may see: the scope, the knowledge time and the optional filters."""

    scope: Scope
    as_of: str
    session_id: str | None = None
    cue_key: str | None = None
    include_history: bool = False
    outside_session: str | None = None  # its raw events are left out (the prompt hook: already in context)
    left_out: frozenset[int] = frozenset()  # raw events never returned (the prompt being answered)

    def params(self) -> dict[str, Any]:
        return {
            "persona": self.scope.persona_id,
            "project": self.scope.project_id,
            "as_of": self.as_of,
            "session": self.session_id,
            "cue": self.cue_key,
            "outside": self.outside_session,
        }


def held(text: str, words: set[str]) -> set[str]:
    """The words (lowercase tokens, as `terms` cuts them) that the text holds as whole words."""
    lowered = text.lower()
    return {w for w in words if w in lowered and re.search(rf"(?<!\w){re.escape(w)}(?!\w)", lowered)}


def terms(query: str) -> list[str]:
    """The query's distinct lowercase word tokens without stopwords (all of them if only stopwords)."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    content = [w for w in words if w not in STOPWORDS]
    return (content or words)[:MAX_TERMS]


def _event_rules(filters: Filters) -> str:
    """Raw events a recall may return: recorded (not corrections), in scope, known by as_of.

    Events with memories are candidates too: recall shows the parts no memory covers (gaps.py).
    """
    rules = [
        "e.persona_id = :persona",
        "e.project_id = :project",
        "e.occurred_at <= :as_of",
        "e.kind = 'record'",
    ]
    if filters.session_id is not None:
        rules.append("e.session_id = :session")
    if filters.outside_session is not None:
        rules.append("e.session_id <> :outside")
    if filters.cue_key is not None:
        rules.append("e.sequence IN (SELECT c.event_sequence FROM cues c WHERE c.key = :cue)")
    return " AND ".join(rules)


# A later version closes a memory's window only once the later version is itself known (as_of).
_CLOSED_BY_AS_OF = (
    "(m.valid_to IS NOT NULL AND m.valid_to <= :as_of AND (m.superseded_by IS NULL OR"
    " (SELECT s.known_from FROM memories s WHERE s.id = m.superseded_by) <= :as_of))"
)


_MEMORY_JOIN = "memories m JOIN events e ON e.sequence = m.event_sequence"


def _memory_rules(filters: Filters) -> str:
    """Memories a recall may return: in scope, never revoked, known and valid at as_of."""
    rules = [
        "m.persona_id = :persona",
        "m.project_id = :project",
        "m.revoked_at IS NULL",
        "m.known_from <= :as_of",
        "m.valid_from <= :as_of",
    ]
    if not filters.include_history:
        rules.append("NOT " + _CLOSED_BY_AS_OF)
    if filters.session_id is not None:
        rules.append("m.session_id = :session")
    if filters.cue_key is not None:
        rules.append("m.event_sequence IN (SELECT c.event_sequence FROM cues c WHERE c.key = :cue)")
    return " AND ".join(rules)


def memory_quotes(db: Connection, sequences: Sequence[int], as_of: str) -> dict[int, list[str]]:
    """The quotes of those events' memories, revoked and superseded ones too (a statement corrected away must
    not come back through its event), but not of one still unrevoked and not yet valid or known at `as_of`."""
    found: dict[int, list[str]] = {}
    for start in range(0, len(sequences), 500):
        chunk = tuple(sequences[start : start + 500])
        sql = f"SELECT event_sequence, quote FROM memories WHERE event_sequence IN ({','.join('?' * len(chunk))})"
        sql += " AND (revoked_at IS NOT NULL OR (valid_from <= ? AND known_from <= ?))"
        for row in db.query(sql, (*chunk, as_of, as_of)):
            found.setdefault(row["event_sequence"], []).append(row["quote"])
    return found


def closed_by_as_of(db: Connection, rowids: Sequence[int], as_of: str) -> set[int]:
    """The memories among rowids whose validity window is closed by as_of (superseded then)."""
    if not rowids:
        return set()
    marks = ",".join("?" * len(rowids))
    sql = f"SELECT m.id FROM memories m WHERE m.id IN ({marks}) AND " + _CLOSED_BY_AS_OF.replace(":as_of", "?")
    return {row["id"] for row in db.query(sql, (*rowids, as_of, as_of))}


@dataclass(frozen=True)
class Hit:
    """A lexical match: row ID, bm25 score (> 0, higher is better) and its event's speaker, session, time
    and role."""

    id: int
    score: float
    source: str
    session_id: str
    occurred_at: str
    role: str = ""


def _hit(row: Row, score: float) -> Hit:
    return Hit(row["id"], score, row["source"], row["session_id"], row["occurred_at"], row["role"])


def openings(db: Connection, sequences: Sequence[int]) -> dict[int, tuple[str, bool]]:
    """For each event among sequences: its opening characters, and whether the text is short enough
    (ASKING_CHARS) to be read for whether it only asks.

    What a turn opens with tells whether it only asks (text/asking.py: one short sentence) and whether
    it states a standing rule (text/rules.py: said in its first RULE_CHARS); one read serves both."""
    if not sequences:
        return {}
    marks = ",".join("?" * len(sequences))
    head = max(ASKING_CHARS, RULE_CHARS)
    sql = (
        f"SELECT sequence, substr(text, 1, {head}) AS head, length(text) <= {ASKING_CHARS} AS whole"
        f" FROM events WHERE sequence IN ({marks})"
    )
    return {row["sequence"]: (row["head"], bool(row["whole"])) for row in db.query(sql, tuple(sequences))}


def only_asking(opened: dict[int, tuple[str, bool]], sequences: Sequence[int]) -> set[int]:
    """The events among sequences that only ask a question (text/asking.py); a long text is never one."""
    return {seq for seq in sequences if seq in opened and opened[seq][1] and only_asks(opened[seq][0])}


def stating_rules(opened: dict[int, tuple[str, bool]], sequences: Sequence[int]) -> set[int]:
    """The events among sequences that state a standing rule or preference (text/rules.py)."""
    return {seq for seq in sequences if seq in opened and states_rule(opened[seq][0])}


# FTS5's bm25() costs a few microseconds per matching row, so a word found across the archive
# (a speaker's name in a two-person chat is in half the rows) would cost 150 ms at 100k events.
# The query's rarest words, as long as their rows add up to at most SCORED_ROWS, are therefore
# scored over the whole archive; all its words together are scored among its SCORED_ROWS newest
# matches. At most about 2 x SCORED_ROWS rows are scored; small archives are exact.
SCORED_ROWS = 2_000
COUNT_SECONDS = 60.0
# Per open archive (gone with its connection): (table, word) -> (when counted, rows). A word no row
# held is counted again on every call: the next event may say it.
_COUNTS: weakref.WeakKeyDictionary[Connection, dict[tuple[str, str], tuple[float, int]]] = weakref.WeakKeyDictionary()

# CROSS JOIN keeps the full-text index as the outer loop: with a rowid bound, the planner would
# otherwise walk the scope's events and run the MATCH once per event (seconds instead of ms).
_LEXICAL = {
    "event": ("CROSS JOIN events e ON e.sequence = f.rowid", "e.session_id"),
    "memory": (
        "CROSS JOIN memories m ON m.id = f.rowid CROSS JOIN events e ON e.sequence = m.event_sequence",
        "m.session_id",
    ),
}


def lexical(
    db: Connection,
    kind: Kind,
    words: Sequence[str],
    filters: Filters,
    limit: int,
    weights: Sequence[float],
    text: str = "",
    scored_rows: int | None = None,
) -> list[Hit]:
    """Eligible events or memories matching any of the words, best first (bm25 with column weights).

    Event columns: text, attribution (speaker, cue keys and labels), context (previous turn); an
    event is scored by its best passage (archive/fulltext.py); memory columns: content, attribution.
    When the query `text` has runs in n-gram scripts (CJK, Thai, Cyrillic, Arabic, ...), the n-gram
    index is searched too and both rankings are fused: each scaled by its best score, then added. A
    Latin-only query never reads the n-gram index.
    `scored_rows` overrides SCORED_ROWS (a benchmark compares the capped ranking with the exact one).
    """
    cap = SCORED_ROWS if scored_rows is None else scored_rows
    table = fulltext.event_table(db) if kind == "event" else fulltext.TABLES[kind]
    hits = _ranked(db, kind, table, words, filters, limit, weights, cap)
    grams = ngrams.query(text).terms
    if not grams:
        return hits
    found = _ranked(db, kind, fulltext.NGRAM_TABLES[kind], grams, filters, limit, weights, cap)
    return fuse(hits, found, limit)


def fuse(first: Sequence[Hit], second: Sequence[Hit], limit: int) -> list[Hit]:
    """Two rankings of the same records as one: each score scaled by its ranking's best, then added."""
    if not second or not first:
        return list(first or second)[:limit]
    fused: dict[int, Hit] = {}
    for ranking in (first, second):
        best = max(hit.score for hit in ranking)
        for hit in ranking:
            score = hit.score / best + (fused[hit.id].score if hit.id in fused else 0.0)
            fused[hit.id] = dataclasses.replace(hit, score=score)
    return sorted(fused.values(), key=lambda hit: -hit.score)[:limit]


def _ranked(
    db: Connection,
    kind: Kind,
    table: str,
    words: Sequence[str],
    filters: Filters,
    limit: int,
    weights: Sequence[float],
    cap: int,
) -> list[Hit]:
    counts = row_counts(db, table, words)
    words = [w for w in words if counts.get(w)]
    span = scope_span(db, kind, filters.scope)
    if not words or span is None:
        return []
    if sum(counts[w] for w in words) <= cap:
        return _bm25(db, kind, table, words, filters, limit, weights, span, None, counts)
    found: dict[int, Hit] = {}
    rare, budget = [], cap
    for word in sorted(words, key=lambda w: counts[w]):
        if counts[word] > budget:
            break
        rare.append(word)
        budget -= counts[word]
    if rare:
        found.update((hit.id, hit) for hit in _bm25(db, kind, table, rare, filters, limit, weights, span, None, counts))
    # The scope's newest matches: another project's rows in the same archive take none of the cap.
    slots = fulltext.PASSAGE_SLOTS
    rows = (span[0] * slots, (span[1] + 1) * slots - 1) if table == fulltext.PASSAGES else span
    newest = _nth_newest(db, table, words, cap, rows)
    # Scored with every word, so these scores replace the rare-word-only ones of the same rows.
    found.update((hit.id, hit) for hit in _bm25(db, kind, table, words, filters, limit, weights, span, newest, counts))
    return sorted(found.values(), key=lambda hit: -hit.score)[:limit]


SPEAKER_EVENTS = 5_000
_SPEAKERS: weakref.WeakKeyDictionary[Connection, dict[Scope, tuple[float, frozenset[str]]]] = (
    weakref.WeakKeyDictionary()
)


def speaker_words(db: Connection, scope: Scope) -> frozenset[str]:
    """The words of the sources (speakers) of the scope's recent events (cached for a minute)."""
    now = time.monotonic()
    known = _SPEAKERS.setdefault(db, {})
    cached = known.get(scope)
    if cached is None or now - cached[0] > COUNT_SECONDS:
        rows = db.query(
            "SELECT DISTINCT source FROM (SELECT source FROM events WHERE persona_id = ? AND project_id = ?"
            " ORDER BY sequence DESC LIMIT ?) AS recent",
            (scope.persona_id, scope.project_id, SPEAKER_EVENTS),
        )
        cached = known[scope] = (now, frozenset(w for r in rows for w in terms(r["source"])))
    return cached[1]


def without_words(text: str, words: frozenset[str]) -> str:
    """The text without those words (and their possessive 's); the text itself if nothing would be left."""
    kept = re.sub(
        r"\w+(?:['’]s\b)?", lambda m: "" if _WORD.findall(m.group(0).lower())[0] in words else m.group(0), text
    )
    kept = re.sub(r"\s+", " ", kept).strip()
    return kept if terms(kept) and set(terms(kept)) - STOPWORDS else text


def row_counts(db: Connection, table: str, words: Sequence[str], fresh: bool = False) -> dict[str, int]:
    """How many rows of a full-text table contain each word (cached for a minute to plan; `fresh`: counted now)."""
    if fresh:
        return {word: _count(db, table, word) for word in words}
    now = time.monotonic()
    known = _COUNTS.setdefault(db, {})
    if len(known) > 100_000:
        known.clear()
    counts = {}
    for word in words:
        cached = known.get((table, word))
        if cached is None or now - cached[0] > COUNT_SECONDS:
            cached = (now, _count(db, table, word))
            if cached[1]:
                known[(table, word)] = cached
        counts[word] = cached[1]
    return counts


def _count(db: Connection, table: str, word: str) -> int:
    return backend_of(db).fulltext_count(db, table, word)


def _nth_newest(db: Connection, table: str, words: Sequence[str], offset: int, span: tuple[int, int]) -> int | None:
    return backend_of(db).fulltext_nth_newest(db, table, words, offset, span)


def _bm25(
    db: Connection,
    kind: Kind,
    table: str,
    words: Sequence[str],
    filters: Filters,
    limit: int,
    weights: Sequence[float],
    span: tuple[int, int],
    floor: int | None,
    counts: dict[str, int] | None = None,
) -> list[Hit]:
    join, session = _LEXICAL[kind]
    rules = _event_rules(filters) if kind == "event" else _memory_rules(filters)
    source, score, condition, matched = fulltext.scored(db, table, words, weights, counts, floor)
    sql = (
        f"SELECT f.rowid AS id, {score} AS score, e.source, {session} AS session_id, e.occurred_at, e.role"
        f" FROM {source} {join} WHERE {condition} AND f.rowid BETWEEN :span_from AND :span_to AND {rules}"
        " ORDER BY score DESC LIMIT :limit"
    )
    params = {**filters.params(), **matched, "limit": limit, "span_from": span[0], "span_to": span[1]}
    return [_hit(row, float(row["score"])) for row in db.query(sql, params)]


def scope_span(db: Connection, kind: Kind, scope: Scope) -> tuple[int, int] | None:
    """The lowest and highest rowid of the scope's events or memories (None when it has none).

    The full-text tables hold every scope's rows. Bounding the rowid lets FTS5 skip the other scopes'
    postings instead of scoring each match and dropping it afterwards (an archive of several projects
    pays bm25 only for the scope asked about, as far as their rows are apart), and makes a common word's
    newest matches the scope's own (_ranked): a project ranks the same whatever else the archive holds.
    """
    table, column = ("events", "sequence") if kind == "event" else ("memories", "id")
    row = db.one(
        f"SELECT min({column}) AS low, max({column}) AS high FROM {table} WHERE persona_id = ? AND project_id = ?",
        (scope.persona_id, scope.project_id),
    )
    return None if row is None or row["low"] is None else (int(row["low"]), int(row["high"]))


def eligible_events(db: Connection, ids: Sequence[int], filters: Filters) -> dict[int, Hit]:
    """The events among ids that a recall with these filters may return (score 0), by sequence."""
    # NOT INDEXED: the IDs are few, so look them up by primary key; the planner would otherwise walk
    # the scope's time index (2 ms instead of 0.1 ms for 200 IDs at 30k events).
    sql = (
        "SELECT e.sequence AS id, e.source, e.session_id, e.occurred_at, e.role FROM events e NOT INDEXED"
        f" WHERE {_event_rules(filters)}"
    )
    rows = _eligible(db, ids, sql, "e.sequence", filters)
    return {r["id"]: _hit(r, 0.0) for r in rows}


def eligible_memories(db: Connection, ids: Sequence[int], filters: Filters) -> set[int]:
    """The memory rowids among ids that a recall with these filters may return."""
    sql = f"SELECT m.id AS id FROM memories m NOT INDEXED {_MEMORY_JOIN.removeprefix('memories m ')}"
    sql += f" WHERE {_memory_rules(filters)}"
    return {row["id"] for row in _eligible(db, ids, sql, "m.id", filters)}


def _eligible(db: Connection, ids: Sequence[int], sql: str, column: str, filters: Filters) -> list[Row]:
    found: list[Row] = []
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        params = {**filters.params(), **{f"i{n}": v for n, v in enumerate(chunk)}}
        marks = ",".join(f":i{n}" for n in range(len(chunk)))
        found.extend(db.query(f"{sql} AND {column} IN ({marks})", params))
    return found


def filtered_ids(db: Connection, kind: Kind, filters: Filters) -> list[int]:
    """All eligible IDs under a session or cue filter (small sets), to restrict vector scans."""
    if kind == "event":
        sql = f"SELECT e.sequence AS id FROM events e WHERE {_event_rules(filters)}"
    else:
        sql = f"SELECT m.id AS id FROM {_MEMORY_JOIN} WHERE {_memory_rules(filters)}"
    return [row["id"] for row in db.query(sql, filters.params())]


def recent_events(db: Connection, filters: Filters, limit: int) -> list[int]:
    """The most recent eligible events (for a cue_key recall without a query)."""
    sql = f"SELECT e.sequence AS id FROM events e WHERE {_event_rules(filters)} ORDER BY e.sequence DESC LIMIT :limit"
    return [row["id"] for row in db.query(sql, {**filters.params(), "limit": limit})]


def recent_memories(db: Connection, filters: Filters, limit: int) -> list[int]:
    """The most recent eligible memories (for a cue_key recall without a query)."""
    sql = (
        "SELECT m.id AS id FROM memories m JOIN events e ON e.sequence = m.event_sequence"
        f" WHERE {_memory_rules(filters)} ORDER BY m.id DESC LIMIT :limit"
    )
    return [row["id"] for row in db.query(sql, {**filters.params(), "limit": limit})]


def neighbours(db: Connection, sequences: Sequence[int]) -> dict[int, tuple[int | None, int | None]]:
    """For each event, the previous and next event of the same session and scope (or None)."""
    found: dict[int, tuple[int | None, int | None]] = {}
    for start in range(0, len(sequences), 500):
        chunk = tuple(sequences[start : start + 500])
        marks = ",".join("?" * len(chunk))
        sql = (
            "SELECT e.sequence AS id,"
            " (SELECT max(p.sequence) FROM events p WHERE p.persona_id = e.persona_id"
            "   AND p.project_id = e.project_id AND p.session_id = e.session_id AND p.sequence < e.sequence) AS prev,"
            " (SELECT min(n.sequence) FROM events n WHERE n.persona_id = e.persona_id"
            "   AND n.project_id = e.project_id AND n.session_id = e.session_id AND n.sequence > e.sequence) AS next"
            f" FROM events e WHERE e.sequence IN ({marks})"
        )
        found.update((row["id"], (row["prev"], row["next"])) for row in db.query(sql, chunk))
    return found


def text_shapes(db: Connection, sequences: Sequence[int]) -> dict[int, tuple[int, bool, str]]:
    """For each event: its text's length in characters, whether it ends with a question mark, its role."""
    if not sequences:
        return {}
    marks = ",".join("?" * len(sequences))
    sql = (
        "SELECT sequence AS id, length(text) AS n, substr(text, -64) AS tail, role FROM events"
        f" WHERE sequence IN ({marks})"
    )
    rows = db.query(sql, tuple(sequences))
    return {row["id"]: (int(row["n"]), row["tail"].rstrip().endswith("?"), row["role"]) for row in rows}
