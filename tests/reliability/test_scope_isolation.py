"""Scope isolation: a record of scope A is invisible to, and unchangeable from, any other scope.

Scope A holds an event with a cue, its memory, a correction (event and replacement), a persona
memory and a checkpoint. Scope B -- another persona, another project of the same persona, or both --
reuses A's cue key and session name. From B every tool, the persona resource and the prompt are
tried against A's IDs and words; afterwards A reads back exactly as before, and B's own
corrections and forgets have not invalidated A's checkpoint.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import SyncClient, connected, make_settings
from openai_stub import ScriptedOpenAI

from memlikehuman.server import build_server

from .support import QuotingExtractor, archive_problems, extractor_env, report

A = {"persona_id": "alice", "project_id": "home"}
OTHERS = {
    "another persona": {"persona_id": "bob", "project_id": "home"},
    "another project of the same persona": {"persona_id": "alice", "project_id": "work"},
    "another persona and project": {"persona_id": "bob", "project_id": "work"},
}
SECRET_WORDS = ("xylophone", "Zanzibar", "pirate", "marmalade")
CHECKS: list[str] = []


@pytest.fixture
def client(archive_target: str) -> Iterator[SyncClient]:
    """An in-process server on a fresh archive of each backend in turn."""
    with ScriptedOpenAI(default_chat=QuotingExtractor()) as api:
        settings = make_settings(archive_target, **extractor_env(api.base_url))
        with connected(build_server(settings)) as c:
            yield c
    assert archive_problems(archive_target) == []


def fill_a(client: SyncClient) -> dict[str, str]:
    """A's records; returns their IDs by name."""
    first = client.ok("memory_record", event_id="a-city", text="my city is Zanzibar and the word is xylophone",
                      role="user", source="chat", session_id="shared-session",
                      cues=[{"kind": "photo", "key": "shared-cue", "label": "Zanzibar beach"}], **A)  # fmt: skip
    persona = client.ok("memory_record", event_id="a-persona", text="speak like a pirate who loves marmalade",
                        role="system", source="setup", category="persona", **A)  # fmt: skip
    fixed = client.ok("memory_correct", memory_id=first["memory_ids"][0], content="my city is Zanzibar town",
                      reason="precision", **A)  # fmt: skip
    checkpoint = client.ok("session_checkpoint", state={"goal": "plan the xylophone concert"},
                           covered_event_id="a-city", session_id="shared-session", **A)  # fmt: skip
    return {
        "event": "a-city",
        "memory": first["memory_ids"][0],
        "replacement": fixed["replacement_id"],
        "correction event": fixed["correction_event_id"],
        "persona event": "a-persona",
        "persona memory": persona["memory_ids"][0],
        "checkpoint": checkpoint["checkpoint_id"],
    }


def fill_b(client: SyncClient, scope: dict[str, str]) -> dict[str, Any]:
    """B's own records, with A's cue key and session name."""
    return client.ok("memory_record", event_id=f"b-city-{scope['persona_id']}-{scope['project_id']}",
                     text="my city is Oslo and nothing else", role="user", source="chat", session_id="shared-session",
                     cues=[{"kind": "photo", "key": "shared-cue", "label": "fjord"}], **scope)  # fmt: skip


def snapshot(client: SyncClient, ids: dict[str, str]) -> dict[str, Any]:
    """Everything A's tools show about A's records (without the clock-dependent fields)."""
    reads = {name: client.ok("memory_read", record_id=ids[name], **A) for name in ids if name != "checkpoint"}
    recall = client.ok("memory_recall", query="Zanzibar xylophone pirate", include_history=True, **A)
    resume = client.ok("session_resume", query="Zanzibar", **A)
    return {
        "reads": reads,
        "recall": sorted(m["memory_id"] for m in recall["memories"]),
        "raw": sorted(h["event_id"] for h in recall["raw_fallback"]),
        "checkpoint": resume["checkpoint_id"],
    }


def assert_not_found(client: SyncClient, tool: str, **arguments: Any) -> None:
    text = client.error(tool, **arguments)
    assert text.startswith("not_found:"), f"{tool} {arguments}: {text}"
    assert not any(word in text for word in SECRET_WORDS), text
    CHECKS.append(tool)


def assert_blind(output: Any, ids: dict[str, str], where: str) -> None:
    """No ID or secret word of A anywhere in the output."""
    text = json.dumps(output, ensure_ascii=False)
    for name, record_id in ids.items():
        assert record_id not in text, f"{where} shows A's {name}"
    for word in SECRET_WORDS:
        assert word.lower() not in text.lower(), f"{where} shows A's word {word!r}"
    CHECKS.append(where)


@pytest.mark.parametrize("other", list(OTHERS))
def test_a_record_of_one_scope_is_invisible_and_unchangeable_from_another(client: SyncClient, other: str, backend: str):
    scope = OTHERS[other]
    ids = fill_a(client)
    mine = fill_b(client, scope)
    before = snapshot(client, ids)

    for name in ("event", "memory", "replacement", "correction event", "persona event", "persona memory"):
        assert_not_found(client, "memory_read", record_id=ids[name], **scope)
        assert_not_found(client, "memory_forget", record_id=ids[name], **scope)
    for name in ("memory", "replacement", "persona memory"):
        assert_not_found(client, "memory_correct", memory_id=ids[name], content="hijacked", reason="x", **scope)
    assert_not_found(client, "session_checkpoint", state={"goal": "steal"}, covered_event_id=ids["event"],
                     session_id="shared-session", **scope)  # fmt: skip

    for query, extra in (
        ("Zanzibar xylophone pirate marmalade", {}),
        ("Zanzibar", {"include_history": True, "as_of": "2999-01-01T00:00:00Z", "detail": "detailed"}),
        ("xylophone", {"search_mode": "deep"}),
        ("", {"cue_key": "shared-cue"}),
        ("city", {"cue_key": "shared-cue", "session_id": "shared-session"}),
    ):
        found = client.ok("memory_recall", query=query, **extra, **scope)
        assert_blind(found, ids, f"memory_recall {query!r} {extra}")
        assert found["coverage"]["events_in_scope"] == 1, "recall counts another scope's events"
    cue_hits = client.ok("memory_recall", query="", cue_key="shared-cue", **scope)
    assert [h["event_id"] for h in cue_hits["raw_fallback"]] + [m["source"]["event_id"] for m in cue_hits["memories"]]
    for session in (None, "shared-session"):
        resumed = client.ok("session_resume", query="Zanzibar xylophone pirate", session_id=session, **scope)
        assert_blind(resumed, ids, f"session_resume session={session}")
        assert resumed["checkpoint_id"] is None

    taken = client.error("memory_record", event_id=ids["event"], text="my city is Zanzibar and the word is xylophone",
                         role="user", source="chat", **scope)  # fmt: skip
    assert taken.startswith("conflict:") and "xylophone" not in taken and "home" not in taken

    if scope["persona_id"] != A["persona_id"]:
        persona = client.read_resource(f"persona://{scope['persona_id']}/current").contents[0].text
        assert_blind(persona, ids, "persona resource")
    prompt = client.get_prompt("start_session", {"persona_id": scope["persona_id"], "project_id": scope["project_id"]})
    assert_blind(prompt.model_dump(), ids, "start_session prompt")

    # B changes its own records: A's checkpoint must stay valid, A's records untouched.
    client.ok("memory_correct", memory_id=mine["memory_ids"][0], content="my city is Bergen", reason="moved", **scope)
    client.ok("session_checkpoint", state={"goal": "b"}, covered_event_id=mine["event_id"],
              session_id="shared-session", **scope)  # fmt: skip
    client.ok("memory_forget", record_id=mine["event_id"], **scope)
    assert snapshot(client, ids) == before
    report(f"scope isolation ({other}, {backend})", checks=len(CHECKS), leaks=0)
    CHECKS.clear()


def test_the_checks_see_a_scope_own_records_so_they_can_fail(client: SyncClient):
    """The positive control: A's own recall and persona resource do show what B's must not."""
    ids = fill_a(client)
    persona = client.read_resource("persona://alice/current").contents[0].text
    assert ids["persona memory"] in persona and "pirate" in persona
    with pytest.raises(AssertionError):
        assert_blind(client.ok("memory_recall", query="Zanzibar", **A), ids, "A's own recall")
