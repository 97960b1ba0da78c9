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


def test_server_prompt_and_hooks_tell_the_agent_the_same_about_making_memories():
    for text in (INSTRUCTIONS, start_session_text("default", "default"), HOOKS, SERVER, HOST_INSTRUCTIONS):
        assert _flat(REMEMBER) in _flat(text)
