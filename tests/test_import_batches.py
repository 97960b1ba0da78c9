"""The import's batches and fast paths give what a record-by-record import gave, on both backends."""

from __future__ import annotations

import io
import json
import random
from typing import Any

import pytest
from conftest import fts_rowids

from memlikehuman.admin.portability import batches, import_lines
from memlikehuman.admin.portability.spec import SPECS
from memlikehuman.archive import events, fulltext
from memlikehuman.archive.backend import backend_of
from memlikehuman.engine import Engine
from memlikehuman.errors import ImportConflicts, InvalidArgument, MemLikeHumanError
from memlikehuman.text.digest import sha256_hex

STAMP = "2026-01-{day:02d}T{hour:02d}:{minute:02d}:00.000000Z"


def event(i: int, text: str | None = None, **fields: Any) -> dict[str, Any]:
    record = {
        "type": "event", "event_id": f"e{i}", "persona_id": "ana", "project_id": "home", "session_id": f"s{i // 7}",
        "kind": "record", "role": "user" if i % 2 else "assistant", "source": "chat", "category": "conversation",
        "occurred_at": STAMP.format(day=1 + i // 1440 % 28, hour=i // 60 % 24, minute=i % 60),
        "occurred_at_given": True, "recorded_at": STAMP.format(day=1, hour=0, minute=0),
        "extraction_state": "complete" if i % 3 else "pending", "extraction_error": None,
        "cues": [{"kind": "photo", "key": f"IMG_{i}.jpg", "label": None}] if i % 10 == 0 else [],
        "text": f"word{i} said on day {i}" if text is None else text,
    }  # fmt: skip
    return {**record, **fields}


def memory(i: int, **fields: Any) -> dict[str, Any]:
    record = {
        "type": "memory", "memory_id": f"mem_{i:032x}", "event_id": f"e{i}", "persona_id": "ana", "project_id": "home",
        "session_id": f"s{i // 7}", "kind": "fact", "basis": "stated", "category": "conversation",
        "subject": None, "status": "current", "valid_from": STAMP.format(day=2, hour=0, minute=0), "valid_to": None,
        "recorded_at": STAMP.format(day=2, hour=0, minute=0), "supersedes": None, "superseded_by": None,
        "revoked_at": None, "revoke_reason": None, "replaced_by": None, "content": f"fact{i} about Ana",
        "quote": f"word{i}", "gist": None, "extractor": "agent" if i % 2 else None,
    }  # fmt: skip
    return {**record, **fields}


def export_file(records: list[dict[str, Any]], *raw_lines: str) -> bytes:
    """An export file holding the records (and raw lines after them), with a matching end line."""
    counts = {kind: sum(r["type"] == kind for r in records) for kind in SPECS}
    header = {"type": "header", "format": "memlikehuman-export", "version": 1, "exported_at": STAMP.format(day=3,
              hour=0, minute=0), "persona_id": None, "project_id": None}  # fmt: skip
    end = {"type": "end", "records": counts}
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in [header, *records]]
    return "\n".join([*lines, *raw_lines, json.dumps(end, separators=(",", ":"))]).encode() + b"\n"


def run(engine: Engine, data: bytes, **options: Any) -> Any:
    return import_lines(engine.db, io.BytesIO(data), **options)


def exported(engine: Engine) -> list[str]:
    return list(engine.export_lines(None, None))[1:]


def test_an_import_of_several_batches_exports_again_line_for_line(engine: Engine) -> None:
    texts = ["Ana baked bread yesterday", "صباح الخير يا آنا", "last Friday we met", "猫が好きです", None]
    records = [event(i, texts[i % 5] if i % 4 == 0 else None) for i in range(batches.CHUNK * 2 + 203)]
    records += [memory(i) for i in range(0, len(records), 3)]
    data = export_file(records)
    report = run(engine, data)
    assert report.added["event"] == batches.CHUNK * 2 + 203 and report.added["memory"] == len(range(0, 1203, 3))
    assert [line.rstrip("\n") for line in exported(engine)] == data.decode().split("\n")[1:-1]
    assert fulltext.count_missing(engine.db) == (0, 0) and fulltext.orphans(engine.db) == 0
    counts = engine.db.one("SELECT events, pending FROM scope_counts WHERE persona_id = 'ana'")
    assert counts == {"events": 1203, "pending": len(range(0, 1203, 3))}


def test_each_imported_event_carries_its_sessions_previous_event_as_context(engine: Engine) -> None:
    records = [event(i) for i in range(batches.CHUNK + 20)]
    run(engine, export_file(records))
    sequence = {row["event_id"]: row["sequence"] for row in engine.db.query("SELECT event_id, sequence FROM events")}
    for i in (0, 6, 7, 499, 500, 501, 519):
        following = [sequence[f"e{i + 1}"]] if i + 1 < len(records) and (i + 1) // 7 == i // 7 else []
        assert fts_rowids(engine.db, "events_fts", f"word{i}", "context") == following, i


def test_an_imported_relative_date_is_resolved_like_a_recorded_one(engine: Engine) -> None:
    run(engine, export_file([event(0, "Ana baked bread yesterday"), event(1, "nothing dated here")]))
    rows = engine.db.query(
        "SELECT e.event_id, d.day_from FROM event_dates d JOIN events e ON e.sequence = d.event_sequence"
    )
    assert rows == [{"event_id": "e0", "day_from": "2025-12-31"}]


def test_an_event_repeated_in_the_file_is_added_once_and_counted_unchanged_after(engine: Engine) -> None:
    report = run(engine, export_file([event(1), event(2), event(1), event(3)]))
    assert (report.added["event"], report.unchanged["event"]) == (3, 1)


def test_a_repeated_event_with_another_text_conflicts_and_nothing_is_written(engine: Engine) -> None:
    with pytest.raises(ImportConflicts) as raised:
        run(engine, export_file([event(1), event(2), event(1, "other words")]))
    assert raised.value.report.conflicts == ("line 4: event 'e1' differs from the archive in text",)
    assert engine.db.scalar("SELECT count(*) FROM events") == 0


def test_conflicts_and_unplaceable_memories_are_listed_in_file_order(engine: Engine) -> None:
    run(engine, export_file([event(1), event(2), memory(2)]))
    file = [event(1), event(2), memory(1), memory(2, content="changed"), memory(3), event(4)]
    with pytest.raises(ImportConflicts) as raised:
        run(engine, export_file(file))
    assert raised.value.report.conflicts == (
        f"line 5: memory {memory(2)['memory_id']!r} differs from the archive in content",
        f"line 6: memory {memory(3)['memory_id']!r} refers to event 'e3', which is neither in the archive nor"
        " earlier in the file (after the conflicts above)",
    )
    assert raised.value.report.added == {
        "persona_version": 0,
        "event": 1,
        "memory": 1,
        "correction": 0,
        "checkpoint": 0,
    }


def test_a_bad_reference_is_reported_before_a_malformed_line_later_in_its_batch(engine: Engine) -> None:
    data = export_file([event(1), memory(1), memory(7)], "not json")
    with pytest.raises(InvalidArgument, match="line 4: memory 'mem_0+7' refers to event 'e7', which is neither"):
        run(engine, data)
    assert engine.db.scalar("SELECT count(*) FROM events") == 0


def test_a_memory_of_an_event_in_another_scope_is_refused_with_its_line(engine: Engine) -> None:
    data = export_file([event(1), memory(1, persona_id="bob")])
    with pytest.raises(InvalidArgument, match="line 3: memory 'mem_0+1' refers to event 'e1' of another persona"):
        run(engine, data)


def test_an_event_id_with_a_reserved_prefix_is_refused_with_its_line(engine: Engine) -> None:
    with pytest.raises(InvalidArgument, match="line 3: event_id must not start with mem_, corr_, ckpt_"):
        run(engine, export_file([event(1), event(2, event_id="mem_x")]))


def test_a_dry_run_of_several_batches_counts_them_and_writes_nothing(engine: Engine) -> None:
    report = run(engine, export_file([event(i) for i in range(batches.CHUNK + 1)]), dry_run=True)
    assert report.added["event"] == batches.CHUNK + 1 and not report.written
    assert engine.db.scalar("SELECT count(*) FROM events") == 0


def test_the_import_leaves_the_connections_temporary_storage_as_it_was(engine: Engine) -> None:
    if backend_of(engine.db).name == "postgres":
        pytest.skip("SQLite's temp_store")
    run(engine, export_file([event(1)]))
    assert engine.db.scalar("PRAGMA temp_store") == 0


# -- the validator's fast paths ------------------------------------------------------------------

SAMPLES: list[Any] = [
    None, True, False, 0, 1, 2**62, 2**62 + 1, -1, 1.0, "", " ", "a", "x" * 128, "x" * 129, "x" * 256, "x" * 257,
    "ana", "..", ".", "team:alice", "a b", "tab\there", "nul\x00", "line\u2028break", "lone\ud800", "café", "日本",
    "record", "correction", "user", "conversation", "complete", "photo", [], [{}], {}, ["a"], "Z",
    [{"kind": "photo", "key": "k"}], [{"kind": "photo", "key": "k", "label": None}],
    "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000000+00:00",
    "2026-13-01T00:00:00.000000Z", "0000-01-01T00:00:00.000000Z", "2026-01-01 00:00:00.000000Z",
    "2026-02-30T00:00:00.000000Z", "9999-12-31T23:59:59.999999Z", "\u0662026-01-01T00:00:00.000000Z",
    "2026-01-01T24:00:00.000000Z", "mem_1", "ckpt_1", "corr_1", "x" * 4000, "x" * 4001, "é" * 4000,
]  # fmt: skip


@pytest.mark.parametrize("kind", list(SPECS))
def test_a_fields_fast_path_accepts_only_values_its_check_keeps_as_they_are(kind: str) -> None:
    accepted = 0
    for field, rule in SPECS[kind].items():
        for value in SAMPLES:
            if not rule.fast(value):
                continue
            accepted += 1
            try:
                kept = rule.check(value, field)
            except MemLikeHumanError as exc:
                raise AssertionError(f"{kind}.{field}: fast path took {value!r:.40}, the check refuses it") from exc
            assert kept == value and type(kept) is type(value), (kind, field, value)
    assert accepted


def test_an_events_payload_hash_is_the_sha256_of_its_fields_as_sorted_json() -> None:
    rng = random.Random(3)
    pieces = ['"', "\\", "\n", "\x00", "\u2028", "🌹", "é", "/", "a", " ", "\t", "\x7f"]
    for _ in range(200):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        cues = [{"kind": "photo", "key": text or "k", "label": rng.choice([None, text])}] * rng.randint(0, 2)
        fields = dict(
            persona_id="ana", project_id=text, event_id="e1", text=text, role="user", source=f"chat{text}",
            category="conversation", session_id="s1", cues=cues,
        )  # fmt: skip
        reference = sha256_hex(json.dumps(fields, sort_keys=True, ensure_ascii=False).encode())
        assert events.payload_hash(**fields) == reference, fields


def test_a_file_written_before_memories_named_their_extractor_imports_and_again_is_unchanged(engine: Engine) -> None:
    older = {k: v for k, v in memory(0).items() if k != "extractor"}
    data = export_file([event(0), older])
    assert run(engine, data).added["memory"] == 1
    assert run(engine, data).added["memory"] == 0  # the same records, not a conflict
    line = json.loads(exported(engine)[-2])
    assert line["type"] == "memory" and line["extractor"] is None
