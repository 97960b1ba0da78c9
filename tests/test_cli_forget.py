"""`memlikehuman forget ID`: the preview the UI shows, a question at a terminal, then memory_forget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cli_support import cli, json_out
from conftest import make_settings
from terminal_support import CTRL_C, at_terminal
from test_forget_still_said import note_and_what_repeats_it, say

from memlikehuman.engine import Engine
from memlikehuman.records import Scope
from memlikehuman.server.tools_corrections import ForgetOut


def ids(client: Any, query: str) -> list[str]:
    return [hit["event_id"] for hit in client.ok("memory_recall", query=query)["raw_fallback"]]


def kept(client: Any, *event_ids: str) -> set[str]:
    """The events among event_ids that memory_read still finds."""
    return {e for e in event_ids if not client.call("memory_read", record_id=e).is_error}


def test_forget_with_yes_removes_a_record_and_prints_what_was_deleted(client: Any, db_path: Path) -> None:
    say(client, "e1", "My gym locker code is 4471")
    say(client, "e2", "The gym opens at six")
    done = cli(db_path, "forget", "e1", "--yes")
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[:2] == [
        "forgot 1 event and 0 memories; 0 checkpoints invalidated",
        "deleted events: e1",
    ]
    assert ids(client, "gym") == ["e2"]
    again = cli(db_path, "forget", "e1", "--yes")
    assert again.exit_code == 1 and again.stderr.startswith("error: not_found: no record 'e1' in the archive")


def test_forget_finds_the_scope_of_the_id_wherever_it_runs_and_a_scope_given_must_be_that_one(
    db_path: Path, tmp_path: Path
) -> None:
    with Engine(make_settings(db_path)) as engine:
        engine.record(Scope("alice", "garden"), "g1", "Roses need full sun", "user", "chat")
    folder = tmp_path / "elsewhere"  # a project folder of its own
    folder.mkdir()
    other = cli(db_path, "forget", "g1", "--yes", "--project", "work", cwd=folder)
    assert other.exit_code == 1 and "'g1' is in persona 'alice', project 'garden', not in the scope" in other.stderr
    done = cli(db_path, "forget", "g1", "--yes", "--json", cwd=folder)
    assert json_out(done)["deleted_event_ids"] == ["g1"]
    with Engine(make_settings(db_path)) as engine:
        assert engine.scope_of("g1") is None


def test_forget_without_a_terminal_or_yes_refuses_as_wrong_usage_and_deletes_nothing(
    client: Any, db_path: Path
) -> None:
    say(client, "e1", "My gym locker code is 4471")
    refused = cli(db_path, "forget", "e1")
    assert refused.exit_code == 2 and "pass --yes" in refused.stderr
    assert ids(client, "locker") == ["e1"]


def test_forget_json_prints_the_memory_forget_tools_fields(client: Any, db_path: Path) -> None:
    agents = note_and_what_repeats_it(client)
    printed = json_out(cli(db_path, "forget", "n1", "--yes", "--json"))
    assert list(printed) == list(ForgetOut.model_fields)
    assert (printed["deleted_event_ids"], printed["still_said_by"]) == (["n1"], ["r1", agents])


def test_forget_also_deletes_what_still_says_it(client: Any, db_path: Path) -> None:
    agents = note_and_what_repeats_it(client)
    printed = json_out(cli(db_path, "forget", "n1", "--also", "--yes", "--json"))
    assert (printed["deleted_event_ids"], printed["deleted_memory_ids"]) == (["n1", "r1"], [agents])
    assert not {"n1", "r1"} & set(ids(client, "8443"))


def test_at_a_terminal_forget_shows_the_preview_and_deletes_only_when_the_answer_is_yes(
    client: Any, db_path: Path
) -> None:
    agents = note_and_what_repeats_it(client)
    declined = at_terminal("--db", str(db_path), "forget", "n1", answer="n")
    assert declined.returncode == 0 and "nothing was forgotten" in declined.screen
    screen = declined.screen
    assert "Forgetting n1 of persona 'default', project 'default' deletes," in screen
    assert "events (1): the source event and every connected correction\n  n1  chat (user)" in screen
    assert "    Note: staging is staging.example.internal:8443\n" in screen
    assert "still said by (2): other records that state it too; they stay unless you forget them too" in screen
    assert "\n  r1  chat (assistant)" in screen and f"\n  {agents}  fact, stated\n" in screen
    assert screen.index("still said by") < screen.index("Forget n1 and what the preview lists? [y/N]")
    assert kept(client, "n1", "r1") == {"n1", "r1"}
    confirmed = at_terminal("--db", str(db_path), "forget", "n1", answer="y")
    assert confirmed.returncode == 0, confirmed.screen
    assert (
        "forgot 1 event and 0 memories" in confirmed.screen
        and "still said by (forget them too: --also): r1" in confirmed.screen
    )
    assert kept(client, "n1", "r1") == {"r1"}


def test_ctrl_c_at_the_question_is_an_interruption_and_deletes_nothing(client: Any, db_path: Path) -> None:
    say(client, "e1", "My gym locker code is 4471")
    interrupted = at_terminal("--db", str(db_path), "forget", "e1", answer=CTRL_C)
    assert interrupted.returncode == 130, interrupted.screen
    assert ids(client, "locker") == ["e1"]
