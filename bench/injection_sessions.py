"""The prompt hook over a multi-session coding workload: are facts handed over, or echoes?

Part of `python -m bench.injection`. Each fact of bench/injection_set.py is stated once in a session
of its own (the assistant acknowledges it); its follow-up question is asked in three later sessions,
each answered with the fact; six facts are changed later (CHANGES). A stand-in for the agent's model
follows the instructions literally: when the prompt hook names the turn it recorded, it attaches a
memory of the statement to that very event (memory_record, same ID). Then each follow-up is asked
once more in a new session, and each unrelated prompt once, through the real hook command. On the
report half (facts 12-23; the first half is never used to choose anything):
- facts: hit@injected of the current fact (its statement, or the change where there is one, a memory
  of it, or an answer that states it, among the injected records);
- repeated questions: the share of injected records that say the same as one of the user's own
  earlier questions;
- noise: the share of unrelated prompts that got any record injected;
- characters of injected context per prompt (the line naming the recorded turn included);
- memories made: the share of statements the stand-in could attach a memory to.
Every version of the hook (this checkout, and --baseline REV pip-installed like bench.hooks does) runs
the same workload in an archive of its own, fast (no server) and semantic (its own `serve` running).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import injection_set
from bench.report import table
from memlikehuman import config
from memlikehuman.engine import Engine
from memlikehuman.errors import MemLikeHumanError
from memlikehuman.hosts.hook import event_id
from memlikehuman.records import Scope
from memlikehuman.retrieval.echoes import same_words

HOST = "claude-code"
SCOPE = Scope("default", "coding")
ENV = {"MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent", "PATH": "/usr/bin:/bin"}
ASKED = 3  # earlier sessions that asked each follow-up
_OLD_LINE = re.compile(r"^- (event|memory) (\S+) \([^)]*\): (.*)$", re.MULTILINE)
_NOTE = re.compile(r"This prompt is recorded as (\{.*?\}):")


@dataclass
class Version:
    """One hook to measure: its console script, its archive, what the stand-in attached."""

    name: str
    script: Path
    db: Path
    memories: dict[int, str] = field(default_factory=dict)  # fact index -> memory ID of its current statement
    attempts: int = 0
    made: int = 0

    def ask(self, session: str, extra: dict[str, str], prompt: str) -> str:
        """A prompt of the measurement: its injected context; the prompt is forgotten after it, so that no
        question (nor a warm-up) is injected for a later one."""
        context = self.hook("UserPromptSubmit", session, extra, prompt=prompt)
        with Engine(config.load(self.db, env={**ENV, "MEMLIKEHUMAN_EMBEDDER": "none"})) as engine:
            engine.forget(SCOPE, event_id(HOST, session, "user", prompt))
        return context

    def hook(self, event: str, session: str, extra: dict[str, str], **fields: str) -> str:
        payload = {"session_id": session, "cwd": "/", "hook_event_name": event, **fields}
        argv = [str(self.script), "hook", HOST, "--persona", SCOPE.persona_id, "--project", SCOPE.project_id]
        env = {**ENV, "MEMLIKEHUMAN_DB": str(self.db), "MEMLIKEHUMAN_EMBEDDER": "none", **extra}
        done = subprocess.run(argv, input=json.dumps(payload).encode(), env=env, capture_output=True, check=True)
        text = done.stdout.decode().strip()
        return json.loads(text)["hookSpecificOutput"]["additionalContext"] if text.startswith("{") else ""


def records(context: str) -> list[dict[str, Any]]:
    """The injected records: the JSON lines of the data block, or the `- event ID (...): text` lines of old."""
    lines = context.splitlines()
    opening = next(
        (i for i, line in enumerate(lines) if line.startswith("«DATA ") and line.endswith(" recalled»")), None
    )
    if opening is not None:
        boundary = lines[opening].split()[1]
        closing = lines.index(f"«END {boundary} recalled»")
        return [json.loads(line) for line in lines[opening + 1 : closing]]
    return [
        {"memory_id": rid, "content": text} if kind == "memory" else {"event_id": rid, "text": text}
        for kind, rid, text in _OLD_LINE.findall(context)
    ]


def _state(version: Version, fact: int, text: str, session: str, extra: dict[str, str]) -> None:
    """The user states (or changes) a fact; the stand-in attaches a memory where the hook names the turn."""
    context = version.hook("UserPromptSubmit", session, extra, prompt=text)
    version.attempts += 1
    note = _NOTE.search(context)
    if note is not None:
        turn = json.loads(note.group(1))
        memory = {"content": f"The user said: {text}", "quote": text, "kind": "fact", "subject": f"user.fact_{fact}"}
        with Engine(config.load(version.db, env={**ENV, "MEMLIKEHUMAN_EMBEDDER": "none"})) as engine:
            try:
                done = engine.record(Scope(turn["persona_id"], turn["project_id"]), turn["event_id"], text, "user",
                                     turn["source"], session_id=turn["session_id"], memories=[memory])  # fmt: skip
                if done.memory_ids:
                    version.memories[fact] = done.memory_ids[0]
                    version.made += 1
            except MemLikeHumanError:
                pass
    ack = injection_set.ACKNOWLEDGEMENTS[fact % len(injection_set.ACKNOWLEDGEMENTS)]
    version.hook("Stop", session, extra, last_assistant_message=ack)


def build(version: Version) -> None:
    """The workload's earlier sessions, recorded through the version's own hook (fast: no server yet)."""
    fast = {"MEMLIKEHUMAN_INJECT_SEARCH": "fast"}
    for i, fact in enumerate(injection_set.FACTS):
        _state(version, i, fact, f"fact-{i}", fast)
    for k in range(ASKED):
        for i, question in injection_set.FOLLOW_UPS:
            session = f"ask-{k}-{i}"
            version.hook("UserPromptSubmit", session, fast, prompt=question)
            version.hook("Stop", session, fast, last_assistant_message=injection_set.ANSWERS[i])
    for i, change in injection_set.CHANGES.items():
        _state(version, i, change, f"change-{i}", fast)


@dataclass
class Outcome:
    hits: list[bool] = field(default_factory=list)
    repeats: list[bool] = field(default_factory=list)  # per injected record: it repeats a question of the user's
    noise: list[bool] = field(default_factory=list)
    chars: list[int] = field(default_factory=list)


def _gold(version: Version, i: int) -> set[str]:
    """What states fact i as it stands now: its statement (or change), a memory of it, its answers (unchanged)."""
    if i in injection_set.CHANGES:
        found = {event_id(HOST, f"change-{i}", "user", injection_set.CHANGES[i])}
    else:
        found = {event_id(HOST, f"fact-{i}", "user", injection_set.FACTS[i])}
        found |= {event_id(HOST, f"ask-{k}-{i}", "assistant", injection_set.ANSWERS[i]) for k in range(ASKED)}
    return found | ({version.memories[i]} if version.memories.get(i) else set())


def measure(version: Version, extra: dict[str, str], label: str) -> Outcome:
    """The report half: each follow-up once more, each unrelated prompt once, in new sessions."""
    out = Outcome()
    half = len(injection_set.FOLLOW_UPS) // 2
    questions = {same_words(q) for _, q in injection_set.FOLLOW_UPS}
    for i, question in injection_set.FOLLOW_UPS[half:]:
        context = version.ask(f"final-{label}-{i}", extra, question)
        found = records(context)
        ids = {r.get("memory_id") or r.get("event_id") for r in found}
        out.hits.append(bool(ids & _gold(version, i)))
        out.repeats += [same_words(r.get("text") or r.get("content") or "") in questions for r in found]
        out.chars.append(len(context))
    for j, prompt in enumerate(injection_set.UNRELATED[half:]):
        context = version.ask(f"other-{label}-{j}", extra, prompt)
        out.noise.append(bool(records(context)))
        out.chars.append(len(context))
    return out


@contextmanager
def serving(version: Version) -> Iterator[None]:
    """The version's own `serve` with the local embedder, warm (its first semantic answer came back)."""
    env = {**ENV, "MEMLIKEHUMAN_DB": str(version.db), "MEMLIKEHUMAN_EMBEDDER": "local"}
    process = subprocess.Popen([str(version.script), "serve"], stdin=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env=env)  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        for n in range(10**6):  # a session of its own each time: what one injected is not injected again in it
            if "by semantic search" in version.ask(f"warm-up-{n}", {}, "pnpm lodash"):
                break
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit(f"{version.name}: serve never answered semantically")
            time.sleep(1)
        yield
    finally:
        process.terminate()
        process.wait(30)


def run(version: Version) -> dict[str, Outcome]:
    # A fresh archive each run: a kept one holds the tombstones of the last run's forgotten prompts, which
    # would keep the same prompts out of this one.
    for kept in version.db.parent.glob(f"{version.db.name}*"):
        kept.unlink()
    build(version)
    results = {"fast": measure(version, {"MEMLIKEHUMAN_INJECT_SEARCH": "fast"}, "fast")}
    with serving(version):
        results["semantic"] = measure(version, {}, "semantic")
    return results


def _share(values: list[bool]) -> str:
    return f"{sum(values) / len(values):.2f}" if values else "-"


def render(results: dict[str, tuple[Version, dict[str, Outcome]]]) -> str:
    rows = []
    for name, (version, by_mode) in results.items():
        made = f"{version.made}/{version.attempts}"
        for mode, out in by_mode.items():
            chars = f"{sum(out.chars) / max(len(out.chars), 1):.0f}"
            rows.append([name, mode, _share(out.hits), _share(out.repeats), _share(out.noise), chars, made])
    headers = ["hook", "search", "facts: hit@injected", "repeated questions (of injected)", "unrelated: noise",
               "chars/prompt", "memories made"]  # fmt: skip
    return (
        "Multi-session coding workload (bench/injection_sessions.py): 24 facts stated once, each follow-up asked"
        f" in {ASKED} earlier sessions and answered, 6 facts changed later, a stand-in that attaches the memories"
        " the hook's line asks for; report half (12 follow-ups, 12 unrelated prompts), each version in its own"
        " archive.\n\n" + table(headers, rows)
    )
