"""Concurrency: 8 `memlikehuman serve` processes on one archive, each driven by its own MCP client at once.

They start together on a new archive (so they race to create the schema), all record one shared
event at the same moment (a retry from several hosts), then record (with extraction by the
scripted model), recall, read, checkpoint, resume, correct and forget. Afterwards every
acknowledged event that was not forgotten is present exactly once with the sequence it was
acknowledged with, the shared event exists once under one sequence, each client saw its sequences
increase, and no call failed: no `database is locked`, no `unavailable`, no `internal`.
Both backends (`archive_target`): a SQLite file, or a PostgreSQL database the 8 servers share. On
PostgreSQL with pgvector, 8 servers record at once and every event gets its vector in the vector column.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import BASE_ENV, SyncClient, connected, stdio_params
from openai_stub import ScriptedOpenAI

from .support import QuotingExtractor, archive_problems, extractor_env, report, rows

WORKERS = 8
SCOPES = ({"persona_id": "team", "project_id": "alpha"}, {"persona_id": "team", "project_id": "beta"})
WORDS = "amber basil cedar delta ember fjord garnet hazel indigo juniper".split()
MIX = {"record": 46, "recall": 12, "read": 8, "checkpoint": 10, "resume": 6, "correct": 8, "forget": 10}


@dataclass
class Worker:
    """One client's view: what it was told, in order."""

    number: int
    ops: int
    seed: int
    acked: list[tuple[str, int]] = field(default_factory=list)  # (event_id, sequence) in acknowledgement order
    texts: dict[str, str] = field(default_factory=dict)
    memories: dict[str, str] = field(default_factory=dict)  # live, uncorrected memory -> its recorded event
    forgotten: set[str] = field(default_factory=set)
    shared: list[int] = field(default_factory=list)  # sequences acknowledged for the shared event
    errors: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)

    @property
    def scope(self) -> dict[str, str]:
        return SCOPES[self.number % 2]

    def live(self) -> list[str]:
        return [e for e, _ in self.acked if e not in self.forgotten]

    def record_shared(self, client: SyncClient) -> None:
        """Every client of a scope records this identical event at once."""
        self.counts["shared record"] += 1
        scope = f"{self.scope['persona_id']}/{self.scope['project_id']}"
        out = self.call(client, "memory_record", event_id=f"shared-{scope}", text=f"the shared note of {scope}",
                        role="user", source="load", session_id="shared")  # fmt: skip
        if out is not None:
            self.shared.append(out["sequence"])

    def step(self, client: SyncClient, rng: random.Random, index: int) -> None:
        live = self.live()
        name = rng.choices(list(MIX), weights=list(MIX.values()))[0] if live else "record"
        if name == "correct" and not self.memories:
            name = "record"
        self.counts[name] += 1
        if name == "record":
            event_id = f"w{self.number}-{index}"
            text = f"worker {self.number} note {index} {rng.choice(WORDS)} {rng.choice(WORDS)}"
            out = self.call(client, "memory_record", event_id=event_id, text=text, role="user", source="load",
                            session_id=f"s{self.number}")  # fmt: skip
            if out is not None:
                self.acked.append((event_id, out["sequence"]))
                self.texts[event_id] = text
                self.memories.update(dict.fromkeys(out["memory_ids"], event_id))
                if out["extraction_state"] != "complete":
                    self.errors.append(f"extraction of {event_id} is {out['extraction_state']}: {out['error']}")
        elif name == "recall":
            out = self.call(client, "memory_recall", query=rng.choice(WORDS), limit=20)
            if out is not None:
                seen = [h["event_id"] for h in out["raw_fallback"]] + [m["source"]["event_id"] for m in out["memories"]]
                self.leaks += [e for e in seen if e.startswith("w") and int(e[1]) % 2 != self.number % 2]
        elif name == "correct":
            memory_id = rng.choice(sorted(self.memories))
            out = self.call(client, "memory_correct", memory_id=memory_id, content=f"corrected {memory_id}",
                            reason="the user said so")  # fmt: skip
            if out is not None:
                self.memories[out["replacement_id"]] = self.memories.pop(memory_id)
        elif name == "read":
            event_id = rng.choice(live)
            out = self.call(client, "memory_read", record_id=event_id)
            if out is not None and out["source_page"]["text"] != self.texts[event_id]:
                self.errors.append(f"memory_read {event_id} returned other text")
        elif name == "checkpoint":
            self.call(client, "session_checkpoint", state={"goal": f"load {self.number}"}, covered_event_id=live[-1],
                      session_id=f"s{self.number}")  # fmt: skip
        elif name == "resume":
            self.call(client, "session_resume", query=rng.choice(WORDS), token_budget=2000)
        else:
            event_id = rng.choice(live)
            if self.call(client, "memory_forget", record_id=event_id) is not None:
                self.forgotten.add(event_id)
                self.memories = {m: e for m, e in self.memories.items() if e != event_id}

    def call(self, client: SyncClient, tool: str, **arguments: Any) -> dict[str, Any] | None:
        result = client.call(tool, **arguments, **self.scope)
        if result.is_error:
            self.errors.append(f"{tool}: {result.content[0].text}")
            return None
        return dict(result.structured_content)


def drive(db: str, env: dict[str, str], worker: Worker, start: threading.Barrier) -> None:
    rng = random.Random(worker.seed)
    try:
        with connected(stdio_params(db, **env)) as client:
            start.wait(timeout=120)
            worker.record_shared(client)
            for index in range(worker.ops):
                worker.step(client, rng, index)
    except Exception as exc:  # the assertion in the test names it
        worker.errors.append(f"client failed: {exc!r}")


def run_load(db: str, ops: int, seed: int) -> tuple[list[Worker], float]:
    workers = [Worker(n, ops, seed + n) for n in range(WORKERS)]
    start = threading.Barrier(WORKERS)
    with ScriptedOpenAI(default_chat=QuotingExtractor()) as api:
        env = extractor_env(api.base_url)
        threads = [threading.Thread(target=drive, args=(db, env, w, start)) for w in workers]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=1200)
        hung = [w.number for w, t in zip(workers, threads, strict=True) if t.is_alive()]
        assert hung == [], f"clients {hung} still had a call open after 20 minutes"
        return workers, time.monotonic() - began


def check(db: str, workers: list[Worker]) -> None:
    assert [e for w in workers for e in w.errors] == []
    assert [e for w in workers for e in w.leaks] == [], "a recall returned another scope's events"
    assert archive_problems(db) == []
    stored = {r["event_id"]: r for r in rows(db, "SELECT event_id, sequence, text FROM events")}
    text_counts = Counter(r["text"] for r in stored.values())
    for scope in SCOPES:
        event_id = f"shared-{scope['persona_id']}/{scope['project_id']}"
        told = {s for w in workers if w.scope == scope for s in w.shared}
        assert told == {stored[event_id]["sequence"]}, f"{event_id} was acknowledged under sequences {told}"
        assert text_counts[stored[event_id]["text"]] == 1
    acked_sequences = [s for w in workers for _, s in w.acked] + [
        stored[e]["sequence"] for e in stored if "shared" in e
    ]
    assert len(acked_sequences) == len(set(acked_sequences)), "two acknowledged events share a sequence"
    for worker in workers:
        sequences = [s for _, s in worker.acked]
        assert sequences == sorted(sequences), f"worker {worker.number} saw its sequences go backwards"
        for event_id, sequence in worker.acked:
            if event_id in worker.forgotten:
                assert event_id not in stored, f"forgotten event {event_id} is still there"
                continue
            assert event_id in stored, f"acknowledged event {event_id} is missing"
            assert stored[event_id]["sequence"] == sequence
            assert text_counts[worker.texts[event_id]] == 1, f"{event_id} is stored more than once"


def load_test(db: str, suite: str, ops: int) -> None:
    seed = random.randrange(2**32)
    workers, seconds = run_load(db, ops, seed)
    try:
        check(db, workers)
    except AssertionError as exc:
        raise AssertionError(f"seed {seed}: {exc}") from exc
    counts = sum((w.counts for w in workers), Counter())
    report(
        suite,
        seed=seed,
        processes=WORKERS,
        operations=sum(counts.values()),
        **{f"{name} calls": counts[name] for name in ("shared record", *MIX)},
        events_acknowledged=sum(len(w.acked) for w in workers),
        events_forgotten=sum(len(w.forgotten) for w in workers),
        failed_calls=0,
        lost_or_duplicated_events=0,
        seconds=round(seconds, 1),
    )


def test_eight_servers_on_one_archive_lose_duplicate_and_refuse_nothing(archive_target: str, backend: str):
    load_test(archive_target, f"concurrency (default, {backend})", ops=30)


@pytest.mark.slow
def test_eight_servers_under_long_load_lose_duplicate_and_refuse_nothing(archive_target: str, backend: str):
    load_test(archive_target, f"concurrency (long, {backend})", ops=1000)


# -- with pgvector: the vectors of what 8 servers record at once ------------------------------------

VECTOR_RECORDS = 20


def record_and_await_vectors(db: str, env: dict[str, str], number: int, start: threading.Barrier) -> list[str]:
    """One server's client: record VECTOR_RECORDS events once all are connected, then ask deep recall
    until its scope has no event without a vector (the servers embed in the background). Its errors."""
    errors: list[str] = []
    scope = SCOPES[number % 2]
    try:
        with connected(stdio_params(db, **env)) as client:
            start.wait(timeout=120)
            for index in range(VECTOR_RECORDS):
                text = f"worker {number} note {index} {WORDS[index % len(WORDS)]} {WORDS[(number + index) % 10]}"
                result = client.call("memory_record", event_id=f"v{number}-{index}", text=text, role="user",
                                     source="load", session_id=f"s{number}", **scope)  # fmt: skip
                if result.is_error:
                    errors.append(f"memory_record: {result.content[0].text}")
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                found = client.call("memory_recall", query=f"worker {number} note", search_mode="deep", **scope)
                if found.is_error:
                    errors.append(f"memory_recall: {found.content[0].text}")
                    break
                if found.structured_content["coverage"]["events_without_vectors"] == 0:
                    break
            else:
                errors.append(f"worker {number}: events still without a vector after 120 s")
    except Exception as exc:  # the assertion in the test names it
        errors.append(f"client failed: {exc!r}")
    return errors


@pytest.mark.vectors
def test_eight_servers_recording_at_once_on_pgvector_lose_nothing_and_every_event_gets_its_vector(
    pgvector_url: str,
) -> None:
    outcomes: list[list[str]] = [[] for _ in range(WORKERS)]
    start = threading.Barrier(WORKERS)
    with ScriptedOpenAI() as api:
        api.dim = 384  # a dimension with an HNSW index (pg_schema.PGVECTOR_DIMS): every write goes into it
        env = {**BASE_ENV, "MEMLIKEHUMAN_EMBEDDER": "openai", "MEMLIKEHUMAN_EMBEDDER_BASE_URL": api.base_url,
               "MEMLIKEHUMAN_EMBEDDER_MODEL": "m"}  # fmt: skip

        def drive_one(number: int) -> None:
            outcomes[number] = record_and_await_vectors(pgvector_url, env, number, start)

        threads = [threading.Thread(target=drive_one, args=(n,)) for n in range(WORKERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
    assert [e for errors in outcomes for e in errors] == []
    stored = {r["event_id"] for r in rows(pgvector_url, "SELECT event_id FROM events")}
    expected = {f"v{n}-{i}" for n in range(WORKERS) for i in range(VECTOR_RECORDS)}
    assert expected - stored == set(), "acknowledged events are missing"
    vectors = rows(
        pgvector_url,
        "SELECT count(*) AS n, count(embedding) AS embedded, count(vector) AS bytea FROM event_vectors"
        " WHERE model = 'openai:m' AND dim = 384",
    )[0]
    assert (vectors["n"], vectors["embedded"], vectors["bytea"]) == (len(expected), len(expected), 0)
    assert archive_problems(pgvector_url) == []
