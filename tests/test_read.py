"""memory_read: pagination to the last character, scope isolation, validation."""

from __future__ import annotations

import pytest

TEXT = "".join(chr(ord("a") + i % 26) for i in range(10_007)) + "Ωmega🙂"


def test_pages_join_to_the_original_text_exactly(client):
    client.ok("memory_record", event_id="long", text=TEXT, role="user", source="doc")
    pieces, offset = [], 0
    while offset is not None:
        page = client.ok("memory_read", record_id="long", offset=offset, max_chars=3000)["source_page"]
        assert page["total_chars"] == len(TEXT)
        assert page["offset"] == offset
        pieces.append(page["text"])
        offset = page["next_offset"]
    assert "".join(pieces) == TEXT
    assert len(pieces) == 4


def test_the_default_page_is_4000_characters(client):
    client.ok("memory_record", event_id="long", text=TEXT, role="user", source="doc")
    page = client.ok("memory_read", record_id="long")["source_page"]
    assert len(page["text"]) == 4000 and page["next_offset"] == 4000


def test_reading_at_the_end_returns_an_empty_last_page(client):
    client.ok("memory_record", event_id="e", text="abc", role="user", source="doc")
    page = client.ok("memory_read", record_id="e", offset=3)["source_page"]
    assert page == {"text": "", "offset": 3, "next_offset": None, "total_chars": 3}


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"offset": 4}, "invalid_argument"),
        ({"offset": -1}, "invalid_argument"),
        ({"max_chars": 0}, "invalid_argument"),
        ({"max_chars": 20_001}, "invalid_argument"),
        ({"record_id": ""}, "invalid_argument"),
        ({"record_id": "missing"}, "not_found"),
        ({"record_id": "mem_0000"}, "not_found"),
        ({"record_id": "x" * 257}, "invalid_argument"),
        ({"record_id": "e\x00"}, "invalid_argument"),
        ({"persona_id": "a/b"}, "invalid_argument"),
        ({"project_id": ""}, "invalid_argument"),
        ({"offset": True}, "invalid_argument"),
        ({"offset": "2"}, "invalid_argument"),
        ({"max_chars": "4000"}, "invalid_argument"),
        ({"max_chars": 100.0}, "invalid_argument"),
    ],
)
def test_bad_reads_are_coded_errors(client, args, code):
    client.ok("memory_record", event_id="e", text="abc", role="user", source="doc")
    assert client.error("memory_read", **{"record_id": "e", **args}).startswith(f"{code}:")


def test_max_chars_of_20000_is_allowed(client):
    client.ok("memory_record", event_id="long", text=TEXT, role="user", source="doc")
    page = client.ok("memory_read", record_id="long", max_chars=20_000)["source_page"]
    assert page["text"] == TEXT and page["next_offset"] is None


def test_an_event_is_invisible_from_another_scope(client):
    client.ok("memory_record", event_id="secret", text="private", role="user", source="doc", persona_id="alice")
    assert client.error("memory_read", record_id="secret", persona_id="bob").startswith("not_found:")
    assert client.error("memory_read", record_id="secret", persona_id="alice", project_id="x").startswith("not_found:")
    assert client.ok("memory_read", record_id="secret", persona_id="alice")["source_page"]["text"] == "private"


def test_reading_returns_the_event_metadata(client):
    client.ok(
        "memory_record",
        event_id="e",
        text="hello",
        role="tool",
        source="search",
        category="reference",
        session_id="s1",
        occurred_at="2026-01-02T03:04:05Z",
        cues=[{"kind": "text", "key": "doc-7", "label": "memo"}],
    )
    out = client.ok("memory_read", record_id="e")
    assert out["record_type"] == "event" and out["memory"] is None
    event = out["event"]
    assert (event["role"], event["source"], event["category"], event["session_id"]) == (
        "tool",
        "search",
        "reference",
        "s1",
    )
    assert event["cues"] == [{"kind": "text", "key": "doc-7", "label": "memo"}]
    assert event["extraction_state"] == "pending" and event["length"] == 5
