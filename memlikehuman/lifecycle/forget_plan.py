"""What a forget takes, decided by recorded provenance (archive/sources.py), in one snapshot.

From the events it starts with (the forgotten one; with ``also``, those still_said names), and any
memories it is told to take alone, it follows three rules until nothing more goes:

1. A memory goes when no event that states it is left: its own event and the further events that
   stated it again. While one is left it stays, with its ID, and when its own event goes it is
   quoted from the earliest one left (``requoted``), unless it holds a word (rule 3) that only what
   goes said: an extractor shown the memory may have copied it into another event's answer, and
   that event, which does not say it, does not keep it.
2. The corrections of a memory that goes go with it (their events, and what those made); a
   correction's replacement that goes takes its correction event, whose text repeats it.
3. A memory whose making was shown something that goes (an event of its extraction prompt, a memory
   the prompt listed) goes when it holds a word that only what goes said: a word of its content,
   gist or subject (archive/terms.py: cut as the full-text index cuts it, no function word) that
   a shown source that goes holds, that an event behind such a source said (the shown event, or the
   event of the shown memory; a memory's own phrasing, "The user", "Der Nutzer", is the extractor's,
   and another event the forget takes, such as a later correction, was never shown), that none of
   the sources left holds (the events that state it, with their speaker and date, which the prompt
   showed, and the other events and memories it was shown), and that no other event of the scope
   that stays holds (the full-text index finds it in none: a word other turns say too, like an
   extractor's "said" or "prefers", is no trace of what goes). Its event stays.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..archive import sources, terms
from ..archive.connection import Transaction
from ..archive.db import placeholders
from ..archive.sources import Quote
from ..records import Scope
from . import still_said


@dataclass(frozen=True)
class Plan:
    events: dict[int, str]  # sequence -> event_id, in the order reached
    memories: dict[int, str]  # rowid -> memory_id
    # Memories that stay because an event left states them: the source they are quoted from now.
    requoted: dict[int, Quote] = field(default_factory=dict)
    # Memories taken by rule 3 or taken alone (their events stay), and their corrections' replacements:
    # a version they closed stays closed.
    carried: frozenset[int] = frozenset()


def plan(conn: Transaction, roots: Sequence[int], alone: Sequence[int] = ()) -> Plan:
    """The plan of forgetting the events ``roots`` and the memories ``alone`` (their events stay)."""
    state = _State(conn)
    state.take_events(roots)
    state.take_memories(alone, carried=True)
    while state.step():
        pass
    return Plan(dict(state.events), dict(state.memories), dict(state.requoted), frozenset(state.carried))


class _State:
    """The growing plan, and what was read to decide it (texts and terms are read once)."""

    def __init__(self, conn: Transaction) -> None:
        self.conn = conn
        self.events: dict[int, str] = {}
        self.memories: dict[int, str] = {}
        self.requoted: dict[int, Quote] = {}
        self.carried: set[int] = set()
        self.carried_events: set[int] = set()  # corrections of carried memories
        self.candidates: set[int] = set()  # memories shown something that goes (rule 3)
        self._new_events: list[int] = []
        self._new_memories: list[int] = []
        self._texts: dict[tuple[str, int], list[str]] = {}
        self._said_by: dict[int, frozenset[str]] = {}

    def take_events(self, sequences: Iterable[int]) -> None:
        fresh = [s for s in sequences if s not in self.events]
        rows = self.conn.execute(
            f"SELECT sequence, event_id FROM events WHERE sequence IN ({placeholders(fresh)})", fresh
        ).fetchall()
        found = {row["sequence"]: row["event_id"] for row in rows}
        for sequence in fresh:
            if sequence in found:
                self.events[sequence] = found[sequence]
                self._new_events.append(sequence)

    def take_memories(self, rowids: Iterable[int], *, carried: bool = False) -> None:
        fresh = [r for r in rowids if r not in self.memories]
        rows = self.conn.execute(
            f"SELECT id, memory_id FROM memories WHERE id IN ({placeholders(fresh)}) ORDER BY id", fresh
        ).fetchall()
        for row in rows:
            self.memories[row["id"]] = row["memory_id"]
            self.requoted.pop(row["id"], None)
            self._new_memories.append(row["id"])
            if carried:
                self.carried.add(row["id"])

    def step(self) -> bool:
        """Apply the three rules to what was taken since the last step; whether anything was."""
        events, memories = self._new_events, self._new_memories
        self._new_events, self._new_memories = [], []
        if not events and not memories:
            return False
        self._sources(events)
        self._corrections(memories)
        self.candidates.update(sources.shown_to(self.conn, events, memories))
        self.take_memories([m for m in sorted(self.candidates - set(self.memories)) if self._carries(m)], carried=True)
        return True

    # -- rule 1 ----------------------------------------------------------------------------------

    def _sources(self, events: list[int]) -> None:
        marks = placeholders(events)
        stated = {
            row["id"]: row["event_sequence"]
            for row in self.conn.execute(
                f"SELECT id, event_sequence FROM memories WHERE event_sequence IN ({marks})", events
            )
        }
        further = sources.stated_by(self.conn, events)
        for row in self.conn.execute(
            f"SELECT id, event_sequence FROM memories WHERE id IN ({placeholders(further)})", further
        ):
            stated[row["id"]] = row["event_sequence"]
        quotes = sources.quotes(self.conn, list(stated))
        gone = []
        for rowid, own in stated.items():
            if rowid in self.memories:
                continue
            left = [quote for quote in quotes.get(rowid, []) if quote.sequence not in self.events]
            if own not in self.events:
                self.requoted.pop(rowid, None)
            elif left and not self._carries(rowid):
                self.requoted[rowid] = left[0]
            else:
                gone.append(rowid)
        # A correction of a memory whose event stays stood in for it: what it closed stays closed too.
        self.take_memories([r for r in gone if stated[r] not in self.carried_events])
        self.take_memories([r for r in gone if stated[r] in self.carried_events], carried=True)

    # -- rule 2 ----------------------------------------------------------------------------------

    def _corrections(self, memories: list[int]) -> None:
        marks = placeholders(memories)
        corrections = self.conn.execute(
            f"SELECT event_sequence, original_id FROM corrections WHERE original_id IN ({marks})"
            " ORDER BY event_sequence",
            memories,
        ).fetchall()
        self.carried_events.update(row["event_sequence"] for row in corrections if row["original_id"] in self.carried)
        replaced = self.conn.execute(
            f"SELECT e.sequence FROM memories m JOIN events e ON e.sequence = m.event_sequence"
            f" WHERE m.id IN ({marks}) AND e.kind = 'correction' ORDER BY e.sequence",
            memories,
        ).fetchall()
        self.take_events([row["event_sequence"] for row in corrections] + [row["sequence"] for row in replaced])

    # -- rule 3 ----------------------------------------------------------------------------------

    def _carries(self, memory: int) -> bool:
        """Whether the memory holds a word that only its sources that go said (its stating events, and
        what its prompt showed): one of theirs that none of its sources left holds."""
        shown = sources.shown_of(self.conn, memory)
        row = self.conn.execute("SELECT event_sequence FROM memories WHERE id = ?", (memory,)).fetchone()
        stating = [row["event_sequence"], *(q.sequence for q in sources.quotes(self.conn, [memory]).get(memory, []))]
        events = [("event", s) for s in dict.fromkeys([*stating, *shown.events])]
        known = [*events, *(("memory", m) for m in shown.memories)]
        gone = [key for key in known if self._goes(key)]
        if not gone:
            return False
        own = self._text("memory", memory)
        candidates = terms.terms(own) & terms.terms(text for key in gone for text in self._text(*key))
        # A going memory's own phrasing ("The user", "Der Nutzer", "用户") is the extractor's, not a trace of
        # an event: only words the events behind what goes said count (a shown event, a shown memory's
        # event), not those of another event the forget takes (a correction's "the user said so").
        candidates &= self._said(self._behind(gone))
        if not candidates:
            return False
        held = terms.all_terms(text for key in known if not self._goes(key) for text in self._text(*key))
        only = candidates - held
        if not only:
            return False
        words = [w for text in own for w in terms.words(text) if f"{w.index}:{w.term}" in only]
        return not all(self._said_elsewhere(memory, words))

    def _said_elsewhere(self, memory: int, words: list[terms.Word]) -> Iterable[bool]:
        """For each word, whether an event of the memory's scope that stays holds it (the archive's index
        finds it): then it is not only what goes that said it ("said", "prefers": the extractor's phrasing).
        The memory's own corrections do not count: they restate it, and go with it."""
        row = self.conn.execute("SELECT persona_id, project_id FROM memories WHERE id = ?", (memory,)).fetchone()
        scope = Scope(row["persona_id"], row["project_id"])
        own = self.conn.execute("SELECT event_sequence FROM corrections WHERE original_id = ?", (memory,)).fetchall()
        going = set(self.events) | {r["event_sequence"] for r in own}
        return (bool(still_said.holders(self.conn, scope, "event", word, going, 0)) for word in words)

    def _behind(self, gone: list[tuple[str, int]]) -> list[int]:
        """The events that go behind sources that go: the events themselves, and the memories' own events."""
        behind = [rowid for kind, rowid in gone if kind == "event"]
        memories = [rowid for kind, rowid in gone if kind == "memory"]
        rows = self.conn.execute(
            f"SELECT event_sequence FROM memories WHERE id IN ({placeholders(memories)})", memories
        ).fetchall()
        return [s for s in dict.fromkeys([*behind, *(row["event_sequence"] for row in rows)]) if s in self.events]

    def _said(self, sequences: Iterable[int]) -> frozenset[str]:
        """The words of these events (their text, speaker and date), read once per event."""
        for sequence in sequences:
            if sequence not in self._said_by:
                self._said_by[sequence] = terms.terms(self._text("event", sequence))
        return frozenset().union(*(self._said_by[sequence] for sequence in sequences))

    def _goes(self, key: tuple[str, int]) -> bool:
        kind, rowid = key
        return rowid in (self.events if kind == "event" else self.memories)

    def _text(self, kind: str, key: int) -> list[str]:
        """An event's text, speaker and date (what a prompt shows of it), or a memory's content, gist
        and subject; read once."""
        if (kind, key) not in self._texts:
            if kind == "event":
                sql = "SELECT text, source, occurred_at FROM events WHERE sequence = ?"
            else:
                sql = "SELECT content, coalesce(gist, '') AS gist, coalesce(subject, '') AS subject FROM memories"
                sql += " WHERE id = ?"
            row = self.conn.execute(sql, (key,)).fetchone()
            self._texts[(kind, key)] = [] if row is None else [str(value) for value in row.values()]
        return self._texts[(kind, key)]
