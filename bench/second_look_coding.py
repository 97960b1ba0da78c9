"""The second look in a coding archive: short notes of a user among long file reads.

LoCoMo's turns are at most 454 characters; a coding agent's archive also holds tool output thousands of
characters long. The notes and their follow-up questions are bench/injection_set.py's (written for it);
the file reads are this repository's own source (`memlikehuman/**/*.py`, up to four reads of 1,500
characters a file, 400 in all), recorded as `tool` events spread over the notes' sessions. Each
follow-up is asked in `semantic` mode; the rank of the note that answers it gives R@1, R@5 and MRR
(over the top 10: a note outside it counts 0).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from bench.embedder_recall import settings
from bench.injection_set import ACKNOWLEDGEMENTS, FACTS, FOLLOW_UPS
from memlikehuman.engine import Engine
from memlikehuman.index import reindex
from memlikehuman.records import Scope
from memlikehuman.retrieval.ranking import Tuning
from memlikehuman.retrieval.recall import recall

SCOPE = Scope("coder", "repo")
ROOT = Path(__file__).resolve().parent.parent
READ, READS_PER_FILE, READS = 1500, 4, 400
MISSED = 99  # stands for the rank of a note outside the top 10
NOTE = (
    "Coding archive: bench/injection_set.py's 24 notes (each with a short acknowledgement) and 400 reads of"
    " 1,500 characters of this repository's memlikehuman/ source recorded as tool events; each of the 24"
    " follow-up questions asked in semantic mode; R@k and MRR of the note that answers it."
)


def file_reads() -> list[tuple[str, str]]:
    reads = []
    for path in sorted((ROOT / "memlikehuman").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for start in range(0, min(len(text), READ * READS_PER_FILE), READ):
            reads.append((path.name, text[start : start + READ]))
    return reads[:READS]


def archive(directory: str, model: str) -> Path:
    """The notes, their acknowledgements and the file reads, embedded through the reindex path."""
    db = Path(directory) / "coding.sqlite3"
    sessions = len(FACTS)
    with Engine(settings(db, None)) as engine:
        for i, fact in enumerate(FACTS):
            engine.record(SCOPE, f"note-{i}", fact, "user", "user", session_id=f"s{i}")
            reply = ACKNOWLEDGEMENTS[i % len(ACKNOWLEDGEMENTS)]
            engine.record(SCOPE, f"ack-{i}", reply, "assistant", "assistant", session_id=f"s{i}")
        for j, (name, text) in enumerate(file_reads()):
            read = f"Read {name}:\n{text}"
            engine.record(SCOPE, f"read-{j}", read, "tool", "claude-code", session_id=f"s{j % sessions}")
    with Engine(settings(db, model)) as engine:
        reindex.rebuild_vectors(engine.indexer, missing_only=False)
    return db


def ranks(db: Path, model: str, tuning: Tuning) -> list[int]:
    out = []
    with Engine(settings(db, model)) as engine:
        for fact, question in FOLLOW_UPS:
            result = recall(engine, SCOPE, question, limit=10, search_mode="semantic", tuning=tuning)
            ids = [hit.event.event_id for hit in result.raw_fallback]
            out.append(ids.index(f"note-{fact}") + 1 if f"note-{fact}" in ids else MISSED)
    return out


def row(name: str, found: Sequence[int]) -> list[object]:
    n = len(found)
    return [
        name,
        f"{sum(r == 1 for r in found) / n:.3f}",
        f"{sum(r <= 5 for r in found) / n:.3f}",
        f"{sum(1 / r for r in found if r != MISSED) / n:.3f}",
        sum(r == MISSED for r in found),
    ]


def rows(directory: str, model: str, variants: Sequence[tuple[str, Tuning]]) -> list[list[object]]:
    db = archive(directory, model)
    return [row(name, ranks(db, model, tuning)) for name, tuning in variants]


def variants(default: Tuning) -> list[tuple[str, Tuning]]:
    return [
        ("semantic, no second look", dataclasses.replace(default, second_look=0)),
        ("semantic, length up to 1,000 characters (before)", dataclasses.replace(default, second_look_length_cap=1000)),
        (f"semantic, up to {default.second_look_length_cap} (now)", default),
    ]
