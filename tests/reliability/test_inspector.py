"""A third-party client: the MCP Inspector CLI (Node) drives `memlikehuman serve` through tools/list,
one call of each tool, the persona resource, the start_session prompt and a coded error.

CI installs the Inspector under .ci/node (see .ci/run); elsewhere the test falls back to npx. It
skips only outside CI when Node.js is missing; in CI (CI=true) a missing Node fails the test.
Both backends (`archive_target`): every Inspector run starts its own server on the same archive.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from openai_stub import ScriptedOpenAI

from .support import QuotingExtractor, error_code, extractor_env, report

PACKAGE = "@modelcontextprotocol/inspector@2.12.0"
ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / ".ci" / "node" / "node_modules" / ".bin" / "mcp-inspector"
TOOLS = {
    "memory_record",
    "memory_recall",
    "memory_read",
    "memory_correct",
    "memory_forget",
    "session_checkpoint",
    "session_resume",
}


def inspector() -> list[str]:
    """The Inspector command: the CI install, else npx; skip (fail in CI) without Node.js."""
    npx = shutil.which("npx")
    if shutil.which("node") and LOCAL.exists():
        return [str(LOCAL)]
    if shutil.which("node") and npx:
        return [npx, "-y", PACKAGE]
    if os.environ.get("CI") == "true":
        pytest.fail("Node.js (node and npx) is required in CI for the MCP Inspector test: install Node 20")
    pytest.skip("Node.js is not installed: the MCP Inspector test needs node and npx")


class Inspector:
    def __init__(self, command: list[str], db: Path | str, env: dict[str, str]) -> None:
        self.command = command
        self.flags = [part for key, value in env.items() for part in ("-e", f"{key}={value}")]
        # The console script, not `python -m`: the Inspector would read -m as its own option.
        self.server = [str(Path(sys.executable).with_name("memlikehuman")), "serve", "--db", str(db)]
        self.calls = 0

    def run(self, method: str, *args: str, exit_code: int = 0) -> dict[str, Any]:
        """One Inspector run (a fresh server process); exit code 5 is its "the tool returned isError"."""
        self.calls += 1
        done = subprocess.run(
            [*self.command, "--cli", *self.flags, "--method", method, *args, "--", *self.server],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
        )
        assert done.returncode == exit_code, (
            f"{method} {args}: exit {done.returncode}\n{done.stdout}\n{done.stderr[-2000:]}"
        )
        try:
            return dict(json.loads(done.stdout))
        except ValueError:
            raise AssertionError(f"{method} {args}: not JSON on stdout:\n{done.stdout[:2000]}") from None

    def tool(self, name: str, exit_code: int = 0, **arguments: str) -> dict[str, Any]:
        pairs = [f"{key}={value}" for key, value in arguments.items()]
        return self.run("tools/call", "--tool-name", name, "--tool-arg", *pairs, exit_code=exit_code)


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result.get("isError") is False, result
    return dict(result["structuredContent"])


def test_the_mcp_inspector_cli_lists_and_calls_every_tool_the_resource_and_the_prompt(
    archive_target: str, backend: str
):
    command = inspector()
    with ScriptedOpenAI(default_chat=QuotingExtractor()) as api:
        client = Inspector(command, archive_target, extractor_env(api.base_url))
        listed = client.run("tools/list")["tools"]
        assert {tool["name"] for tool in listed} == TOOLS
        assert all(tool.get("outputSchema") and tool.get("inputSchema") for tool in listed)

        recorded = ok(client.tool("memory_record", event_id="insp-1", text="my city is Lisbon", role="user",
                                  source="inspector", cues='[{"kind": "photo", "key": "harbour-1"}]'))  # fmt: skip
        assert recorded["extraction_state"] == "complete" and len(recorded["memory_ids"]) == 1
        memory_id = recorded["memory_ids"][0]

        calls = {
            "read": lambda: client.tool("memory_read", record_id=memory_id),
            "recall": lambda: client.tool("memory_recall", query="Lisbon", limit="5"),
            "checkpoint": lambda: client.tool(
                "session_checkpoint", state='{"goal": "ship it"}', covered_event_id="insp-1"
            ),  # fmt: skip
            "resume": lambda: client.tool("session_resume", query="Lisbon", token_budget="3000"),
            "missing": lambda: client.tool("memory_read", exit_code=5, record_id="no-such-event"),
            "resource": lambda: client.run("resources/read", "--uri", "persona://default/current"),
            "prompt": lambda: client.run(
                "prompts/get",
                "--prompt-name",
                "start_session",
                "--prompt-args",
                "persona_id=p1",
                "project_id=inspector",
            ),  # fmt: skip
        }
        with ThreadPoolExecutor(max_workers=3) as pool:
            futures = {name: pool.submit(call) for name, call in calls.items()}
        out = {name: future.result() for name, future in futures.items()}
        assert ok(out["read"])["source_page"]["text"] == "my city is Lisbon"
        assert [m["memory_id"] for m in ok(out["recall"])["memories"]] == [memory_id]
        assert ok(out["checkpoint"])["covered_event_id"] == "insp-1"
        assert ok(out["resume"])["status"] == "ok" and "Lisbon" in ok(out["resume"])["context"]
        assert out["missing"]["isError"] is True
        assert error_code(out["missing"]["content"][0]["text"]) == "not_found"
        assert "No core persona is set" in out["resource"]["contents"][0]["text"]
        assert 'persona "p1" and project "inspector"' in out["prompt"]["messages"][0]["content"]["text"]

        corrected = ok(client.tool("memory_correct", memory_id=memory_id, content="my city is Porto", reason="moved"))
        forgotten = ok(client.tool("memory_forget", record_id="insp-1"))
        assert set(forgotten["deleted_event_ids"]) == {"insp-1", corrected["correction_event_id"]}
        assert set(forgotten["deleted_memory_ids"]) == {memory_id, corrected["replacement_id"]}
    report(
        f"MCP Inspector CLI ({backend})",
        inspector=PACKAGE,
        client=command[0].rsplit("/", 1)[-1],
        calls=client.calls,
        failures=0,
    )
