"""A realistic chat set for held-out recall: messaging between 2-4 people over weeks (bench/chats/*.txt).

How it was made: written by hand for MemLikeHuman's ranking ablation (issue "Ranking that earns its
constants", 2026-12-05), original text, no data set copied or paraphrased. Each file is one group chat
of 2-4 people over three to four weeks: short turns, typos and slang, photos shared as captions (the
caption is what recall sees, as with LoCoMo's `blip_caption`), small talk between the facts. The
questions are asked the way a person would ask later, mostly in other words than the evidence: a
category for an instance ("beauty treatments" / "chopping it all off"), a judgement for behaviour ("is
Jess reliable?" / "sorry running late again"), facts spread over several sessions, dates asked of
what was said on a day. The set is used held out only: no constant of the ranking was fitted on it.

Format of a file: `== YYYY-MM-DD HH:MM` opens a session; `Name: text` is a turn; `[photo: caption]`
in a turn is a shared photo (taken out of the text, kept as its caption); `{a,b}` at the end of a
turn labels it as evidence; `? category | question | labels` asks a question whose gold turns are
every turn with one of the labels. Lines starting with `#` are comments. Turn IDs are `D<session>:<n>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from bench.conversation_recall import Turn  # the same turns as LoCoMo's, recorded by the same ingest
from memlikehuman.records import Scope

DIRECTORY = Path(__file__).resolve().parent / "chats"
PERSONA = "chat"
CATEGORIES = ("instance", "judgement", "multi-session", "temporal", "direct")
_LABELS = re.compile(r"\s*\{([\w,]+)\}\s*$")
_PHOTO = re.compile(r"\s*\[photo: ([^\]]+)\]")


@dataclass(frozen=True)
class Question:
    text: str
    category: str
    gold: frozenset[str]


@dataclass
class Conversation:
    name: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    @property
    def scope(self) -> Scope:
        return Scope(PERSONA, self.name)

    def event_id(self, turn_id: str) -> str:
        return f"chat-{self.name}-{turn_id}"


def parse(name: str, text: str) -> Conversation:
    """One conversation from its file's text. Raises ValueError on a malformed line or an unknown label."""
    conv = Conversation(name)
    labelled: dict[str, set[str]] = {}
    session, start, n = 0, datetime(2000, 1, 1), 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("== "):
            session, n = session + 1, 0
            start = datetime.strptime(line[3:], "%Y-%m-%d %H:%M")
            continue
        if line.startswith("? "):
            category, question, labels = (part.strip() for part in line[2:].split("|"))
            if category not in CATEGORIES:
                raise ValueError(f"{name}:{number}: unknown category {category!r}")
            gold: set[str] = set()
            for label in labels.split():
                if label not in labelled:
                    raise ValueError(f"{name}:{number}: no turn is labelled {label!r}")
                gold |= labelled[label]
            conv.questions.append(Question(question, category, frozenset(gold)))
            continue
        speaker, _, said = line.partition(": ")
        if not said or not session:
            raise ValueError(f"{name}:{number}: not a turn: {line!r}")
        n += 1
        turn_id = f"D{session}:{n}"
        found = _LABELS.search(said)
        if found:
            for label in found.group(1).split(","):
                labelled.setdefault(label, set()).add(turn_id)
            said = said[: found.start()]
        photo = _PHOTO.search(said)
        caption = photo.group(1) if photo else None
        if photo:
            said = (said[: photo.start()] + said[photo.end() :]).strip() or "[photo]"
        moment = (start + timedelta(minutes=n)).isoformat() + "+00:00"
        conv.turns.append(Turn(turn_id, speaker, said.strip(), caption, session, moment))
    return conv


def conversations(directory: Path = DIRECTORY) -> list[Conversation]:
    """Every conversation of the set, in file-name order."""
    return [parse(path.stem, path.read_text(encoding="utf-8")) for path in sorted(directory.glob("*.txt"))]


if __name__ == "__main__":
    for conv in conversations():
        people = sorted({t.speaker for t in conv.turns})
        sessions = len({t.session for t in conv.turns})
        days = (
            datetime.fromisoformat(conv.turns[-1].occurred_at) - datetime.fromisoformat(conv.turns[0].occurred_at)
        ).days
        photos = sum(t.caption is not None for t in conv.turns)
        print(
            f"{conv.name}: {len(conv.turns)} turns, {sessions} sessions over {days} days, {len(people)} people"
            f" {people}, {photos} photos, {len(conv.questions)} questions"
        )
