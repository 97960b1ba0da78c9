"""memory_correct: replacement, revocation, timeline, checkpoints, forbidden cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import add_memory

from memlikehuman.archive.db import open_database
from memlikehuman.records import Scope

DEFAULT = Scope()


def add_checkpoint(db_path: Path, checkpoint_id: str, scope: Scope = DEFAULT, invalidated: bool = False) -> None:
    db = open_database(db_path)
    try:
        with db.write() as conn:
            conn.execute(
                "INSERT INTO checkpoints (checkpoint_id, persona_id, project_id, session_id, covered_event_id,"
                " covered_sequence, state, created_at, invalidated_at) VALUES (?, ?, ?, 'default', 'e', 1, ?,"
                " '2026-01-01T00:00:00.000000Z', ?)",
                (
                    checkpoint_id,
                    scope.persona_id,
                    scope.project_id,
                    json.dumps({"goal": "ship it"}),
                    "2026-01-01T00:00:00.000000Z" if invalidated else None,
                ),
            )
    finally:
        db.close()


def checkpoint_rows(db_path: Path) -> dict[str, dict[str, object]]:
    db = open_database(db_path)
    try:
        return {r["checkpoint_id"]: r for r in db.query("SELECT * FROM checkpoints")}
    finally:
        db.close()


def count_rows(db_path: Path, table: str) -> int:
    db = open_database(db_path)
    try:
        return int(db.scalar(f"SELECT count(*) FROM {table}"))
    finally:
        db.close()


@pytest.fixture
def city(client, db_path):
    """A recorded statement and its derived memory about the user's city."""
    client.ok(
        "memory_record",
        event_id="e-city",
        text="I live in Paris now.",
        role="user",
        source="chat",
        occurred_at="2024-03-01T10:00:00Z",
    )
    return add_memory(db_path, "e-city", "User lives in Paris", quote="I live in Paris", subject="user.city")


def test_a_correction_stores_a_current_replacement_and_revokes_the_original(client, city):
    out = client.ok("memory_correct", memory_id=city, content="User lives in Lyon", reason="I misspoke: it is Lyon")
    assert out["revoked_ids"] == [city]
    assert out["correction_event_id"].startswith("corr_")
    replacement = client.ok("memory_read", record_id=out["replacement_id"])["memory"]
    assert replacement["content"] == "User lives in Lyon"
    assert replacement["status"] == "current"
    assert replacement["basis"] == "stated"
    assert replacement["kind"] == "fact"
    assert replacement["valid_from"] == "2024-03-01T10:00:00.000000Z"
    assert replacement["source"]["event_id"] == out["correction_event_id"]
    original = client.ok("memory_read", record_id=city)["memory"]
    assert original["status"] == "revoked"
    assert original["revoke_reason"] == "I misspoke: it is Lyon"
    assert original["replaced_by"] == out["replacement_id"]


def test_the_correction_event_is_attributed_and_quotes_the_replacement_verbatim(client, city):
    out = client.ok("memory_correct", memory_id=city, content="User lives in Lyon", reason="it is Lyon")
    read = client.ok("memory_read", record_id=out["correction_event_id"])
    event, text = read["event"], read["source_page"]["text"]
    assert (event["kind"], event["role"], event["source"]) == ("correction", "user", "memory_correct")
    assert event["extraction_state"] == "complete"
    assert event["memory_ids"] == [out["replacement_id"]]
    assert "User lives in Lyon" in text and "it is Lyon" in text
    assert "Paris" not in text
    replacement = client.ok("memory_read", record_id=out["replacement_id"])["memory"]
    assert replacement["source"]["quote"] in text


def test_valid_at_sets_the_replacement_validity_start(client, city):
    out = client.ok(
        "memory_correct",
        memory_id=city,
        content="User lives in Lyon",
        reason="moved later",
        valid_at="2024-05-01T12:00:00+02:00",
    )
    replacement = client.ok("memory_read", record_id=out["replacement_id"])["memory"]
    assert replacement["valid_from"] == "2024-05-01T10:00:00.000000Z"


def test_the_replacement_takes_the_original_place_in_its_subject_timeline(client, db_path, city):
    client.ok(
        "memory_record",
        event_id="e-city2",
        text="I moved to Berlin.",
        role="user",
        source="chat",
        occurred_at="2025-01-01T00:00:00Z",
    )
    berlin = add_memory(db_path, "e-city2", "User lives in Berlin", subject="user.city")
    out = client.ok("memory_correct", memory_id=city, content="User lives in Lyon", reason="it was Lyon")
    replacement = client.ok("memory_read", record_id=out["replacement_id"])["memory"]
    assert replacement["status"] == "superseded"
    assert replacement["superseded_by"] == berlin
    assert replacement["valid_to"] == "2025-01-01T00:00:00.000000Z"
    newest = client.ok("memory_read", record_id=berlin)["memory"]
    assert newest["supersedes"] == out["replacement_id"]
    assert newest["status"] == "current"
    revoked = client.ok("memory_read", record_id=city)["memory"]
    assert revoked["superseded_by"] is None and revoked["supersedes"] is None


def test_correcting_the_current_version_closes_its_predecessor_at_the_new_start(client, db_path, city):
    client.ok(
        "memory_record",
        event_id="e-city2",
        text="I moved to Berlin.",
        role="user",
        source="chat",
        occurred_at="2025-01-01T00:00:00Z",
    )
    berlin = add_memory(db_path, "e-city2", "User lives in Berlin", subject="user.city")
    out = client.ok(
        "memory_correct",
        memory_id=berlin,
        content="User lives in Hamburg",
        reason="Hamburg, not Berlin",
        valid_at="2025-02-01T00:00:00Z",
    )
    replacement = client.ok("memory_read", record_id=out["replacement_id"])["memory"]
    assert replacement["status"] == "current" and replacement["supersedes"] == city
    paris = client.ok("memory_read", record_id=city)["memory"]
    assert paris["superseded_by"] == out["replacement_id"]
    assert paris["valid_to"] == "2025-02-01T00:00:00.000000Z"


def test_valid_at_outside_the_timeline_window_is_refused_and_changes_nothing(client, db_path, city):
    client.ok(
        "memory_record",
        event_id="e-city2",
        text="I moved to Berlin.",
        role="user",
        source="chat",
        occurred_at="2025-01-01T00:00:00Z",
    )
    add_memory(db_path, "e-city2", "User lives in Berlin", subject="user.city")
    before = count_rows(db_path, "events")
    error = client.error(
        "memory_correct", memory_id=city, content="User lives in Lyon", reason="x", valid_at="2025-06-01T00:00:00Z"
    )
    assert error.startswith("invalid_argument:") and "next version" in error
    assert count_rows(db_path, "events") == before
    assert client.ok("memory_read", record_id=city)["memory"]["status"] == "superseded"


def test_a_correction_invalidates_every_checkpoint_of_the_scope_and_counts_them(client, db_path, city):
    add_checkpoint(db_path, "ckpt_a")
    add_checkpoint(db_path, "ckpt_b")
    add_checkpoint(db_path, "ckpt_old", invalidated=True)
    add_checkpoint(db_path, "ckpt_other", Scope("default", "other-project"))
    out = client.ok("memory_correct", memory_id=city, content="User lives in Lyon", reason="Lyon")
    assert out["invalidated_checkpoints"] == 2
    rows = checkpoint_rows(db_path)
    for checkpoint_id in ("ckpt_a", "ckpt_b"):
        assert rows[checkpoint_id]["invalidated_at"] is not None
        assert out["correction_event_id"] in str(rows[checkpoint_id]["invalidated_reason"])
        assert rows[checkpoint_id]["state"] is not None
    assert rows["ckpt_old"]["invalidated_at"] == "2026-01-01T00:00:00.000000Z"
    assert rows["ckpt_other"]["invalidated_at"] is None


def test_a_corrected_memory_can_be_corrected_again_through_its_replacement(client, city):
    first = client.ok("memory_correct", memory_id=city, content="User lives in Lyon", reason="Lyon")
    second = client.ok(
        "memory_correct", memory_id=first["replacement_id"], content="User lives in Lille", reason="Lille"
    )
    assert client.ok("memory_read", record_id=second["replacement_id"])["memory"]["status"] == "current"
    assert client.ok("memory_read", record_id=first["replacement_id"])["memory"]["status"] == "revoked"


def test_correcting_a_revoked_memory_is_a_conflict_that_names_its_replacement(client, db_path, city):
    first = client.ok("memory_correct", memory_id=city, content="User lives in Lyon", reason="Lyon")
    before = count_rows(db_path, "events")
    error = client.error("memory_correct", memory_id=city, content="User lives in Lille", reason="again")
    assert error.startswith("conflict:") and first["replacement_id"] in error
    assert count_rows(db_path, "events") == before


def test_a_core_persona_entry_cannot_be_corrected_and_the_error_points_to_the_cli(client, db_path):
    client.ok(
        "memory_record",
        event_id="e-role",
        text="You are Ada, a patient tutor.",
        role="system",
        source="host",
        category="persona",
    )
    persona = add_memory(db_path, "e-role", "Assistant is Ada, a patient tutor", kind="persona")
    error = client.error("memory_correct", memory_id=persona, content="Assistant is Bob", reason="rename")
    assert error.startswith("forbidden:") and "memlikehuman persona set" in error
    assert "memory_forget" in error and "e-role" in error
    assert client.ok("memory_read", record_id=persona)["memory"]["status"] == "current"


def test_every_memory_of_a_role_definition_is_core_persona_whatever_its_kind(client, db_path):
    client.ok(
        "memory_record",
        event_id="e-role",
        text="You are Ada. You answer in French.",
        role="system",
        source="host",
        category="persona",
    )
    rule = add_memory(db_path, "e-role", "Assistant answers in French", quote="You answer in French", kind="fact")
    error = client.error("memory_correct", memory_id=rule, content="Assistant answers in German", reason="no")
    assert error.startswith("forbidden:") and "core persona" in error
    assert count_rows(db_path, "corrections") == 0
    assert client.ok("memory_read", record_id=rule)["memory"]["status"] == "current"


def test_an_emotion_record_cannot_be_corrected_and_the_error_says_to_forget_and_re_record(client, db_path):
    client.ok("memory_record", event_id="e-feel", text="I am so glad we fixed it!", role="assistant", source="ai")
    emotion = add_memory(db_path, "e-feel", "Assistant felt glad about the fix", quote="I am so glad", kind="emotion")
    error = client.error("memory_correct", memory_id=emotion, content="Assistant felt relieved", reason="no")
    assert error.startswith("forbidden:") and "memory_forget" in error and "memory_record" in error
    assert count_rows(db_path, "corrections") == 0


def test_a_memory_of_another_scope_is_not_found_and_stays_untouched(client, city):
    error = client.error(
        "memory_correct", memory_id=city, content="User lives in Lyon", reason="x", project_id="elsewhere"
    )
    assert error.startswith("not_found:")
    assert client.ok("memory_read", record_id=city)["memory"]["status"] == "current"


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"content": ""}, "invalid_argument"),
        ({"content": "x" * 4001}, "limit_exceeded"),
        ({"reason": ""}, "invalid_argument"),
        ({"valid_at": "2024-05-01T12:00:00"}, "invalid_argument"),
        ({"memory_id": "mem_missing"}, "not_found"),
    ],
)
def test_bad_correction_input_is_refused_and_changes_nothing(client, db_path, city, arguments, code):
    call = {"memory_id": city, "content": "User lives in Lyon", "reason": "Lyon", **arguments}
    before = count_rows(db_path, "events")
    assert client.error("memory_correct", **call).startswith(code + ":")
    assert count_rows(db_path, "events") == before
    assert count_rows(db_path, "memories") == 1


def test_the_original_never_appears_in_recall_with_or_without_history(client, city):
    out = client.ok("memory_correct", memory_id=city, content="User lives in Lyon", reason="it is Lyon")
    for history in (False, True):
        found = client.ok("memory_recall", query="lives Paris Lyon", include_history=history)
        ids = [m["memory_id"] for m in found["memories"]]
        assert city not in ids
        assert out["replacement_id"] in ids


def test_correct_and_forget_work_over_stdio(stdio_client, db_path):
    stdio_client.ok("memory_record", event_id="e1", text="My dog is called Rex.", role="user", source="chat")
    memory = add_memory(db_path, "e1", "User's dog is called Rex", quote="My dog is called Rex")
    out = stdio_client.ok("memory_correct", memory_id=memory, content="User's dog is called Max", reason="typo")
    assert out["revoked_ids"] == [memory]
    gone = stdio_client.ok("memory_forget", record_id="e1")
    assert gone["deleted_event_ids"] == ["e1", out["correction_event_id"]]
    assert sorted(gone["deleted_memory_ids"]) == sorted([memory, out["replacement_id"]])
    assert stdio_client.error("memory_forget", record_id="e1").startswith("not_found:")


def test_session_resume_skips_checkpoints_invalidated_by_a_correction_or_a_forget(client, city):
    saved = client.ok("session_checkpoint", state={"goal": "Plan the move to Paris"}, covered_event_id="e-city")
    assert client.ok("session_resume")["checkpoint_id"] == saved["checkpoint_id"]
    out = client.ok("memory_correct", memory_id=city, content="User lives in Lyon", reason="Lyon")
    resumed = client.ok("session_resume")
    assert resumed["checkpoint_id"] is None
    assert any(out["correction_event_id"] in warning for warning in resumed["warnings"])
    client.ok("session_checkpoint", state={"goal": "Plan the move to Paris again"}, covered_event_id="e-city")
    client.ok("memory_forget", record_id="e-city")
    resumed = client.ok("session_resume")
    assert resumed["checkpoint_id"] is None
    assert "Plan the move to Paris" not in resumed["context"]
    assert any("forgotten" in warning for warning in resumed["warnings"])
