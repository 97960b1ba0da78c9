"""The process the crash suite kills: an Engine on the archive that runs one operation per message.

It runs in a child of a fork server that has already imported memlikehuman and the openai SDK, so
a new victim costs milliseconds instead of a second of imports. ``kill_at`` > 0 arms a counter
that SIGKILLs the process itself at that tick. On SQLite the tick is a progress-handler call, so
the kill lands inside a statement, at an arbitrary instruction of a read, a write or a COMMIT. On
PostgreSQL the statements run in the server's processes, which the kill does not touch; the tick
is a function call inside psycopg (a profile hook), so the kill lands anywhere in the victim's
conversation with the server: before a statement is sent, while its answer is awaited, between
the statements of a transaction, before or after its COMMIT is sent.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import apsw

from memlikehuman import config
from memlikehuman.archive import checkpoints
from memlikehuman.archive.db import is_url
from memlikehuman.engine import Engine
from memlikehuman.errors import MemLikeHumanError
from memlikehuman.lifecycle import correct, forget
from memlikehuman.records import Scope

TICK = 25  # SQLite virtual-machine instructions between two progress-handler calls
# Function calls inside psycopg per tick on PostgreSQL: measured, an operation then takes about as many
# ticks as on SQLite (records ~200 with their extraction, corrections and forgets ~110, checkpoints ~20).
PSYCOPG_CALLS = 32


def run_op(engine: Engine, op: tuple[Any, ...]) -> dict[str, Any]:
    """Do one operation the way its tool does; return what the tool would acknowledge."""
    name, scope = op[0], Scope(*op[1])
    if name == "record":
        out = engine.record(scope, **op[2])
        return {"sequence": out.sequence, "state": out.extraction_state, "memory_ids": list(out.memory_ids)}
    if name == "correct":
        fixed = correct.correct(engine.db, scope, op[2], op[3], op[4])
        return {"replacement_id": fixed.replacement_id, "correction_event_id": fixed.correction_event_id}
    if name == "forget":
        gone = forget.forget(engine.db, scope, op[2])
        return {
            "deleted_event_ids": list(gone.deleted_event_ids),
            "deleted_memory_ids": list(gone.deleted_memory_ids),
            "scrubbed": gone.scrubbed,
        }
    if name == "checkpoint":
        saved = checkpoints.create(engine.db, scope, {"goal": op[4]}, op[2], op[3])
        return {"checkpoint_id": saved.checkpoint_id}
    raise ValueError(f"unknown operation {name}")


def killer(kill_at: int) -> Callable[[], bool]:
    """A progress handler that SIGKILLs this process at its ``kill_at``-th call."""
    ticks = 0

    def tick() -> bool:
        nonlocal ticks
        ticks += 1
        if ticks >= kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return False

    return tick


def arm_psycopg(kill_at: int) -> None:
    """Call ``killer(kill_at)`` at every PSYCOPG_CALLS-th function call made inside psycopg, in every thread."""
    tick = killer(kill_at)
    calls = 0

    def profile(frame: Any, event: str, _arg: Any) -> None:
        nonlocal calls
        if event in ("call", "c_call") and "psycopg" in frame.f_code.co_filename:
            calls += 1
            if calls % PSYCOPG_CALLS == 0:
                tick()

    sys.setprofile(profile)
    threading.setprofile(profile)  # the extraction worker and the indexer start later


def main(conn: Connection, db_path: str, env: dict[str, str], kill_at: int) -> None:
    engine = Engine(config.load(db_path, env=env))
    if kill_at and is_url(db_path):
        arm_psycopg(kill_at)
    elif kill_at:
        engine.db.conn.set_progress_handler(killer(kill_at), TICK)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            op = conn.recv()
        except EOFError:
            break
        try:
            conn.send(("ok", run_op(engine, op)))
        except MemLikeHumanError as exc:
            conn.send(("error", exc.code, str(exc)))
    engine.close()


def open_archive(conn: Connection, db_path: str, env: dict[str, str], kill_at: int) -> None:
    """Open (and so create and migrate) an archive; every connection is armed from its first statement."""
    if is_url(db_path):
        arm_psycopg(kill_at)
    else:
        apsw.connection_hooks.append(lambda connection: connection.set_progress_handler(killer(kill_at), TICK))
    Engine(config.load(db_path, env=env)).close()
    conn.send(("opened", os.getpid()))
