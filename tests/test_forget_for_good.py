"""A forgotten record never comes back: not through a history import, a hook sent again, an older export or
a retry (the tombstones), and no copy of it stays in the files when another program read the archive."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import sqlite3
from pathlib import Path
from typing import Any

import apsw
import pytest
from click.testing import CliRunner, Result
from conftest import BASE_ENV, add_memory, connected, make_settings, stdio_params
from hook_support import Archive, hook_archive, run_hook, side_file, stored  # noqa: F401 (the `db` fixture)
from test_forget import HELD_WAIT, file_hits
from test_hook_hosts import payload

from memlikehuman.admin.doctor import diagnose
from memlikehuman.archive.db import open_database
from memlikehuman.cli import main
from memlikehuman.engine import Engine
from memlikehuman.records import Scope

HISTORY = Path(__file__).parent / "history_fixtures"
DEFAULT = Scope()


def cli(db: Path | str, *args: str, stdin: str | None = None) -> Result:
    with contextlib.chdir("/"):  # no project folder: export writes the whole archive (cli_support.cli)
        return CliRunner().invoke(main, ["--db", str(db), *args], env=BASE_ENV, input=stdin)


def texts(db: Path | str) -> list[str]:
    found = open_database(db)
    try:
        return [row["text"] for row in found.query("SELECT text FROM events ORDER BY sequence")]
    finally:
        found.close()


def forget_event(db: Path | str, text: str) -> str:
    """Forget the event with this text (in its own scope); its ID."""
    with Engine(make_settings(db)) as engine:
        row = engine.db.one("SELECT event_id, persona_id, project_id FROM events WHERE text = ?", (text,))
        assert row is not None
        engine.forget(Scope(row["persona_id"], row["project_id"]), row["event_id"])
        return str(row["event_id"])


@pytest.mark.parametrize(
    ("history", "forgotten"),
    [
        ("claude-code", "All 42 tests pass."),
        ("chatgpt/conversations.json", "I am planning a trip to Lisbon in March."),
        ("claude-ai/conversations.json", None),
    ],
)
def test_a_history_imported_again_after_a_turn_was_forgotten_keeps_that_turn_gone_and_the_rest(
    db_path: Path | str, history: str, forgotten: str | None
) -> None:
    source = str(HISTORY / history)
    assert cli(db_path, "import", source, "--json").exit_code == 0
    before = texts(db_path)
    forgotten = forgotten or before[1]
    forget_event(db_path, forgotten)
    again = cli(db_path, "import", source, "--json")
    assert again.exit_code == 0, again.output
    found = json.loads(again.stdout)
    assert (found["added"], found["unchanged"]) == (0, len(before) - 1)
    assert found["skipped"]["forgotten (memory_forget)"] == 1
    assert texts(db_path) == [text for text in before if text != forgotten]


def test_memory_record_of_a_forgotten_event_is_a_conflict_that_says_so_and_a_new_id_records_it(client):
    client.ok("memory_record", event_id="e1", text="My PIN is 4711.", role="user", source="chat")
    client.ok("memory_forget", record_id="e1")
    error = client.error("memory_record", event_id="e1", text="My PIN is 4711.", role="user", source="chat")
    assert error.startswith("conflict: event_id 'e1' was forgotten with memory_forget")
    given = {"content": "The user's PIN is 4711", "quote": "PIN is 4711"}
    again = client.error("memory_record", event_id="e1", text="x y", role="user", source="chat", memories=[given])
    assert again.startswith("conflict:")
    assert client.ok("memory_record", event_id="e2", text="My PIN is 4711.", role="user", source="chat")["sequence"]


def test_a_host_sending_a_forgotten_prompt_again_stores_nothing_and_its_hook_answers_as_usual(
    db: Archive, project: Path
) -> None:
    prompt = payload("claude-code", "UserPromptSubmit", project, prompt="My locker code is 90210, remember it")
    assert run_hook("claude-code", prompt, db, project).returncode == 0
    (event,) = stored(db)
    with Engine(make_settings(db)) as engine:
        engine.forget(Scope(event["persona_id"], event["project_id"]), event["event_id"])
    ran = run_hook("claude-code", prompt, db, project)
    assert ran.returncode == 0 and "error" not in ran.stderr.lower()
    assert stored(db) == []
    log = side_file(db, ".hooks.log")
    assert not log.exists() or "90210" not in log.read_text() and "Forgotten" not in log.read_text()


def test_an_older_export_imported_after_a_forget_skips_what_was_forgotten_and_says_how_many(
    client: Any, db_path: Path | str, tmp_path: Path
) -> None:
    for event_id, text in (("e1", "My bank PIN is 4711."), ("e2", "I like tea."), ("e3", "I like coffee.")):
        client.ok("memory_record", event_id=event_id, text=text, role="user", source="chat")
    pin = add_memory(db_path, "e1", "The user's bank PIN is 4711", quote="PIN is 4711", subject="user.pin")
    add_memory(db_path, "e2", "The user likes tea", quote="I like tea")
    client.ok("memory_correct", memory_id=pin, content="The user's bank PIN is 4712", reason="typo")
    client.ok("session_checkpoint", state={"goal": "PIN 4711"}, covered_event_id="e1")
    exported = tmp_path / "archive.jsonl"
    assert cli(db_path, "export", "-o", str(exported)).exit_code == 0
    client.ok("memory_forget", record_id="e1")
    again = cli(db_path, "import", str(exported), "--json")
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert report["forgotten"] == {"event": 2, "memory": 2, "correction": 1, "checkpoint": 1}
    assert report["written"] and sum(report["added"].values()) == 0
    assert texts(db_path) == ["I like tea.", "I like coffee."]
    shown = cli(db_path, "import", str(exported))
    assert "skipped as forgotten" in shown.stderr and "2 event" in shown.stderr


def test_dropping_the_tombstones_says_what_it_gives_up_and_lets_an_import_bring_the_record_back(
    client: Any, db_path: Path | str, tmp_path: Path
) -> None:
    client.ok("memory_record", event_id="e1", text="My bank PIN is 4711.", role="user", source="chat")
    exported = tmp_path / "archive.jsonl"
    assert cli(db_path, "export", "-o", str(exported)).exit_code == 0
    client.ok("memory_forget", record_id="e1")
    assert json.loads(cli(db_path, "tombstones", "--json").stdout) == {"tombstones": 1}
    assert json.loads(cli(db_path, "import", str(exported), "--json").stdout)["forgotten"] == {"event": 1}
    dropped = cli(db_path, "tombstones", "--drop", "--yes")
    assert dropped.exit_code == 0 and "can then be stored again" in dropped.stderr
    assert json.loads(cli(db_path, "import", str(exported), "--json").stdout)["added"]["event"] == 1
    assert texts(db_path) == ["My bank PIN is 4711."]


def test_a_tombstone_is_the_keyed_digest_of_the_id_under_the_archives_own_key_and_holds_no_text(client, db_path):
    client.ok("memory_record", event_id="e1", text="My bank PIN is 4711.", role="user", source="chat")
    memory = add_memory(db_path, "e1", "The user's bank PIN is 4711", quote="PIN is 4711")
    client.ok("memory_forget", record_id="e1")
    db = open_database(db_path)
    try:
        key = bytes.fromhex(str(db.scalar("SELECT value FROM archive_meta WHERE name = 'tombstone_key'")))
        digests = {row["digest"] for row in db.query("SELECT digest FROM tombstones")}
    finally:
        db.close()
    assert len(key) == 32
    assert digests == {hmac.new(key, i.encode(), hashlib.sha256).hexdigest() for i in ("e1", memory)}
    assert hashlib.sha256(b"e1").hexdigest() not in digests


@pytest.mark.sqlite_only  # SQLite's files and POSIX locks
def test_after_pythons_sqlite3_reads_the_archive_between_two_forgets_no_text_stays_in_any_file_while_the_server_runs(
    db_path: Path,
) -> None:
    with connected(stdio_params(db_path)) as server:  # locks are a process's: the server must be another one
        for n in range(20):
            server.ok("memory_record", event_id=f"f{n}", text=f"Filler {n} about the garden.", role="user", source="c")
        for event_id, secret in (("s1", "zqxalpha71e3c9"), ("s2", "zqxbeta5d02f11")):
            server.ok("memory_record", event_id=event_id, text=f"My secret is {secret}.", role="user", source="c")
        reader = sqlite3.connect(str(db_path))  # another SQLite (the stdlib's), as a user's script reads it
        assert reader.execute("SELECT count(*) FROM events").fetchone() == (22,)
        reader.close()
        first = server.ok("memory_forget", record_id="s1")
        reader = sqlite3.connect(str(db_path))
        assert reader.execute("SELECT count(*) FROM events").fetchone() == (21,)
        reader.close()
        second = server.ok("memory_forget", record_id="s2")
        assert first["warnings"] == [] and second["warnings"] == []
        left = {secret: file_hits(db_path, secret) for secret in ("zqxalpha71e3c9", "zqxbeta5d02f11")}
        assert all(sum(hits.values()) == 0 for hits in left.values()), left
        assert Path(f"{db_path}-wal").exists() and Path(f"{db_path}-shm").exists()  # still the server's


@pytest.mark.sqlite_only  # SQLite's write-ahead log file
def test_doctor_reports_copies_of_forgotten_records_the_wal_holds_and_none_once_it_is_truncated(db_path):
    with Engine(make_settings(db_path, MEMLIKEHUMAN_FORGET_WAIT=str(HELD_WAIT))) as engine:
        for n in range(5):
            engine.record(DEFAULT, f"e{n}", f"Turn {n} about the weather.", "user", "chat")
        engine.record(DEFAULT, "secret", "My locker code is 90210.", "user", "chat")
        reader = apsw.Connection(str(db_path))
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM events").fetchall()  # a snapshot the truncation must wait for
        assert engine.forget(DEFAULT, "secret").scrubbed is False
        held = {c.name: c for c in diagnose(db_path, BASE_ENV)}["forgotten"]
        reader.execute("COMMIT")
        reader.close()
        engine.record(DEFAULT, "e9", "Another turn.", "user", "chat")
        engine.forget(DEFAULT, "e9")
        clear = {c.name: c for c in diagnose(db_path, BASE_ENV)}["forgotten"]
    assert held.status == "warn" and held.detail.startswith(
        "0 copies of forgotten records in the archive file and 1 in"
    )
    assert clear.status == "ok" and "no copy" in clear.detail
