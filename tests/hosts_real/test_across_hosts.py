"""One memory across hosts: the real Claude Code, Codex and Gemini CLIs in one home, one project, one archive.

A fact taught in Claude Code (session 1: the stand-in keeps it as a memory of the recorded turn) is handed
to Codex and to Gemini at the start of their next session in the same project; a forget in Gemini is gone
from what every host is handed next, and from the archive.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from . import scenarios, support
from .standin import Call, Request, Rule, Script, Text

NAMES = ("claude-code", "codex", "gemini")
FORGET = "Please forget what I told you about the package manager."


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, support.World]]:
    """The three hosts in one throwaway home and project, each with its own stand-in model, one archive."""
    for name in NAMES:
        support.cli(support.HOSTS[name].binary)  # skip (or fail in CI) before anything starts
    root = tmp_path_factory.mktemp("across")
    worlds = {}
    try:
        for name in NAMES:
            world = support.World(support.HOSTS[name], root, log=f"requests-{name}.jsonl")
            worlds[name] = world.start()
            world.install()
        yield worlds
    finally:
        for world in worlds.values():
            world.stop()


def _facts(run: support.Run) -> list[str]:
    return scenarios.standing_facts(run.first())


def _forget_script() -> Script:
    """The model finds the package manager's memory and forgets the turn it was made of, then answers."""

    def forget(request: Request) -> dict[str, Any]:
        found = [r for r in request.results() if r.tool == "memory_recall"]
        body = found[-1].json() if found else {}
        for item in [*body.get("memories", []), *body.get("raw_fallback", [])]:
            if "pnpm" in json.dumps(item):
                return {"record_id": item.get("memory_id") or item["event_id"], **scenarios.scope_from_context(request)}
        raise LookupError(f"the recall result names nothing about pnpm: {found[-1].text[:500] if found else None}")

    recall = {"query": "package manager", "alternatives": ["pnpm"]}
    steps = (
        Call("memory_recall", lambda r: {**recall, **scenarios.scope_from_context(r)}),
        Call("memory_forget", forget),
    )
    return Script([Rule("forget", (*steps, Text("Forgotten.")))])


def test_a_fact_taught_in_one_host_reaches_the_others_and_a_forget_in_one_is_gone_in_all(
    hosts: dict[str, support.World],
) -> None:
    claude, codex, gemini = (hosts[name] for name in NAMES)
    claude.expect_ok(claude.run(scenarios.PNPM, scenarios.remember_script()))
    content = scenarios.PNPM_MEMORY["content"]
    problems = scenarios.Problems("one memory across Claude Code, Codex and Gemini")
    for world in (codex, gemini):
        run = world.expect_ok(world.run("hello", scenarios.NOTED))
        problems.check(content in _facts(run), f"{world.host.name}'s next session was not handed {content!r}")
    gemini.expect_ok(gemini.run(FORGET, _forget_script()))
    for world in (claude, codex, gemini):
        run = world.expect_ok(world.run("hello again", scenarios.NOTED))
        handed = "\n".join(run.first().hook_context())
        problems.check(
            "pnpm" not in handed, f"{world.host.name} was still handed pnpm after the forget: {handed[:800]}"
        )
    left = claude.archive().texts()
    problems.check(scenarios.PNPM not in left and content not in left, "the archive still holds the forgotten fact")
    problems.assert_none(claude.archive().describe())


def test_every_host_records_into_the_one_archive_and_project(hosts: dict[str, support.World]) -> None:
    assert hosts["codex"].db == hosts["gemini"].db == hosts["claude-code"].db
    with sqlite3.connect(f"file:{hosts['claude-code'].db}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT DISTINCT source, project_id FROM events WHERE role = 'user'").fetchall()
    assert {source for source, _ in rows} == set(NAMES), rows
    assert len({project for _, project in rows}) == 1, rows
