"""The MCP SDK behaviour that server/sdk.py works around, pinned on a plain MCPServer of the SDK.

Each test states what the SDK does by itself today. When an SDK release changes one of these, its pin
fails: the matching part of server/sdk.py can then go, or must change. tests/test_stdio.py and
tests/reliability/ check what our server answers instead.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from conftest import connected
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

PLAIN_SERVER = """
import time
from mcp.server.mcpserver import MCPServer
server = MCPServer("plain")

@server.tool()
def echo(text: str) -> str:
    return text

@server.tool()
def slow(text: str) -> str:
    time.sleep(0.3)  # still running when stdin ends
    return text

server.run("stdio")
"""


def plain() -> MCPServer:
    server: MCPServer = MCPServer("plain")

    @server.tool()
    def count(limit: int = 10, label: str | None = None) -> int:
        return limit

    @server.prompt()
    def hello(name: str) -> str:
        return f"hello {name}"

    return server


def _rpc(id_: int, method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n"


def _stdio_answers(lines: list[str], last_id: int) -> dict[int, dict[str, Any]]:
    """What a plain SDK server answers over stdio to `lines`, up to the answer to `last_id`."""
    with subprocess.Popen(
        [sys.executable, "-c", PLAIN_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(lines))
        proc.stdin.flush()
        answers: dict[int, dict[str, Any]] = {}
        while last_id not in answers:
            line = proc.stdout.readline()
            assert line, "the server closed stdout"
            message = json.loads(line)
            if "id" in message:
                answers[message["id"]] = message
        proc.kill()
    return answers


INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pin", "version": "0"}}
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"


@pytest.mark.lifecycle
def test_the_sdks_stdio_reader_leaves_a_request_with_a_lone_surrogate_unanswered():
    params = '{"name": "echo", "arguments": {"text": "\\ud83d"}}'
    broken = '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": ' + params + "}\n"
    answers = _stdio_answers([_rpc(1, "initialize", INIT), INITIALIZED, broken, _rpc(3, "ping", {})], last_id=3)
    assert 2 not in answers  # the host would wait for it until its own timeout


@pytest.mark.lifecycle
def test_the_sdk_leaves_a_call_unanswered_when_stdin_ends_while_it_runs():
    call = _rpc(2, "tools/call", {"name": "slow", "arguments": {"text": "hi"}})
    done = subprocess.run(
        [sys.executable, "-c", PLAIN_SERVER], input=_rpc(1, "initialize", INIT) + INITIALIZED + call,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    answers = {message["id"]: message for message in map(json.loads, done.stdout.splitlines()) if "id" in message}
    assert "result" not in answers.get(2, {})  # the host that wrote it right before closing stdin waits in vain


def test_the_sdk_publishes_titles_and_null_options_in_input_schemas():
    with connected(plain()) as client:
        schema = client.list_tools().tools[0].input_schema
    assert schema["title"] == "countArguments" and schema["properties"]["limit"]["title"] == "Limit"
    assert {"type": "null"} in schema["properties"]["label"]["anyOf"]  # a host sends all this with every request


@pytest.mark.lifecycle
def test_the_sdk_answers_badly_typed_call_params_without_naming_the_field():
    wrong = _rpc(2, "tools/call", {"name": "echo", "arguments": ["not", "an", "object"]})
    answers = _stdio_answers([_rpc(1, "initialize", INIT), INITIALIZED, wrong], last_id=2)
    message = answers[2]["error"]["message"]
    assert "arguments" not in message and not message.startswith("invalid_argument")


def test_the_sdk_reports_a_validation_failure_without_a_tools_md_code():
    with connected(plain()) as client:
        result = client.call("count", limit="many")
    assert result.is_error and not result.content[0].text.startswith("invalid_argument")


def test_the_sdk_refuses_null_for_an_optional_typed_argument():
    with connected(plain()) as client:
        result = client.call("count", limit=None)
    assert result.is_error  # hosts send null for "not given": our server takes it as the default


def test_the_sdk_answers_an_unknown_prompt_as_an_internal_error():
    with connected(plain()) as client, pytest.raises(MCPError) as raised:
        client.get_prompt("no_such_prompt", {})
    assert raised.value.error.code == -32603  # INTERNAL_ERROR: the caller's mistake looks like our bug


def test_the_private_sdk_attributes_the_server_reads_are_there():
    server = plain()
    assert server._tool_manager.get_tool("count") is not None
    assert server._prompt_manager.get_prompt("hello") is not None
    lowlevel = server._lowlevel_server
    assert callable(lowlevel.run) and callable(lowlevel.create_initialization_options)
