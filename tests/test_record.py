"""memory_record: validation, limits, idempotency and conflicts (through the MCP client)."""

from __future__ import annotations

import pytest

BASE = {"event_id": "evt-1", "text": "I moved to Lisbon in March.", "role": "user", "source": "chat"}


def record(client, **overrides):
    return client.ok("memory_record", **{**BASE, **overrides})


def test_recording_returns_the_sequence_and_a_pending_state_without_an_extractor(client):
    out = record(client)
    assert out["event_id"] == "evt-1"
    assert out["sequence"] >= 1
    assert out["duplicate"] is False
    assert out["extraction_state"] == "pending"
    assert "no extractor" in out["error"]
    assert out["memory_ids"] == []


def test_sequences_strictly_increase_in_recording_order(client):
    sequences = [record(client, event_id=f"e{i}")["sequence"] for i in range(5)]
    assert sequences == sorted(sequences) and len(set(sequences)) == 5


def test_the_identical_event_recorded_again_is_a_duplicate_that_stores_nothing_new(client):
    first = record(client, occurred_at="2026-03-01T10:00:00+01:00", cues=[{"kind": "photo", "key": "p1"}])
    again = record(client, occurred_at="2026-03-01T09:00:00Z", cues=[{"kind": "photo", "key": "p1"}])
    assert again["duplicate"] is True and again["sequence"] == first["sequence"]
    assert record(client, event_id="next")["sequence"] == first["sequence"] + 1


def test_a_retry_that_omits_occurred_at_matches_the_stored_event(client):
    first = record(client, occurred_at="2026-03-01T10:00:00Z")
    assert record(client)["duplicate"] is True
    assert record(client)["sequence"] == first["sequence"]


def test_defaults_spelled_out_match_defaults_omitted(client):
    record(client)
    assert record(client, category="conversation", session_id="default")["duplicate"] is True


@pytest.mark.parametrize(
    "change",
    [
        {"text": "I moved to Porto in March."},
        {"role": "assistant"},
        {"source": "email"},
        {"category": "reference"},
        {"session_id": "s2"},
        {"occurred_at": "2020-01-01T00:00:00Z"},
        {"cues": [{"kind": "text", "key": "k"}]},
        {"project_id": "other"},
        {"persona_id": "other"},
    ],
)
def test_a_reused_event_id_with_any_other_field_or_scope_is_a_conflict(client, change):
    record(client, occurred_at="2026-03-01T10:00:00Z")
    message = client.error("memory_record", **{**BASE, **change})
    assert message.startswith("conflict:")


def test_a_conflict_changes_nothing(client):
    record(client)
    client.error("memory_record", **{**BASE, "text": "changed"})
    assert client.ok("memory_read", record_id="evt-1")["source_page"]["text"] == BASE["text"]


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("event_id", "", "invalid_argument"),
        ("event_id", "x" * 257, "invalid_argument"),
        ("event_id", "bad\nid", "invalid_argument"),
        ("event_id", "mem_123", "invalid_argument"),
        ("text", "", "invalid_argument"),
        ("text", "x" * 200_001, "limit_exceeded"),
        ("text", "lone \ud800 surrogate", "invalid_argument"),
        ("role", "admin", "invalid_argument"),
        ("source", "", "invalid_argument"),
        ("source", "s" * 257, "invalid_argument"),
        ("category", "secret", "invalid_argument"),
        ("session_id", "", "invalid_argument"),
        ("session_id", "s" * 129, "invalid_argument"),
        ("session_id", "tab\there", "invalid_argument"),
        ("session_id", "line\u2028break", "invalid_argument"),
        ("occurred_at", "2026-03-01T10:00:00", "invalid_argument"),
        ("occurred_at", "yesterday", "invalid_argument"),
        ("occurred_at", "2026-13-01T10:00:00Z", "invalid_argument"),
        ("persona_id", "a/b", "invalid_argument"),
        ("persona_id", "with space", "invalid_argument"),
        ("persona_id", "p" * 129, "invalid_argument"),
        ("project_id", "", "invalid_argument"),
        ("project_id", "nul\x00", "invalid_argument"),
        ("cues", [{"kind": "video", "key": "k"}], "invalid_argument"),
        ("cues", [{"kind": "text", "key": ""}], "invalid_argument"),
        ("cues", [{"kind": "text", "key": "k", "extra": 1}], "invalid_argument"),
        ("cues", [{"kind": "text", "key": f"k{i}"} for i in range(21)], "limit_exceeded"),
        ("cues", "not a list", "invalid_argument"),
        ("cues", [{"kind": "text", "key": "k" * 129}], "invalid_argument"),
        ("cues", [{"kind": "text", "key": "bell\x07"}], "invalid_argument"),
        ("cues", [{"kind": "text", "key": "k", "label": "l" * 1001}], "limit_exceeded"),
        ("event_id", "corr_123", "invalid_argument"),
        ("event_id", "ckpt_123", "invalid_argument"),
        ("source", "two\nlines", "invalid_argument"),
        ("persona_id", "José", "invalid_argument"),
        ("role", 5, "invalid_argument"),
    ],
)
def test_each_invalid_field_is_a_coded_error_that_names_the_field_and_stores_nothing(client, field, value, code):
    message = client.error("memory_record", **{**BASE, field: value})
    assert message.startswith(f"{code}:"), message
    assert field.split("[")[0] in message
    assert client.error("memory_read", record_id=BASE["event_id"]).startswith("not_found:")


def test_the_largest_allowed_event_and_twenty_cues_are_accepted(client):
    cues = [{"kind": "photo", "key": f"photo-{i}", "label": f"label {i}"} for i in range(20)]
    out = record(client, text="y" * 200_000, cues=cues)
    event = client.ok("memory_read", record_id=out["event_id"])["event"]
    assert event["length"] == 200_000
    assert [c["key"] for c in event["cues"]] == [f"photo-{i}" for i in range(20)]


def test_values_at_every_length_limit_and_every_allowed_persona_character_are_accepted(client):
    out = record(
        client,
        event_id="e" * 256,
        source="s" * 256,
        session_id="s" * 128,
        persona_id="Ada.v2_tutor-x:9" + "p" * 112,
        project_id="q" * 128,
        cues=[{"kind": "text", "key": "k" * 128, "label": "l" * 1000}],
    )
    event = client.ok(
        "memory_read", record_id="e" * 256, persona_id="Ada.v2_tutor-x:9" + "p" * 112, project_id="q" * 128
    )
    assert out["duplicate"] is False and event["event"]["cues"][0]["label"] == "l" * 1000


def test_a_retry_that_adds_occurred_at_to_an_event_recorded_without_it_is_a_conflict(client):
    record(client)
    assert client.error("memory_record", **{**BASE, "occurred_at": "2026-03-01T10:00:00Z"}).startswith("conflict:")


def test_unknown_arguments_are_refused(client):
    assert client.error("memory_record", **BASE, colour="blue").startswith("invalid_argument:")


def test_missing_required_arguments_are_named(client):
    message = client.error("memory_record", event_id="x", text="t", role="user")
    assert message.startswith("invalid_argument:") and "source" in message


def test_timestamps_come_back_in_utc_with_z(client):
    record(client, occurred_at="2026-03-01T10:00:00+01:00")
    event = client.ok("memory_read", record_id="evt-1")["event"]
    assert event["occurred_at"] == "2026-03-01T09:00:00.000000Z"
    assert event["recorded_at"].endswith("Z")


def test_an_event_id_taken_in_another_scope_is_a_conflict_even_with_the_same_text(client):
    record(client, persona_id="alice", project_id="p1")
    assert client.error("memory_record", **BASE, persona_id="bob", project_id="p1").startswith("conflict:")
