"""The process the crash suite kills: an Engine on the archive that runs one operation per message.

It runs in a child of a fork server that has already imported memlikehuman and the openai SDK, so
a new victim costs milliseconds instead of a second of imports. ``kill_at`` > 0 arms a SQLite
progress handler that SIGKILLs the process itself at that tick, i.e. inside a statement, at an
arbitrary instruction of a read, a write or a COMMIT.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import apsw

from memlikehuman import config
from memlikehuman.archive import checkpoints
from memlikehuman.engine import Engine
from memlikehuman.errors import MemLikeHumanError
from memlikehuman.lifecycle import correct, forget
from memlikehuman.records import Scope

TICK = 25  # SQLite virtual-machine instructions between two progress-handler calls


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


def main(conn: Connection, db_path: str, env: dict[str, str], kill_at: int) -> None:
    engine = Engine(config.load(db_path, env=env))
    if kill_at:
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
    apsw.connection_hooks.append(lambda connection: connection.set_progress_handler(killer(kill_at), TICK))
    Engine(config.load(db_path, env=env)).close()
    conn.send(("opened", os.getpid()))
