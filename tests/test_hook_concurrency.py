"""A hook and two running `memlikehuman serve` processes write one archive at the same time.

Two MCP clients record through their own server processes while a third thread runs the Claude Code
hook as a host does (prompt, then stop, each a new process), all in one scope, all at once. Afterwards
every acknowledged event is present exactly once, every hook turn is stored, no call failed and no
hook left a failure line: no `database is locked` reached anyone.
"""

from __future__ import annotations

import threading
from pathlib import Path

from conftest import connected, stdio_params
from hook_support import Archive, hook_archive, side_file, spawn_hook, stored

SERVER_EVENTS = 25
HOOK_TURNS = 10
SCOPE = {"persona_id": "default", "project_id": "shared"}
__all__ = ["hook_archive"]  # the `db` fixture: each backend in turn


def test_a_hook_and_two_servers_write_one_archive_without_losing_anything(tmp_path: Path, db: Archive) -> None:
    project = tmp_path / "app"
    project.mkdir()
    start = threading.Barrier(3)
    acked: dict[str, list[str]] = {"a": [], "b": []}
    problems: list[str] = []

    def serve(name: str) -> None:
        try:
            with connected(stdio_params(db)) as client:
                start.wait(timeout=60)
                for number in range(SERVER_EVENTS):
                    event_id = f"{name}-{number}"
                    result = client.call("memory_record", event_id=event_id, text=f"server {name} note {number}",
                                         role="user", source=name, session_id=name, **SCOPE)  # fmt: skip
                    if result.is_error:
                        problems.append(f"{event_id}: {result.content[0].text}")
                    else:
                        acked[name].append(event_id)
                    if number % 5 == 0:
                        found = client.call("memory_recall", query="note", **SCOPE)
                        if found.is_error:
                            problems.append(f"recall: {found.content[0].text}")
        except Exception as exc:  # a thread's top level: report, let the test fail
            problems.append(f"server {name}: {exc!r}")

    def hooks() -> None:
        start.wait(timeout=60)
        base = {"session_id": "hooked", "cwd": str(project), "transcript_path": ""}
        for turn in range(HOOK_TURNS):
            for event, field, text in (
                ("UserPromptSubmit", "prompt", f"hook prompt {turn}"),
                ("Stop", "last_assistant_message", f"hook reply {turn}"),
            ):
                # A process per hook, as a host starts them: what is tested is processes contending for the
                # archive's locks (SQLite's POSIX locks are per process).
                ran = spawn_hook("claude-code", {**base, "hook_event_name": event, field: text}, db, project,
                                 "--project", "shared")  # fmt: skip
                if ran.returncode or ran.stderr:
                    problems.append(f"hook {event} {turn}: {ran.returncode} {ran.stderr.strip()}")

    threads = [threading.Thread(target=serve, args=(n,)) for n in acked] + [threading.Thread(target=hooks)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert problems == []
    events = stored(db)
    ids = [e["event_id"] for e in events]
    assert len(ids) == len(set(ids))
    for name, recorded in acked.items():
        assert len(recorded) == SERVER_EVENTS
        assert set(recorded) <= set(ids), name
    hooked = sorted(e["text"] for e in events if e["session_id"] == "hooked")
    expected = sorted([f"hook prompt {t}" for t in range(HOOK_TURNS)] + [f"hook reply {t}" for t in range(HOOK_TURNS)])
    assert hooked == expected
    assert {e["project_id"] for e in events} == {"shared"}
    assert not side_file(db, ".hooks.log").exists()
