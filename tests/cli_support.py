"""Helpers for the CLI tests: run `memlikehuman` in-process and build archives with known contents."""

from __future__ import annotations

import contextlib
import json
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from conftest import BASE_ENV, make_settings

from memlikehuman.archive import checkpoints, events, memories, personas
from memlikehuman.cli import main
from memlikehuman.engine import Engine
from memlikehuman.lifecycle import correct, forget
from memlikehuman.records import Candidate, Scope

REPOSITORY = Path(__file__).resolve().parent.parent
UNICODE_TEXTS = (
    "Emoji 🎉👩‍👩‍👧 and a flag 🇵🇹 in one line",
    "العربية: أنا أعيش في لشبونة منذ سنتين",  # right-to-left
    "中文：我住在里斯本。日本語：リスボンに住んでいます。한국어도 있어요",
    "Ünïcödé with combining marks: e\u0301 a\u0308, and\ttabs\nand newlines\r\nand a U+2028\u2028separator",
)
LARGE_TEXT = ("Lorem ipsum dolor sit amet, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 consectetur adipiscing elit. " * 4000)[:200_000]


def cli(
    db: Path, *args: str, env: dict[str, str] | None = None, input: bytes | None = None, cwd: Path | None = None
) -> Result:
    """Invoke `memlikehuman --db DB ARGS...` in-process with the test providers (none), in `cwd`.

    Without `cwd`, in the test's working directory; while that is still in this repository (a project
    folder) in the file-system root instead, which is no project folder: a command without --project
    then keeps its own default scope."""
    here = Path.cwd()
    with contextlib.chdir(cwd or ("/" if here.is_relative_to(REPOSITORY) else here)):
        return CliRunner().invoke(main, ["--db", str(db), *args], env={**BASE_ENV, **(env or {})}, input=input)


def json_out(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def closed_port() -> int:
    """A 127.0.0.1 port that nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def candidate(content: str, quote: str, subject: str | None = None, valid_from: str = "2026-01-01T00:00:00Z") -> Any:
    return Candidate(content, quote, "fact", "stated", subject, valid_from.replace("Z", ".000000Z"))


@dataclass(frozen=True)
class Populated:
    """What `populate` stored."""

    scope: Scope
    other: Scope
    revoked_id: str
    replacement_id: str


def populate(db: Path, **env: str) -> Populated:
    """An archive with every record type, through the public core functions.

    Scope (alice, garden): the unicode events and a 200,000-character one, cues, a forgotten event
    (a gap in the sequences), two versions of a fact (one superseded), a correction (one revoked
    memory and its replacement), an invalidated and a valid checkpoint, two core persona versions.
    Scope (bob, work): one event and a valid checkpoint.
    """
    scope, other = Scope("alice", "garden"), Scope("bob", "work")
    with Engine(make_settings(db, **env)) as engine:
        cues = [{"kind": "photo", "key": "IMG_0042.jpg", "label": "roses 🌹"}, {"kind": "text", "key": "note-1"}]
        for i, text in enumerate(UNICODE_TEXTS):
            engine.record(scope, f"u{i}", text, "user", "chat", session_id="s1", cues=cues if i == 0 else None)
        engine.record(scope, "gone", "to be forgotten", "user", "chat", session_id="s1")
        forget.forget(engine.db, scope, "gone")
        engine.record(
            scope, "big", LARGE_TEXT, "assistant", "chat", session_id="s2", occurred_at="2026-03-01T10:00:00+02:00"
        )
        engine.record(scope, "home1", "I live in Lisbon", "user", "chat", session_id="s2")
        engine.record(scope, "home2", "Now I live in Porto", "user", "chat", session_id="s2")
        first = events.find(engine.db, scope, "home1")
        second = events.find(engine.db, scope, "home2")
        memories.store(
            engine.db, first, [candidate("Alice lives in Lisbon", "I live in Lisbon", "alice.home")], first.recorded_at
        )
        memories.store(
            engine.db,
            second,
            [candidate("Alice lives in Porto", "I live in Porto", "alice.home", "2026-06-01T00:00:00Z")],
            second.recorded_at,
        )
        ids = tuple(m.memory_id for m in memories.current(engine.db, scope))
        checkpoints.create(engine.db, scope, {"goal": "plant roses", "pending": ["buy soil"]}, "home2", "s2")
        corrected = correct.correct(engine.db, scope, ids[0], "Alice lives in Porto, Portugal", "more precise")
        checkpoints.create(engine.db, scope, {"goal": "plant roses 🌹", "completed": ["buy soil"]}, "home2", "s2")
        personas.set_text(engine.db, "alice", "You are Alice's gardening helper.")
        personas.set_text(engine.db, "alice", "You are Alice's patient gardening helper.")
        engine.record(other, "w1", "Quarterly report due Friday", "user", "mail")
        checkpoints.create(engine.db, other, {"goal": "write the report"}, "w1", "default")
    return Populated(scope, other, ids[0], corrected.replacement_id)


def export_text(db: Path, *args: str) -> str:
    result = cli(db, "export", *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def body(export: str) -> list[str]:
    """The lines of an export without its header (whose exported_at differs between runs)."""
    lines = export.split("\n")
    assert json.loads(lines[0])["type"] == "header"
    return lines[1:]
