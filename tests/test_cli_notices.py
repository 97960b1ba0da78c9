"""Standing warnings (pending extraction, ...) said once per terminal session and day; the query's own always."""

from __future__ import annotations

import stat
from pathlib import Path

from cli_support import cli
from conftest import make_settings
from terminal_support import at_terminal

from memlikehuman.archive import events
from memlikehuman.engine import Engine
from memlikehuman.records import Scope

PENDING = "warning: 1 event in scope is pending extraction"
DEGRADED = "warning: search_mode semantic was not possible"


def archive_with_a_pending_event(tmp_path: Path) -> Path:
    db = tmp_path / "a.sqlite3"
    with Engine(make_settings(db)) as engine:
        engine.record(Scope(), "e1", "The boiler is serviced in May", "user", "chat")
    return db


def recall(db: Path, *more: str, new_session: bool = False) -> str:
    typed = at_terminal("--db", str(db), "recall", "boiler", *more, new_session=new_session)
    assert typed.returncode == 0, typed.screen
    assert "1 events in scope, 1 pending and 0 failed extraction" in typed.screen  # the counts, every time
    return typed.screen


def test_a_standing_warning_is_said_once_per_terminal_session_and_the_querys_own_every_time(tmp_path: Path) -> None:
    db = archive_with_a_pending_event(tmp_path)
    first = recall(db, "--mode", "semantic")
    second = recall(db, "--mode", "semantic")
    assert PENDING in first and PENDING not in second
    assert DEGRADED in first and DEGRADED in second  # no embedder: about this query, said each time
    assert PENDING in recall(db, new_session=True)  # another terminal


def test_a_standing_warning_that_went_away_is_said_again_when_it_comes_back(tmp_path: Path) -> None:
    db = archive_with_a_pending_event(tmp_path)
    assert PENDING in recall(db)
    with Engine(make_settings(db)) as engine:
        events.set_state(engine.db, events.find(engine.db, Scope(), "e1").sequence, "complete", None)
        gone = at_terminal("--db", str(db), "recall", "boiler")
        assert "warning" not in gone.screen
        engine.record(Scope(), "e2", "The boiler needs a new valve", "user", "chat")
    again = at_terminal("--db", str(db), "recall", "boiler")
    assert PENDING in again.screen


def test_without_a_terminal_every_warning_is_said_every_time(tmp_path: Path) -> None:
    db = archive_with_a_pending_event(tmp_path)
    for _ in range(2):
        assert PENDING in cli(db, "recall", "boiler").stderr
    assert not (tmp_path / "a.sqlite3.cli.json").exists()


def test_what_was_said_is_kept_owner_only_beside_the_archive_without_text(tmp_path: Path) -> None:
    db = archive_with_a_pending_event(tmp_path)
    recall(db)
    kept = tmp_path / "a.sqlite3.cli.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert "boiler" not in kept.read_text() and "pending" in kept.read_text()
