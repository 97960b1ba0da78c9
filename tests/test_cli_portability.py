"""`export` and `import`: round trips, idempotency, conflicts that change nothing, dry runs."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import apsw
import pytest
from cli_support import LARGE_TEXT, UNICODE_TEXTS, body, cli, export_text, json_out, populate
from conftest import make_settings
from openai_stub import ScriptedOpenAI

from memlikehuman.archive import events
from memlikehuman.engine import Engine
from memlikehuman.records import Scope


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "source.sqlite3"
    populate(path)
    return path


def records(export: str, kind: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in body(export) if line and json.loads(line)["type"] == kind]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def test_export_writes_a_header_typed_records_and_an_end_line_that_counts_them(source: Path) -> None:
    lines = export_text(source).rstrip("\n").split("\n")
    header, end = json.loads(lines[0]), json.loads(lines[-1])
    assert header["format"] == "memlikehuman-export" and header["version"] == 1
    assert header["exported_at"].endswith("Z")
    kinds = [json.loads(line)["type"] for line in lines[1:-1]]
    assert end == {"type": "end", "records": {k: kinds.count(k) for k in end["records"]}}
    # 4 unicode + big + 2 homes + 1 correction (alice) + 1 (bob); the forgotten event is gone.
    assert end["records"] == {"persona_version": 2, "event": 9, "memory": 3, "correction": 1, "checkpoint": 3}


def test_round_trip_into_an_empty_archive_gives_the_same_records(source: Path, tmp_path: Path) -> None:
    exported = export_text(source)
    target = tmp_path / "target.sqlite3"
    imported = cli(target, "import", str(write(tmp_path, "a.jsonl", exported)))
    assert imported.exit_code == 0, imported.output
    assert body(export_text(target)) == body(exported)


def test_round_trip_keeps_unicode_and_a_200000_character_event_exact(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.sqlite3"
    assert cli(target, "import", "-", input=export_text(source).encode()).exit_code == 0
    with Engine(make_settings(target)) as engine:
        scope = Scope("alice", "garden")
        for i, text in enumerate(UNICODE_TEXTS):
            assert events.find(engine.db, scope, f"u{i}").text == text
        big = events.find(engine.db, scope, "big")
        assert big.text == LARGE_TEXT and len(big.text) == 200_000
        assert big.occurred_at == "2026-03-01T08:00:00.000000Z"
        assert [(c.kind, c.key, c.label) for c in events.find(engine.db, scope, "u0").cues] == [
            ("photo", "IMG_0042.jpg", "roses 🌹"),
            ("text", "note-1", None),
        ]


def test_imported_events_get_new_sequences_in_the_original_order(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.sqlite3"
    with Engine(make_settings(target)) as engine:
        engine.record(Scope(), "local-first", "already here", "user", "chat")
    assert cli(target, "import", "-", input=export_text(source).encode()).exit_code == 0
    order = [r["event_id"] for r in records(export_text(source), "event")]
    with Engine(make_settings(target)) as engine:
        rows = engine.db.query("SELECT sequence, event_id FROM events ORDER BY sequence")
    assert [r["event_id"] for r in rows] == ["local-first", *order]
    # The source has a gap (a forgotten event); the target numbers them consecutively.
    assert [r["sequence"] for r in rows] == list(range(1, len(order) + 2))


def test_imported_records_are_searchable_through_their_rebuilt_full_text_rows(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.sqlite3"
    assert cli(target, "import", "-", input=export_text(source).encode()).exit_code == 0
    found = json_out(cli(target, "recall", "لشبونة", "--persona", "alice", "--project", "garden", "--json"))
    # u2 follows u1 in its session, so u1's text is in u2's context column too.
    assert [hit["event_id"] for hit in found["raw_fallback"]][:1] == ["u1"]
    memories = json_out(cli(target, "recall", "Portugal", "--persona", "alice", "--project", "garden", "--json"))
    assert [m["content"] for m in memories["memories"]] == ["Alice lives in Porto, Portugal"]
    assert json_out(cli(target, "doctor", "--json"))["ok"] is True


def test_reimporting_the_same_file_changes_nothing(source: Path, tmp_path: Path) -> None:
    target, dump = tmp_path / "target.sqlite3", write(tmp_path, "a.jsonl", export_text(source))
    first = json_out(cli(target, "import", str(dump), "--json"))
    before = export_text(target)
    again = json_out(cli(target, "import", str(dump), "--json"))
    assert again["added"] == dict.fromkeys(first["added"], 0)
    assert again["unchanged"] == first["added"] and again["written"] is True
    assert body(export_text(target)) == body(before)


def test_a_conflicting_record_makes_the_whole_import_fail_and_write_nothing(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.sqlite3"
    with Engine(make_settings(target)) as engine:
        engine.record(Scope("alice", "garden"), "home1", "I live in Madrid", "user", "chat", session_id="s2")
    before, size = export_text(target), stats_of(target)
    result = cli(target, "import", str(write(tmp_path, "a.jsonl", export_text(source))))
    assert result.exit_code == 1
    assert "1 record(s) conflict with the archive; nothing was imported" in result.stderr
    assert "line 9: event 'home1' differs from the archive in occurred_at, text" in result.stderr
    assert body(export_text(target)) == body(before)
    assert stats_of(target) == size


def test_conflicts_are_listed_per_record_and_reported_as_json(source: Path, tmp_path: Path) -> None:
    exported = export_text(source)
    target = tmp_path / "target.sqlite3"
    assert cli(target, "import", "-", input=exported.encode()).exit_code == 0
    changed = exported.replace("Alice lives in Lisbon", "Alice lives in Faro").replace(
        "You are Alice's gardening helper.", "You are a pirate."
    )
    before = export_text(target)
    result = cli(target, "import", "-", "--json", input=changed.encode())
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["written"] is False and report["conflict_count"] == 2
    assert any("persona_version 'alice v1' differs from the archive in text" in c for c in report["conflicts"])
    assert any("differs from the archive in content" in c for c in report["conflicts"])
    assert body(export_text(target)) == body(before)


def test_an_event_id_taken_in_another_scope_is_a_conflict(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.sqlite3"
    with Engine(make_settings(target)) as engine:
        engine.record(Scope("carol", "other"), "w1", "Quarterly report due Friday", "user", "mail")
    result = cli(target, "import", "-", input=export_text(source).encode())
    assert result.exit_code == 1
    assert "event 'w1' differs from the archive in persona_id, project_id" in result.stderr
    assert "checkpoint 'ckpt_" in result.stderr and "(after the conflicts above)" in result.stderr
    assert stats_of(target)[0] == 1


def test_dry_run_reports_what_would_change_and_writes_nothing(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.sqlite3"
    report = json_out(cli(target, "import", "-", "--dry-run", "--json", input=export_text(source).encode()))
    assert report["dry_run"] is True and report["written"] is False
    assert report["added"] == {"persona_version": 2, "event": 9, "memory": 3, "correction": 1, "checkpoint": 3}
    assert not target.exists()  # checked against an empty archive in memory
    Engine(make_settings(target)).close()  # an existing, empty archive
    report = json_out(cli(target, "import", "-", "--dry-run", "--json", input=export_text(source).encode()))
    assert report["added"]["event"] == 9
    assert stats_of(target) == (0, 0, 0)
    human = cli(target, "import", "-", "--dry-run", input=export_text(source).encode())
    assert "would add" in human.stdout and "the import would succeed" in human.stderr


def test_a_truncated_file_is_refused_without_writing_anything(source: Path, tmp_path: Path) -> None:
    lines = export_text(source).rstrip("\n").split("\n")
    target = tmp_path / "target.sqlite3"
    result = cli(target, "import", "-", input=("\n".join(lines[:-1]) + "\n").encode())
    assert result.exit_code == 1 and "truncated" in result.stderr
    assert stats_of(target) == (0, 0, 0)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json at all", "line 3 is not a JSON object"),
        ('{"type": "event", "event_id": "x"}', "line 3: event record has wrong fields (missing"),
        ('{"type": "spaceship"}', "line 3: unknown record type 'spaceship'"),
        ('{"type": "event", "x": %s}' % ("[" * 5000 + "]" * 5000), "line 3 is nested 5,001 levels deep, too deep"),
    ],
    ids=["not-json", "wrong-fields", "unknown-type", "nested-too-deep"],
)
def test_a_malformed_line_is_named_and_nothing_is_written(
    source: Path, tmp_path: Path, line: str, message: str
) -> None:
    lines = export_text(source).split("\n")
    target = tmp_path / "target.sqlite3"
    result = cli(target, "import", "-", input="\n".join([*lines[:2], line, *lines[2:]]).encode())
    assert result.exit_code == 1 and message in result.stderr
    assert stats_of(target) == (0, 0, 0)


def test_a_refused_file_leaves_an_archive_that_existed_as_it_was(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.sqlite3"
    assert cli(target, "import", "-", input=export_text(source).encode()).exit_code == 0
    before = stats_of(target)
    result = cli(target, "import", "-", input=b"not json at all\n")
    assert result.exit_code == 1 and target.exists() and stats_of(target) == before


def test_a_record_breaking_a_limit_is_refused(source: Path, tmp_path: Path) -> None:
    exported = export_text(source).replace('"text":"I live in Lisbon"', '"text":"' + "x" * 200_001 + '"')
    result = cli(tmp_path / "target.sqlite3", "import", "-", input=exported.encode())
    assert result.exit_code == 1 and "text is 200,001 characters long" in result.stderr


def test_a_file_of_another_format_version_is_refused(source: Path, tmp_path: Path) -> None:
    exported = export_text(source).replace('"version":1', '"version":2', 1)
    result = cli(tmp_path / "target.sqlite3", "import", "-", input=exported.encode())
    assert result.exit_code == 1 and "format version 2" in result.stderr


def test_export_of_one_persona_and_project_holds_only_that_scope(source: Path, tmp_path: Path) -> None:
    exported = export_text(source, "--persona", "bob", "--project", "work")
    kinds = [(r["type"], r.get("persona_id")) for r in map(json.loads, body(exported)[:-2])]
    assert kinds == [("event", "bob"), ("checkpoint", "bob")]
    alice = export_text(source, "--persona", "alice")
    assert {r["persona_id"] for r in records(alice, "event")} == {"alice"}
    assert len(records(alice, "persona_version")) == 2
    assert len(records(export_text(source, "--project", "work"), "persona_version")) == 0


def test_export_to_a_file_replaces_it_only_when_complete(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "backup.jsonl"
    result = cli(source, "export", "-o", str(out))
    assert result.exit_code == 0 and "exported 18 records" in result.stderr
    assert body(out.read_text(encoding="utf-8")) == body(export_text(source))
    assert not (tmp_path / "backup.jsonl.partial").exists()


def test_an_unknown_persona_filter_is_an_invalid_argument_and_wrong_usage(source: Path) -> None:
    result = cli(source, "export", "--persona", "bad persona!")
    assert result.exit_code == 2 and "invalid_argument" in result.stderr


def stats_of(db: Path) -> tuple[int, int, int]:
    """(events, memories, checkpoints) in the archive, read directly from the file."""
    conn = apsw.Connection(str(db))
    try:
        return tuple(  # type: ignore[return-value]
            conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("events", "memories", "checkpoints")
        )
    finally:
        conn.close()


def test_an_import_says_how_many_vectors_are_missing_and_embeds_them_when_asked(source: Path, tmp_path: Path) -> None:
    dump = write(tmp_path, "a.jsonl", export_text(source))
    with ScriptedOpenAI() as api:
        env = {"MEMLIKEHUMAN_EMBEDDER": "openai", "MEMLIKEHUMAN_EMBEDDER_BASE_URL": api.base_url}
        first = cli(tmp_path / "t1.sqlite3", "import", str(dump), env=env)
        assert first.exit_code == 0, first.output
        assert "vectors: 12 events and memories have none yet" in first.stderr
        assert "`memlikehuman reindex --missing` or `import --embed` does it now" in first.stderr
        embedded = cli(tmp_path / "t2.sqlite3", "import", str(dump), "--embed", env=env)
        assert embedded.exit_code == 0, embedded.output
        assert "vectors: 12 events and memories embedded" in embedded.stderr
        assert json_out(cli(tmp_path / "t2.sqlite3", "stats", "--json", env=env))["totals"]["vectors_missing"] == 0
    assert "vectors" not in cli(tmp_path / "t3.sqlite3", "import", str(dump)).stderr  # no embedder configured


def test_an_import_whose_embedding_fails_afterwards_stays_imported_and_exits_0(source: Path, tmp_path: Path) -> None:
    dump = write(tmp_path, "a.jsonl", export_text(source))
    with socket.socket() as closed:  # a port nothing listens on: the embedding endpoint is down
        closed.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    env = {"MEMLIKEHUMAN_EMBEDDER": "openai", "MEMLIKEHUMAN_EMBEDDER_BASE_URL": down, "MEMLIKEHUMAN_TIMEOUT": "2"}
    ran = cli(tmp_path / "t.sqlite3", "import", str(dump), "--embed", env=env)
    assert ran.exit_code == 0, ran.output
    assert "imported; vectors not computed" in ran.stderr
    assert json_out(cli(tmp_path / "t.sqlite3", "stats", "--json"))["totals"]["events"] > 0
