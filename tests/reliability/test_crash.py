"""Crash safety: SIGKILL at random points while events are recorded, extracted, corrected and forgotten.

Victims are Engine worker processes (killed inside SQLite statements by a progress handler, while
their extraction request is with the scripted model, in the middle of an operation, or between
operations) and real `memlikehuman serve` processes driven over stdio (killed with requests in
flight, or while extracting). After every kill the archive is reopened, as a restart does, and
checked against what the clients were told:
- every event whose memory_record returned is there with its sequence and text (unless its forget was sent);
- nothing acknowledged as forgotten is back; no event holds text other than what was sent;
- no half-written memory, correction or checkpoint exists (support.STRUCTURE), integrity checks pass;
- the client's retry of the interrupted call succeeds, and re-recording completes every pending extraction.

Both backends (`backend`). On PostgreSQL the victims are the same processes; the server database
keeps running (it is the durability layer), so a kill drops the victim's connection and
PostgreSQL rolls back whatever transaction it had open. The kill ticks there count function
calls inside psycopg (crash_worker.arm_psycopg). The search of the archive files for forgotten
text is SQLite's (the WAL and the file); the residue in a PostgreSQL cluster's files is measured
by the forgetting tests and documented in docs/reliability.md.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import BASE_ENV
from openai_stub import ScriptedOpenAI
from pg_support import fresh_database

from memlikehuman import config
from memlikehuman.archive.db import is_url
from memlikehuman.archive.migrations import MIGRATIONS
from memlikehuman.archive.postgres import pg_schema
from memlikehuman.engine import Engine
from memlikehuman.records import Scope

from . import crash_worker
from .support import (
    QuotingExtractor,
    RawServer,
    archive_problems,
    error_code,
    extractor_env,
    report,
    rows,
    tool_outcome,
)

SCOPES = (("alice", "home"), ("bob", "work"))
SESSIONS = ("s1", "s2")
WORDS = "river lantern copper orchard violin meadow harbor saffron glacier tundra quartz maple".split()
CITIES = ("Lisbon", "Oslo", "Quito", "Hanoi", "Accra")
KILL_MODES = {"statement": 50, "extraction": 20, "inflight": 15, "between": 15}
# Measured: an operation takes ~150 progress-handler ticks on average (records ~240, checkpoints ~5), so a
# kill tick drawn from [1, TICKS_PER_OP * budget] usually lands inside one of the victim's operations.
# PostgreSQL's ticks (crash_worker.PSYCOPG_CALLS) are sized to match.
TICKS_PER_OP = 120
OPS_PER_WORKER = 10
Reply = tuple[Any, ...]  # ("ok", data) | ("error", code, text)


@dataclass
class Ledger:
    """What the clients sent and were told; what the archive must agree with after any crash."""

    sent: dict[str, tuple[tuple[str, str], dict[str, Any]]] = field(default_factory=dict)
    acked: dict[str, int] = field(default_factory=dict)  # event_id -> acknowledged sequence
    complete: set[str] = field(default_factory=set)  # acknowledged with extraction complete
    memory_event: dict[str, str] = field(default_factory=dict)  # memory_id -> its event
    parent_event: dict[str, str] = field(default_factory=dict)  # correction event -> event of the corrected memory
    forget_sent: set[str] = field(default_factory=set)  # events whose forget was sent
    forgotten_events: set[str] = field(default_factory=set)
    forgotten_memories: set[str] = field(default_factory=set)
    scrubbed: set[str] = field(default_factory=set)  # forgotten events whose forget also cleared the WAL
    corrections: dict[str, tuple[str, str]] = field(default_factory=dict)  # memory -> (replacement, event)
    correct_sent: set[str] = field(default_factory=set)
    counts: Counter[str] = field(default_factory=Counter)
    n: int = 0

    def gone_allowed(self, event_id: str) -> bool:
        """True when a sent forget may have deleted the event (its own, or one of a memory it corrects)."""
        current: str | None = event_id
        while current is not None:
            if current in self.forget_sent:
                return True
            current = self.parent_event.get(current)
        return False

    def live_events(self) -> list[str]:
        return sorted(e for e in self.acked if not self.gone_allowed(e))

    def live_memories(self) -> list[str]:
        return sorted(
            m
            for m, e in self.memory_event.items()
            if not self.gone_allowed(e) and m not in self.correct_sent and m not in self.forgotten_memories
        )


def new_record(rng: random.Random, ledger: Ledger) -> tuple[Any, ...]:
    ledger.n += 1
    event_id = f"ev-{ledger.n}"
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
    text = f"{words} (event {ledger.n})"
    if rng.random() < 0.3:
        text = f"my city is {rng.choice(CITIES)} now; {text}"
    if rng.random() < 0.1:
        text += " " + "long " * rng.randint(2_000, 12_000)  # spans many pages
    payload: dict[str, Any] = {
        "event_id": event_id,
        "text": text,
        "role": rng.choice(("user", "assistant")),
        "source": "chat",
        "session_id": rng.choice(SESSIONS),
    }
    if rng.random() < 0.2:
        payload["cues"] = [{"kind": "photo", "key": f"img-{ledger.n}", "label": rng.choice(WORDS)}]
    scope = rng.choice(SCOPES)
    ledger.sent[event_id] = (scope, payload)
    return ("record", scope, payload)


def next_op(rng: random.Random, ledger: Ledger) -> tuple[Any, ...]:
    roll = rng.random()
    live = ledger.live_events()
    pending = [e for e in live if e not in ledger.complete]
    memories = ledger.live_memories()
    if roll < 0.5 or not live:
        return new_record(rng, ledger)
    if roll < 0.58 and pending:
        event_id = rng.choice(pending)
        scope, payload = ledger.sent[event_id]
        return ("record", scope, payload)
    if roll < 0.75 and memories:
        memory_id = rng.choice(memories)
        ledger.correct_sent.add(memory_id)
        scope = ledger.sent[origin(ledger, memory_id)][0]
        return ("correct", scope, memory_id, f"Actually {rng.choice(WORDS)} {rng.choice(WORDS)}", "the user said so")
    if roll < 0.87:
        if memories and rng.random() < 0.4:
            target = rng.choice(memories)
            event_id = ledger.memory_event[target]
        else:
            target = event_id = rng.choice(live)
        ledger.forget_sent.add(event_id)
        return ("forget", ledger.sent[origin(ledger, target)][0], target)
    event_id = rng.choice(live)
    scope, payload = ledger.sent[event_id]
    return ("checkpoint", scope, event_id, payload["session_id"], f"task after {event_id}")


def origin(ledger: Ledger, record_id: str) -> str:
    """The recorded event a memory or correction event ultimately derives from."""
    event_id = ledger.memory_event.get(record_id, record_id)
    while event_id in ledger.parent_event:
        event_id = ledger.parent_event[event_id]
    return event_id


def acknowledge(ledger: Ledger, op: tuple[Any, ...], reply: Reply) -> None:
    """Book what the client was told; fail on any error a retry-capable client could not expect."""
    name = op[0]
    ledger.counts["operations acknowledged"] += 1
    if reply[0] == "error":
        code = reply[1]
        # Expected only after a crash hid the outcome of an earlier call (e.g. the forget did commit).
        assert name != "record" and code in ("not_found", "conflict"), f"{op[:3]} failed: {reply}"
        ledger.counts["expected errors (outcome of a killed call)"] += 1
        return
    data = reply[1]
    if name == "record":
        event_id = op[2]["event_id"]
        assert ledger.acked.get(event_id, data["sequence"]) == data["sequence"], "a retry moved the event"
        ledger.acked[event_id] = data["sequence"]
        if data["state"] == "complete":
            ledger.complete.add(event_id)
        for memory_id in data["memory_ids"]:
            ledger.memory_event[memory_id] = event_id
    elif name == "correct":
        ledger.corrections[op[2]] = (data["replacement_id"], data["correction_event_id"])
        ledger.memory_event[data["replacement_id"]] = data["correction_event_id"]
        ledger.parent_event[data["correction_event_id"]] = ledger.memory_event[op[2]]
    elif name == "forget":
        ledger.forgotten_events.update(data["deleted_event_ids"])
        ledger.forgotten_memories.update(data["deleted_memory_ids"])
        if data["scrubbed"]:
            ledger.scrubbed.update(e for e in data["deleted_event_ids"] if e.startswith("ev-"))
        else:
            ledger.counts["forgets that could not clear the WAL at once"] += 1


def marker(event_id: str) -> bytes:
    """The words only this event's text contains (see new_record)."""
    return f"(event {event_id.split('-')[1]})".encode()


def check_archive(db: str, ledger: Ledger) -> None:
    """Everything acknowledged is there, nothing torn, nothing forgotten is back; the file is sound."""
    assert archive_problems(db) == []
    events = {
        r["event_id"]: r
        for r in rows(db, "SELECT event_id, sequence, persona_id, project_id, text, kind, extraction_state FROM events")
    }
    memory_ids = {r["memory_id"]: r for r in rows(db, "SELECT memory_id, revoked_at, replaced_by FROM memories")}
    for event_id, sequence in ledger.acked.items():
        if event_id not in events:
            assert ledger.gone_allowed(event_id), f"acknowledged event {event_id} was lost"
            continue
        assert events[event_id]["sequence"] == sequence
    for event_id, row in events.items():
        if row["kind"] == "record":
            scope, payload = ledger.sent[event_id]
            assert (row["persona_id"], row["project_id"], row["text"]) == (*scope, payload["text"]), event_id
            if event_id in ledger.complete:
                assert row["extraction_state"] == "complete", f"{event_id} fell back from complete"
            if row["extraction_state"] == "complete":
                count = rows(db, "SELECT count(*) AS n FROM memories m JOIN events e ON e.sequence = m.event_sequence"
                             " WHERE e.event_id = ?", (event_id,))[0]["n"]  # fmt: skip
                assert count >= 1, f"{event_id} is complete but lost its memory"
    assert not ledger.forgotten_events & set(events), "a forgotten event is back"
    if not is_url(db):
        check_files(Path(db), ledger, events)
    assert not ledger.forgotten_memories & set(memory_ids), "a forgotten memory is back"
    for memory_id, (replacement, correction_event) in ledger.corrections.items():
        if correction_event in events:
            assert memory_ids[replacement]["revoked_at"] is None or replacement in ledger.correct_sent
            assert memory_ids[memory_id]["revoked_at"] is not None
        else:
            assert ledger.gone_allowed(correction_event), f"acknowledged correction {correction_event} was lost"


def check_files(db: Path, ledger: Ledger, events: dict[str, dict[str, Any]]) -> None:
    """SQLite: no scrubbed forgotten text is readable in the archive file, its WAL or its shared memory."""
    paths = (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"))
    contents = {path.name: path.read_bytes() for path in paths if path.exists()}
    files = b"".join(contents.values())
    for event_id in ledger.scrubbed:
        found = {name: data.find(marker(event_id)) for name, data in contents.items() if marker(event_id) in data}
        where = {name: (at, at // 4096, contents[name][max(0, at - 150) : at + 60]) for name, at in found.items()}
        assert not found, f"the text of forgotten event {event_id} is readable in the archive files: {where}"
    # The control: the text of a live event (short enough to sit in one page) is found this way.
    for event_id, row in events.items():
        if row["kind"] == "record" and len(row["text"]) < 1_000:
            assert marker(event_id) in files, f"the byte search misses the live event {event_id}"


@dataclass
class Victim:
    """Who the scripted model kills, and at which of its extraction requests."""

    pid: int = 0
    kill_on: int = 0
    seen: int = 0
    killed: bool = False

    def before_reply(self, _body: dict[str, Any]) -> None:
        self.seen += 1
        if self.kill_on and self.seen == self.kill_on and not self.killed:
            self.killed = True
            os.kill(self.pid, signal.SIGKILL)


def fork_context() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    # psycopg too (the forkserver skips what is not installed): its import would otherwise be where a
    # victim's first PostgreSQL ticks go.
    preload = ["memlikehuman.engine", "memlikehuman.providers.openai_chat", "memlikehuman.lifecycle.forget", "openai"]
    ctx.set_forkserver_preload([*preload, "psycopg", "psycopg.rows"])
    return ctx


def worker_session(ctx: Any, db: str, env: dict[str, str], rng: random.Random, ledger: Ledger, victim: Victim,
                   retry: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:  # fmt: skip
    """One victim's life: operations until it is killed; returns the operation that was in flight, if any."""
    mode = rng.choices(list(KILL_MODES), weights=list(KILL_MODES.values()))[0]
    parent, child = ctx.Pipe()
    budget = rng.randint(1, OPS_PER_WORKER)
    kill_at = rng.randint(1, TICKS_PER_OP * budget) if mode == "statement" else 0
    proc = ctx.Process(target=crash_worker.main, args=(child, str(db), env, kill_at), daemon=True)
    proc.start()
    child.close()
    try:
        assert parent.recv()[0] == "ready"
        victim.pid, victim.seen, victim.killed = proc.pid, 0, False
        victim.kill_on = rng.randint(1, 3) if mode == "extraction" else 0
        for number in range(budget):
            ledger.counts["interrupted calls retried"] += bool(retry)
            op = retry.pop(0) if retry else next_op(rng, ledger)
            ledger.counts["operations tried"] += 1
            parent.send(op)
            if mode == "inflight" and number == budget - 1:
                proc.kill()
                ledger.counts["kills: in the middle of an operation"] += 1
                ledger.counts[f"in flight at a kill: {op[0]}"] += 1
                return [op]
            try:
                reply = parent.recv()
            except (EOFError, ConnectionResetError):  # a worker killed with unread input resets the pipe
                inside = "kills: inside a PostgreSQL exchange" if is_url(db) else "kills: inside a SQLite statement"
                ledger.counts["kills: during extraction" if victim.killed else inside] += 1
                ledger.counts[f"in flight at a kill: {op[0]}"] += 1
                return [op]
            acknowledge(ledger, op, reply)
        proc.kill()
        ledger.counts["kills: between operations"] += 1
        return []
    finally:
        proc.join(timeout=60)
        parent.close()
        victim.kill_on = 0
        assert proc.exitcode == -signal.SIGKILL, f"the worker died of something other than SIGKILL: {proc.exitcode}"


def tool_call(op: tuple[Any, ...]) -> tuple[str, dict[str, Any]]:
    """The MCP tools/call of an operation."""
    name, (persona_id, project_id) = op[0], op[1]
    scope = {"persona_id": persona_id, "project_id": project_id}
    if name == "record":
        return "memory_record", {**op[2], **scope}
    if name == "correct":
        return "memory_correct", {"memory_id": op[2], "content": op[3], "reason": op[4], **scope}
    if name == "forget":
        return "memory_forget", {"record_id": op[2], **scope}
    return "session_checkpoint", {"covered_event_id": op[2], "session_id": op[3], "state": {"goal": op[4]}, **scope}


def as_reply(op: tuple[Any, ...], structured: dict[str, Any]) -> Reply:
    """A served tool's structured output in the worker's reply shape."""
    if op[0] == "record":
        return ("ok", {"sequence": structured["sequence"], "state": structured["extraction_state"],
                       "memory_ids": structured["memory_ids"]})  # fmt: skip
    return ("ok", structured)


def serve_session(db: str, env: dict[str, str], log: Path, rng: random.Random, ledger: Ledger, victim: Victim,
                  retry: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:  # fmt: skip
    """A real `memlikehuman serve` with pipelined requests, killed after some answers or while extracting."""
    server = RawServer(db, env, log)
    try:
        server.initialize()
        ledger.counts["interrupted calls retried"] += len(retry)
        ops = retry[:] + [next_op(rng, ledger) for _ in range(rng.randint(1, 6))]
        retry.clear()
        extraction = rng.random() < 0.3
        victim.pid, victim.seen, victim.killed, victim.kill_on = server.pid, 0, False, 1 if extraction else 0
        ids = [server.call_tool(*tool_call(op)) for op in ops]
        ledger.counts["operations tried"] += len(ops)
        answered = len(ops) if extraction else rng.randint(0, len(ops) - 1)
        unanswered = []
        for op, request_id in zip(ops, ids, strict=True):
            answer = server.answer(request_id) if answered > 0 else None
            answered -= 1
            if answer is None:
                unanswered.append(op)
                continue
            ok, outcome = tool_outcome(answer)
            if ok:
                assert isinstance(outcome, dict)
                if op[0] == "forget":
                    outcome["scrubbed"] = "write-ahead log busy" not in answer["result"]["content"][0]["text"]
                acknowledge(ledger, op, as_reply(op, outcome))
            else:
                acknowledge(ledger, op, ("error", error_code(str(outcome)), outcome))
        if victim.killed:
            ledger.counts["kills: memlikehuman serve during extraction"] += 1
        elif unanswered:
            ledger.counts["kills: memlikehuman serve with requests in flight"] += 1
        else:
            ledger.counts["kills: memlikehuman serve after its answers"] += 1
        assert not server.not_json, f"non-JSON on stdout: {server.not_json[:3]}"
        return unanswered
    finally:
        victim.kill_on = 0
        server.kill()


def finish(ctx: Any, db: str, env: dict[str, str], ledger: Ledger) -> None:
    """The client retries: re-recording each unfinished event completes its extraction."""
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=crash_worker.main, args=(child, str(db), env, 0), daemon=True)
    proc.start()
    child.close()
    assert parent.recv()[0] == "ready"
    unfinished = rows(db, "SELECT event_id FROM events WHERE kind = 'record' AND extraction_state != 'complete'")
    for row in unfinished:
        scope, payload = ledger.sent[row["event_id"]]
        parent.send(("record", scope, payload))
        reply = parent.recv()
        assert reply[0] == "ok" and reply[1]["state"] == "complete" and reply[1]["memory_ids"], reply
    parent.close()
    proc.join(timeout=60)
    ledger.counts["pending extractions completed by a retry"] += len(unfinished)


def crash_run(tmp_path: Path, db: str, worker_kills: int, serve_kills: int, seed: int) -> Ledger:
    rng = random.Random(seed)
    ledger = Ledger()
    victim = Victim()
    ctx = fork_context()
    # Serve sessions are spread over the run, so the workers' archive state reaches them too.
    plan = ["serve"] * serve_kills + ["worker"] * worker_kills
    rng.shuffle(plan)
    with ScriptedOpenAI(default_chat=QuotingExtractor(victim.before_reply)) as api:
        env = extractor_env(api.base_url)
        retry: list[tuple[Any, ...]] = []
        for kind in plan:
            if kind == "serve":
                retry = serve_session(db, env, tmp_path / "serve.log", rng, ledger, victim, retry)
            else:
                retry = worker_session(ctx, db, env, rng, ledger, victim, retry)
            check_archive(db, ledger)
        finish(ctx, db, env, ledger)
    check_archive(db, ledger)
    assert "Traceback" not in (tmp_path / "serve.log").read_text() if serve_kills else True
    return ledger


def figures(ledger: Ledger, seed: int, db: str) -> dict[str, Any]:
    kills = sum(v for k, v in ledger.counts.items() if k.startswith("kills"))
    totals = rows(db, "SELECT (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM memories) AS memories,"
                      " (SELECT count(*) FROM corrections) AS corrections")[0]  # fmt: skip
    return {"seed": seed, "kill points": kills, **dict(sorted(ledger.counts.items())),
            "acknowledged events lost": 0, "invariant violations": 0, **totals}  # fmt: skip


def seeded_run(tmp_path: Path, db: str, suite: str, worker_kills: int, serve_kills: int) -> None:
    """A run with a fresh seed (RELIABILITY_SEED repeats one); a failure names its seed."""
    seed = int(os.environ.get("RELIABILITY_SEED") or random.randrange(2**32))
    print(f"{suite}: seed {seed} (repeat with RELIABILITY_SEED={seed})")  # shown with any failure
    try:
        ledger = crash_run(tmp_path, db, worker_kills, serve_kills, seed)
    except Exception as exc:  # an EOFError or BrokenPipeError must name its seed too
        raise AssertionError(f"seed {seed} (repeat with RELIABILITY_SEED={seed}): {exc!r}") from exc
    report(suite, **figures(ledger, seed, db))


def test_no_acknowledged_event_is_lost_and_nothing_is_half_written_over_more_than_two_hundred_kills(
    tmp_path: Path, archive_target: str, backend: str
):
    # 230 kill points, about 90 s on 2 cores: the issue asks for at least 200 in every run, CI's included.
    seeded_run(tmp_path, archive_target, f"crash safety (default, {backend})", worker_kills=200, serve_kills=30)


@pytest.mark.slow
def test_no_acknowledged_event_is_lost_over_a_thousand_kill_points(tmp_path: Path, archive_target: str, backend: str):
    seeded_run(tmp_path, archive_target, f"crash safety (long, {backend})", worker_kills=880, serve_kills=120)


# Measured: creating an archive takes ~290 ticks on SQLite (pragmas and its migrations) and ~47 on
# PostgreSQL (connecting, the ledger and its migration; psycopg is imported before, see fork_context);
# some attempts finish.
CREATION_TICKS = {"sqlite": 330, "postgres": 55}
SCHEMA_VERSION = {"sqlite": len(MIGRATIONS), "postgres": len(pg_schema.MIGRATIONS)}


def new_archives(tmp_path: Path, backend: str, request: pytest.FixtureRequest, count: int) -> Iterator[str]:
    """COUNT new, empty archives of the backend, one after the other."""
    for attempt in range(count):
        if backend == "sqlite":
            yield str(tmp_path / f"new-{attempt}" / "memory.sqlite3")
            continue
        with fresh_database(request.getfixturevalue("pg_server")) as url:
            yield url


def test_a_kill_while_a_new_archive_is_created_leaves_one_the_next_start_completes(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
):
    ctx = fork_context()
    rng = random.Random()
    killed = 0
    for db in new_archives(tmp_path, backend, request, 20):
        parent, child = ctx.Pipe()
        kill_at = rng.randint(1, CREATION_TICKS[backend])
        proc = ctx.Process(target=crash_worker.open_archive, args=(child, db, BASE_ENV, kill_at))
        proc.start()
        child.close()
        proc.join(timeout=60)
        parent.close()
        killed += proc.exitcode == -signal.SIGKILL
        assert proc.exitcode in (0, -signal.SIGKILL), proc.exitcode
        with Engine(config.load(db, env=BASE_ENV)) as engine:
            assert engine.schema_version == SCHEMA_VERSION[backend]
            engine.record(Scope(), "after", "the archive works", "user", "chat")
        assert archive_problems(db) == []
    report(f"crash safety (archive creation, {backend})", attempts=20, kills_during_creation=killed, broken_archives=0)


# -- kills during background extraction ----------------------------------------------------------


def background_round(db: str, env: dict[str, str], log: Path, rng: random.Random, victim: Victim,
                     sent: dict[str, dict[str, Any]], acked: set[str]) -> None:  # fmt: skip
    """Two servers on one archive, MEMLIKEHUMAN_EXTRACTION_WAIT=0: both record, the scripted model kills
    the first at one of the extraction requests it receives (from either server's worker)."""
    servers = [RawServer(db, env, log), RawServer(db, env, log)]
    try:
        for server in servers:
            server.initialize()
        victim.pid, victim.seen, victim.killed, victim.kill_on = servers[0].pid, 0, False, rng.randint(1, 4)
        calls = []
        for _ in range(rng.randint(2, 6)):
            event_id = f"bg-{len(sent) + 1}"
            persona_id, project_id = rng.choice(SCOPES)
            text = f"{rng.choice(WORDS)} {rng.choice(WORDS)} ({event_id})"
            sent[event_id] = {"event_id": event_id, "text": text, "role": "user", "source": "chat",
                              "persona_id": persona_id, "project_id": project_id}  # fmt: skip
            server = rng.choice(servers)
            calls.append((event_id, server, server.call_tool("memory_record", sent[event_id])))
        for event_id, server, request_id in calls:
            answer = server.answer(request_id)
            if answer is None:
                continue  # the server was killed first: the host would record the event again
            ok, outcome = tool_outcome(answer)
            assert ok, outcome
            assert isinstance(outcome, dict) and outcome["extraction_state"] in ("pending", "complete")
            acked.add(event_id)
        # Give the workers a moment to reach the kill (or to finish), then kill the second server too.
        deadline = time.monotonic() + 10
        while not victim.killed and time.monotonic() < deadline and unfinished(db):
            time.sleep(0.05)
    finally:
        victim.kill_on = 0
        for server in servers:
            server.kill()


def unfinished(db: str) -> list[str]:
    return [r["event_id"] for r in rows(db, "SELECT event_id FROM events WHERE extraction_state != 'complete'")]


def test_kills_during_background_extraction_lose_no_event_and_extract_none_into_duplicate_memories(
    tmp_path: Path, archive_target: str, backend: str
):
    seed = int(os.environ.get("RELIABILITY_SEED") or random.randrange(2**32))
    print(f"background extraction crashes: seed {seed} (repeat with RELIABILITY_SEED={seed})")
    rng = random.Random(seed)
    db, log = archive_target, tmp_path / "serve.log"
    victim = Victim()
    extractor = QuotingExtractor(victim.before_reply)
    sent: dict[str, dict[str, Any]] = {}
    acked: set[str] = set()
    kills = 0
    with ScriptedOpenAI(default_chat=extractor) as api:
        env = {**extractor_env(api.base_url), "MEMLIKEHUMAN_EXTRACTION_WAIT": "0"}
        for _ in range(8):
            background_round(db, env, log, rng, victim, sent, acked)
            kills += victim.killed
            assert archive_problems(db) == []
        # A restarted server takes up what the killed ones left: the host records nothing again.
        last = RawServer(db, env, log)
        last.initialize()
        deadline = time.monotonic() + 120
        while unfinished(db) and time.monotonic() < deadline:
            time.sleep(0.1)
        last.close()
    assert unfinished(db) == []
    stored = {r["event_id"]: r["n"] for r in rows(db, "SELECT e.event_id, count(m.id) AS n FROM events e"
                                                      " LEFT JOIN memories m ON m.event_sequence = e.sequence"
                                                      " GROUP BY e.event_id")}  # fmt: skip
    assert acked <= set(stored), "an acknowledged event was lost"
    assert all(n == 1 for n in stored.values()), f"an event was extracted into duplicate memories: {stored}"
    assert rows(db, "SELECT count(*) AS n FROM extraction_claims")[0]["n"] == 0
    assert archive_problems(db) == []
    assert "Traceback" not in log.read_text()
    report(f"crash safety (background extraction, {backend})", seed=seed, rounds=8, kills_during_extraction=kills,
           events=len(stored), model_requests=extractor.calls, duplicate_memories=0, lost_events=0)  # fmt: skip
