"""BEAM (100K tier): long user-assistant working sessions, recalled through the engine, beside two floors.

BEAM (ICLR 2026, arXiv:2510.27246) is what the field reports for long-term memory; its conversations
look like an agent's working sessions. Every message is recorded as a host would record it (role
user/assistant, the batch as the session, the batch's date, a message over 200,000 characters in parts
as the hooks store it), one scope per conversation, vectors made by the engine's own indexer. Then each
of the 355 questions with evidence is asked of its own conversation, and scored as the data's README
says: a hit is a returned record whose event is a gold message.

- R@1/5/10: the share of gold messages among the first k distinct messages returned; any@10;
- 2k: the share of gold messages whose returned text starts within the first 2,000 tokens (o200k) of
  everything returned, in order;
- newer: knowledge_update questions whose updated message ranks above the original (within the 10);
  both: contradiction_resolution questions with both statements within the 10;
- resume: the share of gold messages named in `session_resume(query, token_budget=2000)`;
- hook: the share of gold messages among what the prompt hook would inject for the question;
- ms p50/p95 per query (recall with limit 10).
Floors in the same run: plain FTS5 bm25 over whole messages (stopwords out, porter), and plain cosine
over the same embedder's vector of each message (the indexer's, read from the archive: the message's
first 2,000 characters, as the embedder reads, after its speaker and the previous turn's tail).
`--baseline REV` runs the same questions on the engine of another revision (its own archive, the
package extracted from git into the work directory), and `--locomo N` times fast recall over the first
N LoCoMo conversations in the same run, for the per-query cost on short chat turns; it also times both
with each conversation alone in an archive of its own (one project's archive; the shared one holds all).

    python -m bench.beam --baseline 598ea20 --locomo 2      # ~60-90 min on 2 cores; writes docs/benchmarks.md
    python -m bench.beam --conversations 1-10 --modes fast --archive /tmp/beam   # a tuning half, kept

Conversations 1-10 and 11-20 are two halves: choose on one, report on the other. The data is read from
../shared/data/beam-100K and never copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from io import BytesIO
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "beam-100K"
LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
MAX_CHARS = 200_000
PART_ROOM = 100
BUDGET = 2_000
KS = (1, 5, 10)
REPORT_HALF = range(11, 21)  # conversations nothing was chosen on
_MARK = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Message:
    id: int
    role: str
    text: str
    session: int
    occurred_at: str


@dataclass(frozen=True)
class Question:
    ability: str
    text: str
    gold: tuple[int, ...]
    parts: dict[str, tuple[int, ...]] = field(default_factory=dict)  # first/second, original/updated


@dataclass
class Conversation:
    n: int
    messages: list[Message]
    questions: list[Question]

    @property
    def project(self) -> str:
        return f"beam-{self.n}"

    def event_id(self, message: int, part: int = 0) -> str:
        return f"beam{self.n}-{message}" + (f".p{part}" if part else "")


def message_of(event_id: str) -> int:
    """The message a recorded event stands for (a part names its message)."""
    return int(event_id.split("-", 1)[1].split(".")[0])


# -- data ------------------------------------------------------------------------------------------


def load(root: Path, numbers: Iterable[int]) -> list[Conversation]:
    return [_conversation(root / str(n), n) for n in numbers]


def _conversation(folder: Path, n: int) -> Conversation:
    batches = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
    messages: list[Message] = []
    date = "2024-01-01"
    for batch in batches:
        pairs = batch["turns"]
        anchor = batch.get("time_anchor") or next(
            (m["time_anchor"] for p in pairs for m in p if m.get("time_anchor")), None
        )
        if anchor:
            date = datetime.strptime(anchor, "%B-%d-%Y").date().isoformat()
        for m in (m for pair in pairs for m in pair):
            text = _MARK.sub("", m["content"]) if m["role"] == "user" else m["content"]
            # One minute apart, so the order of a session is its order in time too.
            minute = len(messages)
            at = f"{date}T{9 + minute // 60 % 12:02d}:{minute % 60:02d}:00Z"
            messages.append(Message(int(m["id"]), m["role"], text, int(batch["batch_number"]), at))
    probing = json.loads((folder / "probing_questions.json").read_text(encoding="utf-8"))
    questions = [q for ability, items in probing.items() for q in _questions(ability, items)]
    return Conversation(n, messages, questions)


def _questions(ability: str, items: Sequence[dict[str, Any]]) -> Iterable[Question]:
    for item in items:
        evidence = item.get("source_chat_ids")
        if not evidence:
            continue
        parts = {k: tuple(_ids(v)) for k, v in evidence.items()} if isinstance(evidence, dict) else {}
        gold = tuple(sorted({i for v in parts.values() for i in v} if parts else set(_ids(evidence))))
        if gold:
            yield Question(ability, item["question"], gold, parts)


def _ids(value: Any) -> Iterable[int]:
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, list):
            yield from _ids(item)
        else:
            yield int(item)


def parts(text: str) -> list[str]:
    """A message as the hooks store it: whole, or parts of at most 200,000 characters with a header each."""
    if len(text) <= MAX_CHARS:
        return [text]
    size, chunks, start = MAX_CHARS - PART_ROOM, [], 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            cut = text.rfind("\n", start + size // 2, end)
            end = cut + 1 if cut > start else end
        chunks.append(text[start:end])
        start = end
    return [f"[part {i} of {len(chunks)} of one {len(text):,}-character message]\n{c}" for i, c in enumerate(chunks, 1)]


# -- the system under test (also run on a baseline revision: only long-standing engine calls) -------


def measure(db: Path, convs: list[Conversation], modes: Sequence[str], locomo: int) -> dict[str, Any]:
    """Record, embed and ask every question in every mode; rankings and timings as plain data."""
    from memlikehuman import config
    from memlikehuman.engine import Engine
    from memlikehuman.records import Scope

    settings = config.load(
        db,
        env={"MEMLIKEHUMAN_EMBEDDER": "local", "MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"},
    )
    out: dict[str, Any] = {"notes": [], "modes": {}}
    with Engine(settings) as engine:
        if not engine.db.scalar("SELECT count(*) FROM events"):
            started = time.perf_counter()
            for conv in convs:
                for m in conv.messages:
                    for i, text in enumerate(parts(m.text), 1 if len(m.text) > MAX_CHARS else 0):
                        engine.record(Scope("beam", conv.project), conv.event_id(m.id, i), text, m.role, m.role,
                                      session_id=f"session-{m.session}", occurred_at=m.occurred_at)  # fmt: skip
            out["notes"].append(
                f"recorded {sum(len(c.messages) for c in convs):,} messages in {time.perf_counter() - started:.0f} s"
            )
        if "fast" not in modes or len(modes) > 1:
            started = time.perf_counter()
            done = engine.embed_missing(_progress("embedding"))
            out["notes"].append(f"embedded {done:,} missing vectors in {time.perf_counter() - started:.0f} s")
        for mode in modes:
            out["modes"][mode] = [_ask(engine, Scope("beam", conv.project), conv, mode) for conv in convs]
        if locomo:
            out["locomo_ms"] = _locomo_fast(engine, locomo)
    if locomo:
        out["alone_ms"] = _alone_fast(db.parent / "alone", convs, locomo)
    return out


def _ask(engine: Any, scope: Any, conv: Conversation, mode: str) -> list[dict[str, Any]]:
    answers = []
    for q in conv.questions:
        started = time.perf_counter()
        result = engine.recall(scope, q.text, limit=10, search_mode=mode)
        seconds = time.perf_counter() - started
        if result.search_mode != mode:
            raise SystemExit(f"recall degraded to {result.search_mode}: {result.warnings}")
        hits = [(h.memory.event_id, h.memory.content) for h in result.memories]
        hits += [(h.event.event_id, h.excerpt) for h in result.raw_fallback]
        resumed = engine.resume(scope, query=q.text, token_budget=BUDGET, target_model="gpt-4o").context
        injected = engine.inject(scope, q.text, mode=mode)
        named = {message_of(e) for e in re.findall(r"beam\d+-\d+(?:\.p\d+)?", resumed)}
        answers.append({
            "hits": [[message_of(e), text] for e, text in hits],
            "resume": sorted(named),
            "hook": [message_of(i.record_id) for i in injected if i.record_id.startswith("beam")],
            "seconds": seconds,
        })  # fmt: skip
    return answers


def _locomo_fast(engine: Any, count: int) -> list[float]:
    """Seconds per fast recall of LoCoMo's questions (categories 1-4) over its first conversations."""
    from bench.conversation_recall import ingest
    from bench.conversation_recall import load as load_locomo

    conversations = load_locomo(LOCOMO, count)
    ingest(engine, conversations)
    seconds = []
    for conv in conversations:
        for question in conv.questions:
            started = time.perf_counter()
            engine.recall(conv.scope, question.text, limit=10, search_mode="fast")
            seconds.append(time.perf_counter() - started)
    return seconds


def _alone_fast(folder: Path, convs: list[Conversation], locomo: int) -> dict[str, list[float]]:
    """Seconds per fast recall with each conversation alone in an archive of its own, as one user's one
    project would be (the shared archive above holds every conversation, each a project of its own)."""
    from bench.conversation_recall import ingest
    from bench.conversation_recall import load as load_locomo
    from memlikehuman import config
    from memlikehuman.engine import Engine
    from memlikehuman.records import Scope

    env = {"MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[float]] = {"beam": [], "locomo": []}
    for conv in convs:
        with Engine(config.load(folder / f"beam-{conv.n}.sqlite3", env=env)) as engine:
            scope = Scope("beam", conv.project)
            if not engine.db.scalar("SELECT count(*) FROM events"):
                for m in conv.messages:
                    for i, text in enumerate(parts(m.text), 1 if len(m.text) > MAX_CHARS else 0):
                        engine.record(scope, conv.event_id(m.id, i), text, m.role, m.role,
                                      session_id=f"session-{m.session}", occurred_at=m.occurred_at)  # fmt: skip
            out["beam"] += _timed(engine, [(scope, q.text) for q in conv.questions])
    for n, conv in enumerate(load_locomo(LOCOMO, locomo)):
        with Engine(config.load(folder / f"locomo-{n}.sqlite3", env=env)) as engine:
            if not engine.db.scalar("SELECT count(*) FROM events"):
                ingest(engine, [conv])
            out["locomo"] += _timed(engine, [(conv.scope, q.text) for q in conv.questions])
    return out


def _timed(engine: Any, asked: Sequence[tuple[Any, str]]) -> list[float]:
    """Seconds per fast recall of each question, after the first few asked once to warm the caches."""
    for scope, text in asked[:5]:
        engine.recall(scope, text, limit=10, search_mode="fast")
    seconds = []
    for scope, text in asked:
        started = time.perf_counter()
        engine.recall(scope, text, limit=10, search_mode="fast")
        seconds.append(time.perf_counter() - started)
    return seconds


def _progress(label: str) -> Any:
    def show(done: int, total: int) -> None:
        print(f"\r{label}: {done:,}/{total:,}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    return show


# -- floors ------------------------------------------------------------------------------------------


def bm25_floor(conv: Conversation) -> list[list[int]]:
    """Plain FTS5 bm25 over whole messages: the OR of the question's words without stopwords."""
    from memlikehuman.retrieval.search import terms

    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE m USING fts5(t, tokenize='porter unicode61 remove_diacritics 2')")
    db.executemany("INSERT INTO m(rowid, t) VALUES (?, ?)", [(m.id, m.text) for m in conv.messages])
    ranked = []
    for q in conv.questions:
        match = " OR ".join(f'"{w}"' for w in terms(q.text))
        rows = db.execute("SELECT rowid FROM m WHERE m MATCH ? ORDER BY bm25(m) LIMIT 10", (match,)) if match else []
        ranked.append([int(r[0]) for r in rows])
    return ranked


def cosine_floor(conv: Conversation, archive: Path) -> list[list[int]]:
    """Plain cosine between the question and each message's vector: the vectors the engine's indexer made
    of the messages (the default local embedder), read from the archive; nothing else of the ranking."""
    import numpy as np

    from memlikehuman.providers.local import LocalEmbedder

    embedder = LocalEmbedder()
    db = sqlite3.connect(f"file:{archive}?mode=ro", uri=True)
    rows = db.execute(
        "SELECT e.event_id, v.vector FROM events e JOIN event_vectors v ON v.event_sequence = e.sequence"
        " WHERE e.project_id = ? AND v.model = ?",
        (conv.project, embedder.model_id),
    ).fetchall()
    db.close()
    ids = np.asarray([message_of(event_id) for event_id, _ in rows])
    vectors = np.stack([np.frombuffer(blob, dtype="<f4") for _, blob in rows])
    queries = embedder.embed([q.text for q in conv.questions], "query")
    return [list(dict.fromkeys(ids[np.argsort(-(vectors @ query))[:20]].tolist()))[:10] for query in queries]


# -- scoring -------------------------------------------------------------------------------------------


@dataclass
class Score:
    """One system's scores, per ability and overall."""

    rows: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)

    def add(self, ability: str, name: str, value: float) -> None:
        for key in (ability, "all"):
            self.rows.setdefault(key, {}).setdefault(name, []).append(value)

    def mean(self, ability: str, name: str) -> float | None:
        values = self.rows.get(ability, {}).get(name)
        return statistics.fmean(values) if values else None


def score(convs: list[Conversation], answers: list[list[dict[str, Any]]], count: Any) -> Score:
    """Scores of a system's answers (one list per conversation, one item per question)."""
    out = Score()
    for conv, found in zip(convs, answers, strict=True):
        for q, a in zip(conv.questions, found, strict=True):
            ranked = list(dict.fromkeys(m for m, _ in a["hits"]))
            gold = set(q.gold)
            for k in KS:
                out.add(q.ability, f"R@{k}", len(gold & set(ranked[:k])) / len(gold))
            out.add(q.ability, "any@10", float(bool(gold & set(ranked[:10]))))
            out.add(q.ability, "2k", len(gold & _within(a["hits"], count)) / len(gold))
            if a.get("resume") is not None:
                out.add(q.ability, "resume", len(gold & set(a["resume"])) / len(gold))
                out.add(q.ability, "hook", len(gold & set(a["hook"])) / len(gold))
            if q.ability == "knowledge_update":
                out.add(q.ability, "newer", float(_newer_first(ranked[:10], q.parts)))
            if q.ability == "contradiction_resolution":
                both = all(set(v) & set(ranked[:10]) for v in q.parts.values())
                out.add(q.ability, "both", float(both))
            if "seconds" in a:
                out.seconds.append(a["seconds"])
    return out


def _within(hits: Sequence[Sequence[Any]], count: Any) -> set[int]:
    """The messages whose returned text starts within the first BUDGET tokens of all that is returned."""
    used, inside = 0, set()
    for message, text in hits:
        if used >= BUDGET:
            break
        inside.add(message)
        used += count(text)
    return inside


def _newer_first(ranked: list[int], parts: dict[str, tuple[int, ...]]) -> bool:
    place = {m: i for i, m in enumerate(ranked)}
    new = min((place.get(m, 99) for m in parts.get("updated_info", ())), default=99)
    old = min((place.get(m, 99) for m in parts.get("original_info", ())), default=99)
    return new < old


# -- the run -------------------------------------------------------------------------------------------

ABILITIES = (
    "information_extraction", "multi_session_reasoning", "knowledge_update", "temporal_reasoning",
    "contradiction_resolution", "preference_following", "instruction_following", "event_ordering", "summarization",
)  # fmt: skip


def render(systems: dict[str, Score]) -> str:
    from bench.report import percentile, table

    def cell(value: float | None) -> str:
        return "" if value is None else f"{value:.3f}"

    head = ["system", "R@1", "R@5", "R@10", "any@10", "2k", "newer", "both", "resume", "hook", "ms p50", "ms p95"]
    rows = []
    for name, s in systems.items():
        ms = [x * 1000 for x in s.seconds]
        timing = [f"{percentile(ms, 50):.1f}", f"{percentile(ms, 95):.1f}"] if ms else ["", ""]
        rows.append([name, *(cell(s.mean("all", k)) for k in ("R@1", "R@5", "R@10", "any@10", "2k")),
                     cell(s.mean("knowledge_update", "newer")), cell(s.mean("contradiction_resolution", "both")),
                     cell(s.mean("all", "resume")), cell(s.mean("all", "hook")), *timing])  # fmt: skip
    overall = table(head, rows)
    by_ability = table(
        ["system", *(a.replace("_", " ") for a in ABILITIES)],
        [[name, *(cell(s.mean(a, "R@10")) for a in ABILITIES)] for name, s in systems.items()],
    )
    return f"{overall}\n\nR@10 per ability:\n\n{by_ability}"


def _baseline(rev: str, work: Path, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The same measurement on another revision's package, in a process of its own."""
    src = work / f"src-{rev}"
    if not src.exists():
        archive = subprocess.run(["git", "archive", rev, "memlikehuman"], cwd=REPO, check=True, capture_output=True)
        with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
            tar.extractall(src, filter="data")
    commit = subprocess.run(["git", "rev-parse", "--short", rev], cwd=REPO, check=True, capture_output=True, text=True)
    result = work / f"answers-{rev}-{args.conversations}-{'-'.join(args.modes)}.json"
    if result.exists():  # measured before in this work directory (--archive): the same revision's answers
        return commit.stdout.strip(), json.loads(result.read_text())
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{REPO}"}
    command = [sys.executable, "-m", "bench.beam", "--measure-only", str(result), "--archive", str(work / rev),
               "--conversations", args.conversations, "--modes", *args.modes, "--locomo", str(args.locomo)]  # fmt: skip
    subprocess.run(command, cwd=work, env=env, check=True)
    return commit.stdout.strip(), json.loads(result.read_text())


def _numbers(spec: str) -> list[int]:
    first, _, last = spec.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", default="1-20", help="e.g. 1-10 (the tuning half) or 11-20")
    parser.add_argument("--modes", nargs="+", default=["fast", "semantic"], choices=("fast", "semantic", "deep"))
    parser.add_argument("--baseline", default=None, help="also measure this git revision (e.g. 598ea20)")
    parser.add_argument("--locomo", type=int, default=0, help="time fast recall on this many LoCoMo conversations")
    parser.add_argument("--archive", default=None, help="keep the archive (and the floors' vectors) in this folder")
    parser.add_argument("--no-floors", action="store_true")
    parser.add_argument("--no-write", action="store_true", help="print, do not write docs/benchmarks.md")
    parser.add_argument("--measure-only", default=None, help=argparse.SUPPRESS)  # the baseline's process
    args = parser.parse_args(argv)
    convs = load(args.data, _numbers(args.conversations))
    work = Path(args.archive) if args.archive else Path(tempfile.mkdtemp(prefix="beam-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.measure_only:
        Path(args.measure_only).write_text(json.dumps(measure(work / "beam.sqlite3", convs, args.modes, args.locomo)))
        return
    from bench import report
    from memlikehuman.sessions.tokens import counter_for

    count = counter_for("gpt-4o").count
    answered: Answers = {}
    notes: list[str] = []
    baseline = _baseline(args.baseline, work, args) if args.baseline else None
    ours = measure(work / "beam.sqlite3", convs, args.modes, args.locomo)
    for label, measured in [(f"at {baseline[0]} (before)", baseline[1])] if baseline else []:
        _add(answered, notes, label, measured)
    _add(answered, notes, f"this checkout ({report.commit()})", ours)
    if not args.no_floors:
        answered["floor: FTS5 bm25 over messages"] = _as_answers(convs, map(bm25_floor, convs))
        cosine = (cosine_floor(conv, work / "beam.sqlite3") for conv in convs)
        answered["floor: cosine over message vectors"] = _as_answers(convs, cosine)
    body = _tables(convs, answered, count, args.conversations)
    held_out = [i for i, conv in enumerate(convs) if conv.n in REPORT_HALF]
    if 0 < len(held_out) < len(convs):
        half = [convs[i] for i in held_out]
        chosen = {name: [answers[i] for i in held_out] for name, answers in answered.items()}
        body += "\n\nThe half nothing was chosen on (the ranking's rules were chosen on conversations 1-10):\n\n"
        body += _tables(half, chosen, count, "11-20")
    body += "\n\n" + "\n".join(f"- {note}" for note in notes)
    print(body)
    if not args.no_write:
        command = "python -m bench.beam" + (f" --baseline {args.baseline}" if args.baseline else "")
        command += f" --locomo {args.locomo}" if args.locomo else ""
        report.write_section("beam", "BEAM 100K: recall of long working sessions", command, body)


Answers = dict[str, list[list[dict[str, Any]]]]  # per system, per conversation, per question


def _tables(convs: list[Conversation], answered: Answers, count: Any, spec: str) -> str:
    systems = {name: score(convs, answers, count) for name, answers in answered.items()}
    n_questions = sum(len(c.questions) for c in convs)
    return f"Conversations {spec} ({n_questions} questions with evidence).\n\n{render(systems)}"


def _add(
    answered: dict[str, list[list[dict[str, Any]]]], notes: list[str], label: str, measured: dict[str, Any]
) -> None:
    for mode, answers in measured["modes"].items():
        answered[f"{label}, {mode}"] = answers
    notes.extend(f"{label}: {note}" for note in measured["notes"])
    if measured.get("locomo_ms"):
        ms = statistics.median(measured["locomo_ms"]) * 1000
        fast = [a["seconds"] for conv in measured["modes"].get("fast", []) for a in conv]
        ratio = f"; BEAM fast p50 {statistics.median(fast) * 1000 / ms:.2f}x that in the same run" if fast else ""
        notes.append(f"{label}: LoCoMo fast recall p50 {ms:.1f} ms over {len(measured['locomo_ms'])} questions{ratio}")
    alone = measured.get("alone_ms")
    if alone and alone["beam"] and alone["locomo"]:
        beam, locomo = (statistics.median(alone[k]) * 1000 for k in ("beam", "locomo"))
        notes.append(
            f"{label}: each conversation alone in an archive of its own: BEAM fast p50 {beam:.1f} ms, LoCoMo"
            f" {locomo:.1f} ms, {beam / locomo:.2f}x"
        )


def _as_answers(convs: list[Conversation], rankings: Iterable[list[list[int]]]) -> list[list[dict[str, Any]]]:
    """A floor's rankings as answers: each message shown whole (its first 2,000 characters)."""
    out = []
    for conv, ranked in zip(convs, rankings, strict=True):
        text = {m.id: m.text[:2000] for m in conv.messages}
        out.append([{"hits": [[m, text[m]] for m in r]} for r in ranked])
    return out


if __name__ == "__main__":
    main()
