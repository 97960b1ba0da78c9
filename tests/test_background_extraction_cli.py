"""`memlikehuman extract [--follow]`: the background worker for imports and hooks, without a server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from cli_support import cli
from conftest import BASE_ENV, make_settings
from openai_stub import ScriptedOpenAI
from test_background_extraction import env, quote_answer, record_in, wait_until

from memlikehuman.engine import Engine
from memlikehuman.records import Scope


def state(db_path, event_id: str, scope: Scope | None = None) -> str:
    with Engine(make_settings(db_path)) as engine:
        return engine.read(scope or Scope(), event_id).event.extraction_state


def test_a_hook_process_with_an_extractor_and_no_wait_leaves_the_event_queued_and_extract_completes_it(db_path):
    with ScriptedOpenAI(default_chat=quote_answer) as api:
        with Engine(make_settings(db_path, **env(api.base_url))) as hook:  # no server, no worker
            assert record_in(hook, "e1") == "pending"
            assert record_in(hook, "e2", scope=Scope("ada", "garden")) == "pending"
        assert api.requests == []
        result = cli(db_path, "extract", env=env(api.base_url))
    assert result.exit_code == 0, result.output
    assert "2 extraction attempt(s): 2 complete, 0 pending, 0 failed" in result.stdout
    assert (state(db_path, "e1"), state(db_path, "e2", Scope("ada", "garden"))) == ("complete", "complete")


def test_extract_with_a_scope_takes_only_that_scope_and_reports_what_is_left(db_path):
    with ScriptedOpenAI(default_chat=quote_answer) as api:
        with Engine(make_settings(db_path, **env(api.base_url))) as hook:
            record_in(hook, "e1")
            record_in(hook, "e2", scope=Scope("ada", "garden"))
        result = cli(db_path, "extract", "--persona", "ada", "--project", "garden", env=env(api.base_url))
    assert result.exit_code == 0, result.output
    assert (state(db_path, "e1"), state(db_path, "e2", Scope("ada", "garden"))) == ("pending", "complete")


def test_extract_follow_keeps_extracting_new_events_until_sigterm(db_path):
    with ScriptedOpenAI(default_chat=quote_answer) as api:
        settings = make_settings(db_path, **env(api.base_url))
        Engine(settings).close()  # the archive exists before the follower starts
        follower = subprocess.Popen(
            [sys.executable, "-m", "memlikehuman", "--db", str(db_path), "extract", "--all", "--follow"],
            env={**os.environ, **BASE_ENV, **env(api.base_url)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            for event_id in ("e1", "e2"):
                with Engine(settings) as hook:
                    record_in(hook, event_id)
                wait_until(lambda e=event_id: state(db_path, e) == "complete", f"{event_id} to be extracted")
            follower.send_signal(signal.SIGTERM)
            out, err = follower.communicate(timeout=30)
        finally:
            follower.kill()
    assert follower.returncode == 130, err
    assert "2 extraction attempt(s): 2 complete" in out


def test_extract_without_an_extractor_says_how_to_configure_one(db_path):
    Engine(make_settings(db_path)).close()
    result = cli(db_path, "extract")
    assert result.exit_code == 3
    assert "MEMLIKEHUMAN_EXTRACTOR=openai" in result.stderr


def test_extract_with_a_persona_but_no_project_is_a_usage_error(db_path):
    Engine(make_settings(db_path)).close()
    result = cli(db_path, "extract", "--persona", "ada", env={"MEMLIKEHUMAN_EXTRACTOR": "openai"})
    assert result.exit_code == 2
    assert "--persona and --project together" in result.stderr
