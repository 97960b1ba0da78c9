"""The real codex CLI, headless, against the stand-in model: the scenarios of scenarios.py."""

from __future__ import annotations

from . import scenarios
from .support import Run, World

HOST = "codex"


def test_session_one_prompts_are_recorded_exactly_as_typed(host: World, session1: scenarios.SessionOne) -> None:
    scenarios.check_recorded_as_typed(host, session1)


def test_a_resumed_sessions_prompt_names_its_recorded_turn_and_session(
    host: World, session1: scenarios.SessionOne
) -> None:
    scenarios.check_resumed_prompt_names_its_record(host, session1)


def test_a_paraphrase_finds_our_context_tools_and_instructions_in_the_first_request(host: World, session2: Run) -> None:
    scenarios.check_first_request(host, session2)


def test_the_model_reads_the_recalled_preference_in_the_next_request(host: World, session2: Run) -> None:
    scenarios.check_recall_result_read(host, session2)


def test_the_agent_attaches_memories_checkpoints_resumes_and_forgets(
    host: World, session1: scenarios.SessionOne
) -> None:
    scenarios.check_chores(host, scenarios.session_three(host))


def test_uninstall_leaves_the_config_files_as_they_were(fresh: World) -> None:
    scenarios.install_run_uninstall(fresh)
