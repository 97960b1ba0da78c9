"""What still says it: the other records of the scope that state a forgotten text.

A forget takes what was made from the forgotten event (lifecycle/forget_plan.py). Records made
otherwise that repeat it stay: the assistant's reply that restated a note, a memory the agent wrote
from it (an agent's memory has no recorded prompt). They are found with the archive's own full-text
index, by the forgotten texts' words (archive/terms.py: cut as the index cuts them, no function
words, no single characters; the MAX_WORDS longest when there are more):

- a word is *common* when more than ``common_above(n)`` of the scope's other records hold it (n: the
  scope's events and memories besides what the forget takes): the larger of FLOOR and the square root
  of n. A common word ("moved", "thanks", a speaker's name in every turn) points at nothing;
- a record is named when its text (a memory: its content) holds at least two of the uncommon words,
  and more than a third of them: it says what the forgotten text said, not a word of it.

They are named in memory_forget's ``still_said_by`` and in the UI's preview, and deleted only when
asked (``also``, or a second call). Measured on a labelled set and on LoCoMo: bench/still_said.py at commit 3aaa05c
(docs/decisions/forget-by-provenance.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ..archive import terms
from ..archive.backend import backend_of
from ..archive.connection import Transaction
from ..records import Scope

# A forgotten file read can hold thousands of words; the longest are looked up.
MAX_WORDS = 500
# Below 25 other records the square root is under this: a fact stated there a few times (the note, the
# reply, the agent's memory, said again) would make its own words common.
FLOOR = 5
# The named record holds at least this many of the uncommon words, and more than this share of them.
AT_LEAST, SHARE = 2, 1 / 3
_TABLES = {
    ("event", terms.WORD_INDEX): "events_fts",
    ("event", terms.NGRAM_INDEX): "events_ngrams",
    ("memory", terms.WORD_INDEX): "memories_fts",
    ("memory", terms.NGRAM_INDEX): "memories_ngrams",
}
_RECORDS = {"event": ("events", "sequence", "event_id"), "memory": ("memories", "id", "memory_id")}
_Holder = tuple[str, int, str]  # kind, rowid, record ID


def named(
    conn: Transaction, scope: Scope, texts: Iterable[str], going_events: Sequence[int], going_memories: Sequence[int]
) -> tuple[str, ...]:
    """The IDs of the scope's events, then memories, that state the texts (the module's rule), in
    recording order; the records being forgotten are left out."""
    going = {"event": set(going_events), "memory": set(going_memories)}
    limit = common_above(_others(conn, scope, going))
    held: dict[_Holder, int] = {}
    uncommon = 0
    for word in distinctive(texts):
        found = holders(conn, scope, "event", word, going["event"], limit)
        if len(found) <= limit:  # common among the events already: the memories need not be asked
            found += holders(conn, scope, "memory", word, going["memory"], limit - len(found))
        if len(found) > limit:
            continue
        uncommon += 1
        for holder in found:
            held[holder] = held.get(holder, 0) + 1
    chosen = sorted(h for h, count in held.items() if count >= AT_LEAST and count > SHARE * uncommon)
    return tuple(record_id for kind in ("event", "memory") for k, _, record_id in chosen if k == kind)


def common_above(others: int) -> int:
    """How many of ``others`` records of a scope may hold a word before it is common there."""
    return max(FLOOR, math.isqrt(others))


def distinctive(texts: Iterable[str]) -> list[terms.Word]:
    """The words a forgotten text is looked for by: every word of two or more characters, the longest
    MAX_WORDS of them."""
    words: dict[tuple[str, str], terms.Word] = {}
    for text in texts:
        for word in terms.words(text):
            if len(word.surface) >= 2:
                words.setdefault((word.index, word.term), word)
    return sorted(words.values(), key=lambda w: (-len(w.surface), w.term))[:MAX_WORDS]


def holders(
    conn: Transaction, scope: Scope, kind: str, word: terms.Word, going: set[int], limit: int = FLOOR
) -> list[_Holder]:
    """Up to ``limit`` + 1 records of the kind in the scope, not going, whose text (content) holds the word."""
    if limit < 0:
        return []
    table, key, record_id = _RECORDS[kind]
    source, condition, params = backend_of(conn).fulltext_matching(_TABLES[(kind, word.index)], word.surface, 0)
    rows = conn.execute(
        f"SELECT r.{key} AS rowid, r.{record_id} AS record_id FROM {source} JOIN {table} r ON r.{key} = f.rowid"
        f" WHERE {condition} AND r.persona_id = :sp AND r.project_id = :sq LIMIT :limit",
        {**params, "sp": scope.persona_id, "sq": scope.project_id, "limit": limit + 1 + len(going)},
    ).fetchall()
    return [(kind, row["rowid"], row["record_id"]) for row in rows if row["rowid"] not in going][: limit + 1]


def _others(conn: Transaction, scope: Scope, going: dict[str, set[int]]) -> int:
    """The scope's events and memories besides those going."""
    total = 0
    for kind, (table, _, _) in _RECORDS.items():
        count = conn.execute(
            f"SELECT count(*) AS n FROM {table} WHERE persona_id = ? AND project_id = ?",
            (scope.persona_id, scope.project_id),
        ).fetchone()["n"]
        total += int(count) - len(going[kind])
    return total
