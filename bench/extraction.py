"""Extraction with a real small model on a LoCoMo subset: answer quality, cost, and use for recall.

The turns of the first sessions of one LoCoMo conversation are recorded as a host would (as in
bench/conversation_recall.py), first without an extractor: evidence recall@10 of raw events only,
in `fast` and `semantic` mode. Then the local model (scripts/install-local-llm; started on
127.0.0.1 here and stopped at the end) extracts every turn through the background worker
(Worker.drain, the code behind `memlikehuman extract`), and the same questions are asked again:
memories + raw events. Reported: the share of answers that were valid JSON of the right shape, the
share of returned items rejected and why, memories per turn, model seconds per turn.

    python -m bench.extraction [--turns 150] [--conversation 0] [--batch 4] [--minutes 20]
                               [--extract N] [--keep DIR]

`--extract N` extracts exactly the first N turns in both phases (the rest stay raw; no time limit),
so that one by one and batched are compared on the same turns. `--keep DIR` keeps the archives
there; either way the questions whose recall@10 changed are listed with their top ten.

Writes the "extraction" section of docs/benchmarks.md. The data (CC BY-NC 4.0) is read from
../shared/data/locomo10.json and never copied into the repo.
"""

from __future__ import annotations

import argparse
import logging
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench import report
from bench.conversation_recall import DATA, Conversation, Scores, load
from bench.local_llm import LocalModel, installed
from memlikehuman import config
from memlikehuman.engine import Engine
from memlikehuman.lifecycle import extract
from memlikehuman.retrieval.recall import recall

MODES = ("fast", "semantic")
BASE = {"MEMLIKEHUMAN_EMBEDDER": "local", "MEMLIKEHUMAN_CONFIG": "/nonexistent", "MEMLIKEHUMAN_EXTRACTION_WAIT": "0"}
HELD = "held back by bench.extraction --extract"
REASONS = (
    ("quote", "quote does not occur"),
    ("dates", "valid_from"),
    ("limits", "characters long|only the first"),
    ("fields", "is missing or empty|must be one of|must be a string|is not a JSON object|longer than"),
)


def subset(conv: Conversation, turns: int) -> Conversation:
    """The first `turns` turns and the questions whose evidence lies entirely within them."""
    kept = conv.turns[:turns]
    ids = {t.dia_id for t in kept}
    return Conversation(conv.sample_id, kept, [q for q in conv.questions if q.gold <= ids])


def ingest(engine: Engine, conv: Conversation) -> None:
    for turn in conv.turns:
        cues = [{"kind": "photo", "key": f"photo-{turn.dia_id}", "label": turn.caption}] if turn.caption else None
        engine.record(conv.scope, conv.event_id(turn.dia_id), turn.text, "user", turn.speaker,
                      session_id=f"session_{turn.session}", occurred_at=turn.occurred_at, cues=cues)  # fmt: skip


def evidence(engine: Engine, conv: Conversation, mode: str) -> Scores:
    """recall@k of the gold turns: memories count for their source turn, merged with raw hits by score."""
    prefix = f"locomo-{conv.sample_id}-"
    turn_of = {int(r["sequence"]): str(r["event_id"]).removeprefix(prefix)
               for r in engine.db.query("SELECT sequence, event_id FROM events")}  # fmt: skip
    scores = Scores()
    for question in conv.questions:
        started = time.perf_counter()
        result = recall(engine, conv.scope, question.text, limit=10, search_mode=mode)
        seconds = time.perf_counter() - started
        if result.search_mode != mode:
            raise SystemExit(f"recall degraded to {result.search_mode}: {result.warnings}")
        hits = [(hit.score, turn_of[hit.memory.event_sequence]) for hit in result.memories]
        hits += [(hit.score, hit.event.event_id.removeprefix(prefix)) for hit in result.raw_fallback]
        ranked: list[str] = []
        for _, turn in sorted(hits, key=lambda pair: -pair[0]):
            if turn not in ranked:
                ranked.append(turn)
        scores.add(question, ranked, seconds)
    return scores


class Rejections(logging.Handler):
    """Keeps the debug lines extract.check logs for rejected items (the warnings omit the item)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "rejected" in record.getMessage():
            self.lines.append(record.getMessage())


class Tally:
    """What the extraction answers were like."""

    def __init__(self, deadline: float = float("inf")) -> None:
        self.deadline = deadline  # perf_counter time after which no further turn is extracted
        self.states: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()
        self.stored = 0
        self.repeats = 0
        self.seconds: list[float] = []
        self.rejections = Rejections()
        self._last = time.perf_counter()

    def __call__(self, outcome: extract.Outcome) -> bool:
        now = time.perf_counter()
        self.seconds.append(now - self._last)
        self._last = now
        self.states[outcome.state] += 1
        self.stored += len(outcome.memory_ids)
        for warning in outcome.warnings:
            if " rejected: " in warning:
                self.rejected[next((name for name, pattern in REASONS if re.search(pattern, warning)), "other")] += 1
            match = re.search(r"(\d+) item\(s\) repeat", warning)
            if match:
                self.repeats += int(match.group(1))
        done = sum(self.states.values())
        print(f"\rextracting: {done} turns, {self.stored} memories", end="", file=sys.stderr, flush=True)
        return now < self.deadline

    @property
    def returned(self) -> int:
        return self.stored + self.repeats + sum(self.rejected.values())


@dataclass
class Run:
    batch: int
    tally: Tally
    calls: int
    seconds: float


def extract_all(db: Path, conv: Conversation, model: LocalModel, args: argparse.Namespace, batch: int) -> Run:
    """Extract the pending turns of the archive with the worker (in this thread), within args.minutes."""
    env = {**BASE, **model.env(timeout=args.timeout), "MEMLIKEHUMAN_EXTRACTION_BATCH": str(batch)}
    tally = Tally(time.perf_counter() + (float("inf") if args.extract else args.minutes * 60))
    calls_before = model_calls(model)
    logger = logging.getLogger("memlikehuman.extract")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(tally.rejections)
    with Engine(config.load(db, env=env)) as engine:
        started = time.perf_counter()
        engine.worker.drain(conv.scope, tally)
        seconds = time.perf_counter() - started
    logger.removeHandler(tally.rejections)
    print(file=sys.stderr)
    for line in tally.rejections.lines:
        print(f"batch {batch}: {line}", file=sys.stderr)
    return Run(batch, tally, model_calls(model) - calls_before, seconds)


def model_calls(model: LocalModel) -> int:
    """Chat completions the server answered with 200 (its access log), not counting format probes."""
    assert model.log_path is not None
    text = model.log_path.read_text(encoding="utf-8", errors="replace") if model.log_path.exists() else ""
    return len(re.findall(r'"POST /v1/chat/completions HTTP/1.1" 200', text))


def hold_back(engine: Engine, first: int) -> None:
    """Leave only the first `first` turns pending: the others are marked failed until `release`."""
    with engine.db.write() as conn:
        conn.execute(
            "UPDATE events SET extraction_state = 'failed', extraction_error = ? WHERE sequence > ("
            " SELECT sequence FROM events ORDER BY sequence LIMIT 1 OFFSET ?) AND extraction_state = 'pending'",
            (HELD, first - 1),
        )


def release(engine: Engine) -> None:
    """The turns hold_back marked are pending again (raw events, as in the run without memories)."""
    with engine.db.write() as conn:
        conn.execute(
            "UPDATE events SET extraction_state = 'pending', extraction_error = NULL WHERE extraction_error = ?",
            (HELD,),
        )


def run(args: argparse.Namespace) -> str:
    conv = subset(load(args.data, args.conversation + 1)[args.conversation], args.turns)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="extraction-"))
    workdir.mkdir(parents=True, exist_ok=True)
    single, batched = workdir / "single.sqlite3", workdir / "batched.sqlite3"
    with Engine(config.load(single, env={**BASE, "MEMLIKEHUMAN_EXTRACTOR": "none"})) as engine:
        ingest(engine, conv)
        engine.embed_missing()
        raw = {mode: evidence(engine, conv, mode) for mode in MODES}
        if args.extract:
            hold_back(engine, args.extract)
    shutil.copyfile(single, batched)  # the same pending turns and vectors (closed: no WAL left)
    with LocalModel(log_path=workdir / "llm.log") as model:
        runs = [extract_all(single, conv, model, args, 1)]
        if args.batch > 1:
            runs.append(extract_all(batched, conv, model, args, args.batch))
    recalls = {"raw events only": raw}
    for item, path in zip(runs, (single, batched), strict=False):
        with Engine(config.load(path, env={**BASE, "MEMLIKEHUMAN_EXTRACTOR": "none"})) as engine:
            release(engine)
            engine.embed_missing()
            name = "memories + raw events" + (f" (batches of up to {item.batch})" if item.batch > 1 else "")
            recalls[name] = {mode: evidence(engine, conv, mode) for mode in MODES}
            changed(engine, conv, name, raw, recalls[name])
    if not args.keep:
        shutil.rmtree(workdir)
    return render(conv, runs, recalls)


def changed(engine: Engine, conv: Conversation, name: str, raw: dict[str, Scores], now: dict[str, Scores]) -> None:
    """Print the questions whose recall@10 moved against raw events only, with the new top ten."""
    for mode in MODES:
        for i, question in enumerate(conv.questions):
            before, after = raw[mode].recall[10][i], now[mode].recall[10][i]
            if before == after:
                continue
            print(f"{name}, {mode}: R@10 {before:.2f} -> {after:.2f}: {question.text!r} gold {sorted(question.gold)}",
                  file=sys.stderr)  # fmt: skip
            result = recall(engine, conv.scope, question.text, limit=10, search_mode=mode)
            for hit in result.memories:
                print(f"    memory {hit.score:.3f} seq {hit.memory.event_sequence}: {hit.memory.content[:100]!r}",
                      file=sys.stderr)  # fmt: skip
            for raw_hit in result.raw_fallback:
                print(f"    event  {raw_hit.score:.3f} {raw_hit.event.event_id}", file=sys.stderr)


def render(conv: Conversation, runs: list[Run], recalls: dict[str, dict[str, Scores]]) -> str:
    tally = runs[0].tally
    answered = tally.states["complete"] + tally.states["failed"]
    turns = sum(tally.states.values())
    returned = tally.returned

    def share(count: int, total: int) -> str:
        return f"{count / max(total, 1):.1%}"

    quality = [
        ["answers that were valid JSON of the right shape", f"{tally.states['complete']}/{answered}",
         share(tally.states["complete"], answered)],
        ["turns left pending (timeouts, unreachable)", str(tally.states["pending"]),
         share(tally.states["pending"], turns)],
        ["items returned", str(returned), "-"],
        ["items that pass the quote check", str(returned - tally.rejected["quote"]),
         share(returned - tally.rejected["quote"], returned)],
        ["items stored as memories", str(tally.stored), share(tally.stored, returned)],
        ["items not stored again (repeat a current memory)", str(tally.repeats), share(tally.repeats, returned)],
    ]  # fmt: skip
    for reason, _ in (*REASONS, ("other", "")):
        count = tally.rejected[reason]
        quality.append([f"items rejected: {reason}", str(count), share(count, returned)])
    quality += [
        ["memories per turn", f"{tally.stored / max(turns, 1):.2f}", "-"],
        ["model seconds per turn (p50 / p95)",
         f"{report.percentile(tally.seconds, 50):.1f} / {report.percentile(tally.seconds, 95):.1f}", "-"],
    ]  # fmt: skip
    cost = []
    for item in runs:
        t = item.tally
        events = sum(t.states.values())
        cost.append([
            "one event per call" if item.batch == 1 else f"batches of up to {item.batch} short events",
            item.calls, f"{item.calls / max(events, 1):.2f}", f"{item.seconds / max(events, 1):.1f}",
            f"{t.stored / max(events, 1):.2f}", share(t.rejected["quote"], t.returned),
            share(t.states["complete"], t.states["complete"] + t.states["failed"]),
        ])  # fmt: skip
    recall_rows = []
    for mode in MODES:
        for name, scores in recalls.items():
            recall_rows.append([mode, name] + [float(np.mean(scores[mode].recall[k])) for k in (1, 5, 10)])
    sessions = sorted({t.session for t in conv.turns})
    extracted = ", ".join(f"{sum(item.tally.states.values())} (batch {item.batch})" for item in runs)
    minutes = sum(item.seconds for item in runs) / 60
    notes = (
        f"LoCoMo conversation {conv.sample_id}: its first {len(conv.turns)} turns (sessions"
        f" {sessions[0]}-{sessions[-1]}), {len(conv.questions)} questions (categories 1-4) whose"
        " evidence lies in them; recall@k = share of a question's gold turns in the top k",
        "model: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama-cpp-python 0.3.36 server, 2 threads, context 4,096,"
        " JSON mode with the schema as a grammar (the server refuses json_schema); first table: one event per call",
        f"model time: {minutes:.1f} min in all; calls counted in the server's access log (answers with 200)",
        f"turns extracted of {len(conv.turns)}: {extracted} (extraction stops after --minutes, or"
        " after the first --extract turns in both phases; the rest stays raw)",
        "memories + raw: a memory counts for the turn it was extracted from; memories and raw hits"
        " are merged by score; an event leaves raw_fallback where its memories cover what matched, and its"
        " best current memory then takes the event's score (`retrieval/covered.py`)",
    )
    return (
        report.table(["extraction answers", "count", "share"], quality)
        + "\n\n"
        + report.table(
            [
                "extraction",
                "model calls",
                "calls per event",
                "seconds per event",
                "memories per event",
                "items rejected: quote",
                "valid JSON",
            ],
            cost,
        )  # fmt: skip
        + "\n\n"
        + report.table(["mode", "recall over", "R@1", "R@5", "R@10"], recall_rows)
        + "\n\n"
        + "\n".join(f"- {note}" for note in notes)
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="path of locomo10.json")
    parser.add_argument("--conversation", type=int, default=0, help="which conversation (0-9)")
    parser.add_argument("--turns", type=int, default=150, help="how many of its first turns")
    parser.add_argument("--timeout", type=float, default=180.0, help="MEMLIKEHUMAN_TIMEOUT for the model")
    parser.add_argument("--batch", type=int, default=4, help="also extract in batches of up to N (1: skip)")
    parser.add_argument("--minutes", type=float, default=20.0, help="stop extracting (each phase) after this long")
    parser.add_argument("--extract", type=int, default=0, help="extract exactly the first N turns in each phase")
    parser.add_argument("--keep", type=Path, default=None, help="keep the archives in this directory")
    parser.add_argument("--no-doc", action="store_true", help="print only; do not update docs/benchmarks.md")
    args = parser.parse_args(argv)
    if not installed():
        raise SystemExit("no local model: run scripts/install-local-llm first")
    if not args.data.is_file():
        raise SystemExit(f"LoCoMo data not found at {args.data}")
    started = time.perf_counter()
    body = run(args)
    body += f"\n- the whole run took {(time.perf_counter() - started) / 60:.0f} min"
    print(body)
    if not args.no_doc:
        command = f"python -m bench.extraction --turns {args.turns} --conversation {args.conversation}"
        command += f" --batch {args.batch} --minutes {args.minutes:g}"
        command += f" --extract {args.extract}" if args.extract else ""
        report.write_section("extraction", "Extraction with a real small model", command, body)


if __name__ == "__main__":
    main()
