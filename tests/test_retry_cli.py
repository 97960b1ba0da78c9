"""`memlikehuman retry`: re-extracting pending and failed events of a scope or of all."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from conftest import BASE_ENV, make_settings
from openai_stub import Reply, ScriptedOpenAI, chat_reply, closed_port_url, extraction_reply, memory_item

from memlikehuman.cli import main
from memlikehuman.engine import Engine
from memlikehuman.records import Scope


def tea_answer(body: dict[str, Any]) -> Reply:
    """One memory quoting the event's "I like tea (ID)" (the EVENT block comes last in the prompt)."""
    event_id = re.findall(r"I like tea \((\w+)\)", body["messages"][1]["content"])[-1]
    return extraction_reply(memory_item(f"The user likes tea ({event_id}).", f"I like tea ({event_id})"))


@pytest.fixture
def stub() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as api:
        api.default_chat = tea_answer
        yield api


def record_pending(db: Path, *events: tuple[str, str, str]) -> None:
    """Record (event_id, persona, project) events with no extractor configured: they stay pending."""
    with Engine(make_settings(db)) as engine:
        for event_id, persona, project in events:
            result = engine.record(Scope(persona, project), event_id, f"I like tea ({event_id}).", "user", "chat")
            assert result.extraction_state == "pending"


def run_retry(db: Path, base_url: str | None, *args: str) -> Result:
    env = {**BASE_ENV, "MEMLIKEHUMAN_TIMEOUT": "5"}
    if base_url is not None:
        env |= {
            "MEMLIKEHUMAN_EXTRACTOR": "openai",
            "MEMLIKEHUMAN_EXTRACTOR_BASE_URL": base_url,
            "MEMLIKEHUMAN_EXTRACTOR_API_KEY": "test",
        }
    with contextlib.chdir("/"):  # no project folder: the scope is `default` (cli_support.cli)
        return CliRunner().invoke(main, ["--db", str(db), "retry", *args], env=env)


def states(db: Path) -> dict[str, tuple[str, int]]:
    with Engine(make_settings(db)) as engine:
        rows = engine.db.query("SELECT event_id, extraction_state, sequence FROM events ORDER BY sequence")
        counts = {
            row["event_id"]: int(
                engine.db.scalar("SELECT count(*) FROM memories WHERE event_sequence = ?", (row["sequence"],))
            )
            for row in rows
        }
    return {row["event_id"]: (row["extraction_state"], counts[row["event_id"]]) for row in rows}


def test_retry_completes_the_pending_events_of_one_scope_only(db_path, stub):
    record_pending(db_path, ("a1", "ada", "p1"), ("a2", "ada", "p1"), ("b1", "ada", "p2"))
    result = run_retry(db_path, stub.base_url, "--persona", "ada", "--project", "p1")
    assert result.exit_code == 0, result.output
    assert states(db_path) == {"a1": ("complete", 1), "a2": ("complete", 1), "b1": ("pending", 0)}
    assert "retried 2 event(s) in persona 'ada', project 'p1': 2 complete (2 memories)" in result.stdout
    assert "extracting" in result.stderr
    assert "extracting" not in result.stdout


def test_retry_all_covers_every_scope_and_a_second_run_finds_nothing_to_do(db_path, stub):
    record_pending(db_path, ("a1", "ada", "p1"), ("b1", "bob", "p2"), ("c1", "default", "default"))
    first = run_retry(db_path, stub.base_url, "--all")
    second = run_retry(db_path, stub.base_url, "--all")
    assert first.exit_code == 0, first.output
    assert all(state == ("complete", 1) for state in states(db_path).values())
    assert "retried 3 event(s) in all scopes" in first.stdout
    assert "retried 0 event(s)" in second.stdout


def test_retry_also_retries_failed_events(db_path, stub):
    stub.chat.append(chat_reply("not json at all"))
    settings = make_settings(
        db_path,
        MEMLIKEHUMAN_EXTRACTOR="openai",
        MEMLIKEHUMAN_EXTRACTOR_BASE_URL=stub.base_url,
        MEMLIKEHUMAN_EXTRACTOR_API_KEY="test",
        MEMLIKEHUMAN_EXTRACTION_WAIT="60",
    )
    with Engine(settings) as engine:
        assert engine.record(Scope(), "e1", "I like tea (e1).", "user", "chat").extraction_state == "failed"
    result = run_retry(db_path, stub.base_url)
    assert result.exit_code == 0, result.output
    assert states(db_path) == {"e1": ("complete", 1)}


def test_retry_without_a_configured_extractor_says_how_to_configure_one(db_path):
    record_pending(db_path, ("a1", "default", "default"))
    result = run_retry(db_path, None)
    assert result.exit_code == 3
    assert "MEMLIKEHUMAN_EXTRACTOR=openai" in result.stderr
    assert states(db_path) == {"a1": ("pending", 0)}


def test_retry_stops_after_three_unreachable_attempts_and_reports_the_rest(db_path):
    record_pending(db_path, *((f"e{i}", "default", "default") for i in range(5)))
    result = run_retry(db_path, closed_port_url())
    assert result.exit_code == 3
    assert "3 pending" in result.stdout
    assert "2 not tried" in result.stdout
    assert "cannot reach the extractor" in result.stderr
    assert all(state == ("pending", 0) for state in states(db_path).values())


def test_retry_refuses_all_together_with_a_scope(db_path, stub):
    result = run_retry(db_path, stub.base_url, "--all", "--persona", "ada")
    assert result.exit_code == 2
    assert "either --all or --persona/--project" in result.stderr
