"""What still says it: the other records of the scope that hold a forgotten text's distinctive words.

A forget takes what was made from the forgotten event (lifecycle/forget_plan.py). Records made
otherwise that repeat it stay: the assistant's reply that restated a note, a memory the agent wrote
from it (an agent's memory has no recorded prompt). They are found with the archive's own full-text
index: each word of the forgotten texts (archive/terms.py; no function words, no single characters;
the MAX_WORDS longest when there are more) that the index finds in at most RARE records of the scope
besides what the forget takes (a rare word or number: a common word points at nothing) names the
events whose text and the memories whose content hold it. They are named in memory_forget's
``still_said_by`` and in the UI's preview, and deleted only when asked (``also``, or a second call).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..archive import terms
from ..archive.backend import backend_of
from ..archive.connection import Transaction
from ..records import Scope

# A word the index finds in more records of the scope than this (besides what goes) is common.
RARE = 5
# A forgotten file read can hold thousands of words; the longest are looked up.
MAX_WORDS = 500
_TABLES = {
    ("event", terms.WORD_INDEX): "events_fts",
    ("event", terms.NGRAM_INDEX): "events_ngrams",
    ("memory", terms.WORD_INDEX): "memories_fts",
    ("memory", terms.NGRAM_INDEX): "memories_ngrams",
}
_RECORDS = {"event": ("events", "sequence", "event_id"), "memory": ("memories", "id", "memory_id")}


def named(
    conn: Transaction, scope: Scope, texts: Iterable[str], going_events: Sequence[int], going_memories: Sequence[int]
) -> tuple[str, ...]:
    """The IDs of the scope's events, then memories, that hold a distinctive word of the texts,
    in recording order; the records being forgotten are left out."""
    going = {"event": set(going_events), "memory": set(going_memories)}
    found: dict[str, set[tuple[int, str]]] = {"event": set(), "memory": set()}
    for word in distinctive(texts):
        events = holders(conn, scope, "event", word, going["event"])
        if len(events) > RARE:
            continue  # common among the events already: the memories need not be asked
        memories = holders(conn, scope, "memory", word, going["memory"])
        if len(events) + len(memories) <= RARE:
            found["event"].update(events)
            found["memory"].update(memories)
    return tuple(record_id for kind in ("event", "memory") for _, record_id in sorted(found[kind]))


def distinctive(texts: Iterable[str]) -> list[terms.Word]:
    """The words a forgotten text is looked for by: every word of two or more characters, the longest
    MAX_WORDS of them."""
    words: dict[tuple[str, str], terms.Word] = {}
    for text in texts:
        for word in terms.words(text):
            if len(word.surface) >= 2:
                words.setdefault((word.index, word.term), word)
    return sorted(words.values(), key=lambda w: (-len(w.surface), w.term))[:MAX_WORDS]


def holders(conn: Transaction, scope: Scope, kind: str, word: terms.Word, going: set[int]) -> list[tuple[int, str]]:
    """Up to RARE + 1 records of the kind in the scope, not going, whose text (content) holds the word."""
    table, key, record_id = _RECORDS[kind]
    source, condition, params = backend_of(conn).fulltext_matching(_TABLES[(kind, word.index)], word.surface, 0)
    rows = conn.execute(
        f"SELECT r.{key} AS rowid, r.{record_id} AS record_id FROM {source} JOIN {table} r ON r.{key} = f.rowid"
        f" WHERE {condition} AND r.persona_id = :sp AND r.project_id = :sq LIMIT :limit",
        {**params, "sp": scope.persona_id, "sq": scope.project_id, "limit": RARE + 1 + len(going)},
    ).fetchall()
    return [(row["rowid"], row["record_id"]) for row in rows if row["rowid"] not in going][: RARE + 1]
