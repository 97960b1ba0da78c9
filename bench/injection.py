"""What the prompt hook injects: hit@injected, size and noise over LoCoMo and a coding-session set.

Run: python -m bench.injection [--conversations 10] [--archive DIR]
Writes the "injection" section of docs/benchmarks.md.

Every LoCoMo turn is recorded through the hooks' own recording path (hosts.hook.record: the first
speaker as `user`, the second as `assistant`, the speaker's name as the source, the session's date),
one scope per conversation; the coding set (bench/injection_set.py) in a scope of its own. Vectors
are made once (the archive can be kept with --archive). Then:
1. tuning, in-process on conversations 1-5 and the coding set's first half: every question's
   candidates with their coverage and cosine (injection.choose with an open gate), and the share of
   hits and of noise for each coverage floor and lead (step; 9.0: no item passes by meaning);
2. the report, over the real `memlikehuman hook claude-code` command on conversations 6-10 and the
   coding set's second half, each question a UserPromptSubmit prompt of a session of its own: once
   with no server running (fast, in the hook) and once with `memlikehuman serve` running on the
   archive (semantic, over the socket). Each question's recorded prompt is forgotten after its run,
   so no question is injected for a later one. Hook wall time beside `python -c pass`.
Per category: hit@injected (a gold evidence turn among the injected items), items and characters per
prompt; for LoCoMo's adversarial questions (category 5, no answer in the conversation) and the
unrelated coding prompts, the share that got anything injected.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import injection_sessions, injection_set  # noqa: E402
from bench.conversation_recall import DATA, _evidence, load  # noqa: E402
from bench.hooks import ROOT, pip_installed  # noqa: E402
from bench.report import percentile, table, write_section  # noqa: E402
from memlikehuman import config  # noqa: E402
from memlikehuman.engine import Engine  # noqa: E402
from memlikehuman.hosts import channel, prompt_context, state  # noqa: E402
from memlikehuman.hosts.hook import event_id, record  # noqa: E402
from memlikehuman.records import Scope  # noqa: E402
from memlikehuman.retrieval.injection import Gate, passing  # noqa: E402

SCRIPT = Path(sys.executable).with_name("memlikehuman")
HOST = "claude-code"
PERSONA = "locomo"
CODING = Scope("default", "coding")
ENV = {"MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "no answer"}
OPEN = {"items": 15, "chars": 10**6, "coverage": 0.0, "step": 0.0}  # every candidate passes
FAST_GRID = [(c, 9.0) for c in (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)]
SEMANTIC_GRID = [(c, s) for c in (0.25, 0.3) for s in (9.0, 0.0, 0.01, 0.015, 0.02, 0.03)]


@dataclass(frozen=True)
class Question:
    scope: Scope
    text: str
    group: str  # a LoCoMo category name, "follow-up" or "unrelated"
    gold: frozenset[str]  # event IDs; empty: nothing should be injected


@dataclass
class Tally:
    hits: list[bool] = field(default_factory=list)
    items: list[int] = field(default_factory=list)
    chars: list[int] = field(default_factory=list)

    def add(self, question: Question, injected: list[str], chars: int) -> None:
        self.hits.append(bool(set(injected) & question.gold) if question.gold else bool(injected))
        self.items.append(len(injected))
        self.chars.append(chars)


# -- the archive ---------------------------------------------------------------------------------


def build(engine: Engine, conversations: int) -> tuple[list[Question], list[Question], list[Question]]:
    """Record everything (unless recorded before); the LoCoMo questions and the coding set's (tune, report)."""
    fresh = not engine.db.scalar("SELECT count(*) FROM events")
    raw = json.loads(DATA.read_text(encoding="utf-8"))
    questions: list[Question] = []
    for conv, item in zip(load(DATA, conversations), raw, strict=False):
        scope = Scope(PERSONA, conv.sample_id)
        first = conv.turns[0].speaker
        ids = {}
        for turn in conv.turns:
            role = "user" if turn.speaker == first else "assistant"
            session = f"{conv.sample_id}-{turn.session}"
            ids[turn.dia_id] = event_id(HOST, session, role, turn.text)
            if fresh:
                record(engine, scope, HOST, session, role, turn.text, source=turn.speaker, occurred_at=turn.occurred_at)
        for qa in item["qa"]:
            gold = frozenset(ids[i] for r in qa.get("evidence", []) for i in _evidence(r) if i in ids)
            if qa["category"] == 5 or gold:
                answer = gold if qa["category"] != 5 else frozenset()
                questions.append(Question(scope, qa["question"], CATEGORIES[qa["category"]], answer))
    facts = []
    for i, text in enumerate(injection_set.FACTS):
        session = f"fact-{i}"
        facts.append(event_id(HOST, session, "user", text))
        if fresh:
            record(engine, CODING, HOST, session, "user", text)
            reply = injection_set.ACKNOWLEDGEMENTS[i % len(injection_set.ACKNOWLEDGEMENTS)]
            record(engine, CODING, HOST, session, "assistant", reply)
    coding = [Question(CODING, text, "follow-up", frozenset([facts[i]])) for i, text in injection_set.FOLLOW_UPS]
    coding += [Question(CODING, text, "unrelated", frozenset()) for text in injection_set.UNRELATED]
    half = len(injection_set.FOLLOW_UPS) // 2
    tune = [q for q in coding if _index(q) < half]
    return questions, tune, [q for q in coding if _index(q) >= half]


def _index(question: Question) -> int:
    texts = [t for _, t in injection_set.FOLLOW_UPS] + injection_set.UNRELATED
    return texts.index(question.text) % len(injection_set.FOLLOW_UPS)


# -- tuning: the gate's floors, in-process ---------------------------------------------------------


Candidates = list[tuple[str, float, float | None, int]]  # record ID, coverage, cosine, line length


def candidates(engine: Engine, questions: list[Question], mode: str) -> list[Candidates]:
    out = []
    for n, q in enumerate(questions):
        found = engine.inject(q.scope, q.text, mode=mode, session_id=f"tune-{n}", gate=OPEN)
        out.append([(i.record_id, i.coverage, i.similarity, len(i.line)) for i in found])
    return out


def gated(found: Candidates, coverage: float, step: float) -> list[str]:
    """injection.passing (the gate choose applies) over candidates it let through open."""
    gate = Gate(coverage=coverage, step=step)
    return [found[n][0] for n in passing([(c, m, length) for _, c, m, length in found], gate)]


def sweep(questions: list[Question], found: list[Candidates], grid: list[tuple[float, float]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for coverage, step in grid:
        by: dict[str, Tally] = defaultdict(Tally)
        for q, f in zip(questions, found, strict=True):
            by[q.group].add(q, gated(f, coverage, step), 0)
        rows.append([coverage, step, *_summary(by)])
    return rows


def _summary(by: dict[str, Tally]) -> list[object]:
    answerable = [h for g, t in by.items() if g not in ("no answer", "unrelated") for h in t.hits]
    noise = [h for g, t in by.items() if g in ("no answer", "unrelated") for h in t.hits]
    items = [n for g, t in by.items() if g not in ("no answer", "unrelated") for n in t.items]
    return [_share(answerable), _share(noise), sum(items) / max(len(items), 1)]


def _share(values: list[bool]) -> float:
    return sum(values) / len(values) if values else float("nan")


# -- the report: the real hook command ----------------------------------------------------------------


def ask_hook(
    db: Path, question: Question, session: str, extra: dict[str, str], script: Path = SCRIPT
) -> tuple[list[str], int, str, float]:
    """One UserPromptSubmit through the hook command: injected IDs, characters, search label, wall ms."""
    payload = {"session_id": session, "cwd": "/", "hook_event_name": "UserPromptSubmit", "prompt": question.text}
    argv = [str(script), "hook", HOST, "--persona", question.scope.persona_id, "--project", question.scope.project_id]
    env = {**ENV, "MEMLIKEHUMAN_DB": str(db), "MEMLIKEHUMAN_EMBEDDER": "none", "PATH": "/usr/bin:/bin", **extra}
    started = time.perf_counter()
    done = subprocess.run(argv, input=json.dumps(payload).encode(), env=env, capture_output=True, check=True)
    wall = (time.perf_counter() - started) * 1000
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] if done.stdout.strip() else ""
    found = injection_sessions.records(context)
    label = "semantic" if "by semantic search" in context else "fast" if found else "-"
    return [str(r.get("memory_id") or r.get("event_id")) for r in found], len(context), label, wall


def floor_ms() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return (time.perf_counter() - started) * 1000


def report(
    engine: Engine, db: Path, questions: list[Question], extra: dict[str, str], run: str, script: Path = SCRIPT
) -> dict[str, object]:
    """Every question through the hook, each in a session of its own that no other run reuses."""
    by: dict[str, Tally] = defaultdict(Tally)
    walls: list[float] = []
    floors: list[float] = []
    labels: dict[str, int] = defaultdict(int)
    state.injected_path(db).unlink(missing_ok=True)  # what earlier runs injected is no session's of this one
    # A kept archive holds the tombstones of an earlier run's forgotten prompts, which would keep the same
    # prompts of the same sessions out: each run drops them first.
    engine.drop_tombstones()
    for n, q in enumerate(questions):
        session = f"bench-{run}-{n}"
        injected, chars, label, wall = ask_hook(db, q, session, extra, script)
        by[q.group].add(q, injected, chars)
        walls.append(wall)
        labels[label] += 1
        if n % 10 == 0:
            floors.append(floor_ms())
        engine.forget(q.scope, event_id(HOST, session, "user", q.text))  # no question answers the next
    return {"by": by, "walls": walls, "floors": floors, "labels": dict(labels)}


@contextmanager
def server(db: Path, script: Path = SCRIPT) -> Iterator[subprocess.Popen[bytes]]:
    """`memlikehuman serve` on the archive, its stdin held open; ready once its socket answers."""
    env = {**ENV, "MEMLIKEHUMAN_DB": str(db), "MEMLIKEHUMAN_EMBEDDER": "local", "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen([str(script), "serve"], stdin=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    try:
        target = prompt_context.target(config.load(db, env=ENV))
        probe = {"op": "inject", "persona_id": "default", "project_id": "coding", "query": "warm up the model"}
        deadline = time.monotonic() + 120
        while not _answers(script, target, probe):
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit("memlikehuman serve did not answer on its socket")
            time.sleep(0.5)
        yield process
    finally:
        process.terminate()
        process.wait(30)


def _answers(script: Path, target: str, probe: dict[str, object]) -> bool:
    """Whether a server of the archive answers the probe, asked by the hook code of `script`'s install (an
    older revision keeps its sockets elsewhere, so this checkout's channel would not find them). `-I`: the
    working directory, this checkout, must not shadow the installed package."""
    if script == SCRIPT:
        return channel.ask(target, probe, 5.0) is not None
    code = "import json, sys; from memlikehuman.hosts import channel;"
    code += " print(channel.ask(sys.argv[1], json.loads(sys.argv[2]), 5.0) is not None)"
    asked = subprocess.run(
        [str(script.parent / "python"), "-I", "-c", code, target, json.dumps(probe)], capture_output=True, text=True
    )
    return asked.stdout.strip() == "True"


def rows_of(name: str, result: dict[str, object]) -> list[list[object]]:
    by: dict[str, Tally] = result["by"]  # type: ignore[assignment]
    rows = []
    for group in [*CATEGORIES.values(), "follow-up", "unrelated"]:
        if group not in by:
            continue
        t = by[group]
        measure = "any injected" if group in ("no answer", "unrelated") else "hit@injected"
        rows.append([name, group, len(t.hits), measure, _share(t.hits), sum(t.items) / len(t.items), _mean(t.chars)])
    return rows


def _mean(values: list[int]) -> str:
    return f"{sum(values) / max(len(values), 1):.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--archive", type=Path, help="keep (and reuse) the recorded, embedded archive here")
    parser.add_argument("--tune-only", action="store_true", help="print the tuning tables, run no hook")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    parser.add_argument("--baseline", default=None, help="also run the hook of this git revision (e.g. 1bb2c1b)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="injection-") as scratch:
        work = args.archive or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        db = work / "archive.sqlite3"
        settings = config.load(db, env={**ENV, "MEMLIKEHUMAN_EMBEDDER": "local"})
        with Engine(settings) as engine:
            started = time.perf_counter()
            locomo, tune_coding, report_coding = build(engine, args.conversations)
            engine.embed_missing()
            print(f"archive ready in {time.perf_counter() - started:.0f} s", file=sys.stderr)
            tune = [q for q in locomo if _conversation(q) < 5]
            shown = [q for q in locomo if _conversation(q) >= 5] + report_coding
            body = tuning_tables(engine, tune, tune_coding)
            print(body, flush=True)
            if args.tune_only:
                return
            fast = {"MEMLIKEHUMAN_INJECT_SEARCH": "fast"}
            results = {"fast (no server)": report(engine, db, shown, fast, "fast")}
            with server(db):
                results["semantic (through serve)"] = report(engine, db, shown, {}, "semantic")
            baseline = _baseline(args.baseline, work) if args.baseline else None
            if baseline is not None:
                name, script = baseline
                copy = work / "baseline.sqlite3"
                shutil.copy(db, copy)
                with Engine(settings.with_db(copy)) as other:
                    results[f"fast, {name}"] = report(other, copy, shown, fast, "fast-base", script)
                    with server(copy, script):
                        results[f"semantic, {name}"] = report(other, copy, shown, {}, "semantic-base", script)
        versions = {"this checkout": injection_sessions.Version("this checkout", SCRIPT, work / "sessions.sqlite3")}
        if baseline is not None:
            versions[baseline[0]] = injection_sessions.Version(baseline[0], baseline[1], work / "sessions-base.sqlite3")
        sessions = {name: (v, injection_sessions.run(v)) for name, v in versions.items()}
    shown_report = render(results, settings) + "\n\n" + injection_sessions.render(sessions)
    print(shown_report)
    body += "\n\n" + shown_report
    if not args.no_write:
        more = f" --conversations {args.conversations}" if args.conversations != 10 else ""
        more += f" --baseline {args.baseline}" if args.baseline else ""
        command = "python -m bench.injection" + more
        write_section("injection", "Injected context of the prompt hook", command, body)


def _baseline(rev: str, work: Path) -> tuple[str, Path]:
    """(a label, the console script) of the code of `rev`, pip-installed into a scratch venv (bench.hooks)."""
    commit = subprocess.run(["git", "rev-parse", "--short", rev], capture_output=True, text=True, check=True)
    src = work / "baseline-src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir()
    tar = subprocess.run(["git", "archive", rev, "memlikehuman", "pyproject.toml", "README.md"], capture_output=True,
                         check=True, cwd=ROOT).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(src)], input=tar, check=True)
    return f"at {commit.stdout.strip()} (before)", pip_installed(src, work / "baseline").with_name("memlikehuman")


def _conversation(question: Question) -> int:
    return ORDER.index(question.scope.project_id)


ORDER = [item["sample_id"] for item in json.loads(DATA.read_text(encoding="utf-8"))]


def tuning_tables(engine: Engine, locomo: list[Question], coding: list[Question]) -> str:
    parts = []
    headers = ["coverage", "step", "hit@injected", "noise: any injected", "items per answerable"]
    for mode, grid in (("fast", FAST_GRID), ("semantic", SEMANTIC_GRID)):
        for name, questions in (("LoCoMo conversations 1-5", locomo), ("coding set, first half", coding)):
            found = candidates(engine, questions, mode)
            rows = sweep(questions, found, grid)
            parts.append(f"Tuning, {mode}, {name} ({len(questions)} prompts, in-process):\n\n" + table(headers, rows))
    return "\n\n".join(parts)


def render(results: dict[str, dict[str, object]], settings: config.Settings) -> str:
    headers = ["hook", "questions", "n", "measure", "share", "items/prompt", "chars/prompt"]
    rows = [row for name, result in results.items() for row in rows_of(name, result)]
    timing = []
    for name, result in results.items():
        walls: list[float] = result["walls"]  # type: ignore[assignment]
        floors: list[float] = result["floors"]  # type: ignore[assignment]
        timing.append(
            [name, f"{percentile(walls, 50):.0f}", f"{percentile(walls, 95):.0f}", f"{percentile(floors, 50):.0f}",
             json.dumps(result["labels"])]
        )  # fmt: skip
    gate = (
        f"items {settings.gate.items}, chars {settings.gate.chars}, coverage {settings.gate.coverage},"
        f" step {settings.gate.step}, wait {settings.inject_wait} s"
    )
    return (
        "Report over the real hook command, LoCoMo conversations 6-10 and the coding set's second half;"
        f" gate: {gate}\n\n"
        + table(headers, rows)
        + "\n\n"
        + table(["hook", "p50 ms", "p95 ms", "floor p50 ms (python -c pass)", "answers by search"], timing)
    )


if __name__ == "__main__":
    main()
