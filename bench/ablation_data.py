"""The three data sets of the ranking ablation (bench/ablation.py), each recorded and embedded once.

- LoCoMo (CC BY-NC 4.0, read from ../shared/data/locomo10.json, never copied): every turn recorded as
  bench/conversation_recall.py records it (the speaker as source, the session as session_id, its
  date, a photo as a `photo` cue with its caption), questions of categories 1-4;
- the coding set: bench/second_look_coding.py's archive (bench/injection_set.py's 24 notes among 400
  reads of this repository's source), the 24 follow-ups;
- the chat set (bench/chat_set.py, written for this bench): recorded like LoCoMo.

Archives live under bench/out/ablation/ (git-ignored) and are reused: building embeds every turn with
the default local model through the reindex path, which is the slow part (~15 min for LoCoMo on 2
cores).
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench import chat_set, second_look_coding
from bench.conversation_recall import CATEGORIES, DATA, ingest, load
from bench.embedder_recall import settings
from memlikehuman.engine import Engine
from memlikehuman.index import reindex
from memlikehuman.index.indexer import count_missing
from memlikehuman.providers.local import DEFAULT_MODEL
from memlikehuman.records import Scope

OUT = Path(__file__).resolve().parent / "out" / "ablation"


@dataclass(frozen=True)
class Item:
    """One question of a set: where it is asked, what answers it, which group and category it counts in."""

    scope: Scope
    text: str
    gold: frozenset[str]  # event IDs
    group: str  # "locomo 1-5", "locomo 6-10", "coding", "chat"
    category: str
    conversation: str  # the fold of cross-validation


@dataclass(frozen=True)
class DataSet:
    name: str
    db: Path
    items: list[Item]


def _progress(label: str):  # type: ignore[no-untyped-def]
    def show(done: int, total: int) -> None:
        print(f"\r{label}: {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    return show


def _embedded(db: Path, model: str) -> None:
    with Engine(settings(db, model)) as engine:
        assert engine.embedder is not None
        if count_missing(engine.db, engine.embedder.model_id):
            reindex.rebuild_vectors(engine.indexer, missing_only=True, progress=_progress(db.name))


def locomo(out: Path = OUT, model: str = DEFAULT_MODEL) -> DataSet:
    conversations = load(DATA, 10)
    db = out / "locomo.sqlite3"
    if not db.exists():
        out.mkdir(parents=True, exist_ok=True)
        with Engine(settings(db, None)) as engine:
            ingest(engine, conversations)
    _embedded(db, model)
    items = []
    for number, conv in enumerate(conversations, 1):
        group = "locomo 1-5" if number <= 5 else "locomo 6-10"
        prefix = f"locomo-{conv.sample_id}-"
        for q in conv.questions:
            gold = frozenset(prefix + g for g in q.gold)
            items.append(Item(conv.scope, q.text, gold, group, CATEGORIES[q.category], conv.sample_id))
    return DataSet("locomo", db, items)


def coding(out: Path = OUT, model: str = DEFAULT_MODEL) -> DataSet:
    db = out / "coding.sqlite3"
    if not db.exists():
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=out) as tmp:
            made = second_look_coding.archive(tmp, model)
            for suffix in ("", "-wal", "-shm"):
                part = made.with_name(made.name + suffix)
                if part.exists():
                    part.rename(db.with_name(db.name + suffix))
    _embedded(db, model)
    items = [
        Item(second_look_coding.SCOPE, question, frozenset([f"note-{fact}"]), "coding", "follow-up", "coding")
        for fact, question in second_look_coding.FOLLOW_UPS
    ]
    return DataSet("coding", db, items)


def chat(out: Path = OUT, model: str = DEFAULT_MODEL) -> DataSet:
    conversations = chat_set.conversations()
    db = out / "chat.sqlite3"
    if not db.exists():
        out.mkdir(parents=True, exist_ok=True)
        with Engine(settings(db, None)) as engine:
            ingest(engine, conversations)  # chat_set.Conversation has the shape ingest reads
    _embedded(db, model)
    items = [
        Item(conv.scope, q.text, frozenset(conv.event_id(g) for g in q.gold), "chat", q.category, conv.name)
        for conv in conversations
        for q in conv.questions
    ]
    return DataSet("chat", db, items)


if __name__ == "__main__":
    for build in (locomo, coding, chat):
        if len(sys.argv) == 1 or build.__name__ in sys.argv[1:]:
            found = build()
            print(f"{found.name}: {len(found.items)} questions in {found.db}", file=sys.stderr)
