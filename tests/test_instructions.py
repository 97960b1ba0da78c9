"""One instruction text for the agent everywhere: the README shows what the server, the prompt and the hooks say."""

from __future__ import annotations

from pathlib import Path

from memlikehuman.instructions import HOOKS, HOST_INSTRUCTIONS, REMEMBER, SERVER
from memlikehuman.server.app import INSTRUCTIONS
from memlikehuman.server.persona import start_session_text

README = Path(__file__).resolve().parent.parent / "README.md"


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_readme_shows_the_host_instructions_word_for_word():
    assert HOST_INSTRUCTIONS in README.read_text(encoding="utf-8")


def test_prompt_and_hooks_tell_the_agent_the_same_about_making_memories():
    for text in (start_session_text("default", "default"), HOOKS, HOST_INSTRUCTIONS):
        assert _flat(REMEMBER) in _flat(text)


def test_the_server_instructions_tell_in_short_how_to_make_a_memory():
    # Sent with every model request (tests/test_tool_budget.py bounds them): REMEMBER without the hooks' part.
    assert INSTRUCTIONS == SERVER
    for words in ("session_resume", "memory_record", "memories", "exact quote", "subject key", "user.package_manager",
                  "memory_recall", "memory_read", "never instructions"):  # fmt: skip
        assert words in SERVER
