"""The real `memlikehuman serve` subprocess: JSON-RPC-only stdout, restart durability, concurrency."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import BASE_ENV, connected, stdio_params

from memlikehuman import config
from memlikehuman.engine import Engine


def _rpc(message_id: int, method: str, params: dict) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": message_id, "method": method, "params": params}) + "\n"


def _serve(db_path: Path) -> subprocess.Popen[str]:
    """A real `memlikehuman serve` on the archive, written to and read as raw text."""
    return subprocess.Popen(
        [sys.executable, "-m", "memlikehuman", "serve", "--db", str(db_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **BASE_ENV},
    )


def test_a_raw_stdio_session_writes_only_json_rpc_to_stdout(db_path: Path):
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    calls = [
        _rpc(1, "initialize", init),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n",
        _rpc(2, "tools/list", {}),
        _rpc(
            3,
            "tools/call",
            {
                "name": "memory_record",
                "arguments": {
                    "event_id": "raw-1",
                    "text": "print('hello')\nSYSTEM: not a log line",
                    "role": "user",
                    "source": "raw",
                },
            },
        ),
        _rpc(4, "tools/call", {"name": "memory_record", "arguments": {"event_id": "raw-2", "text": "", "role": "x"}}),
    ]
    # The read of raw-1 goes after its record is answered: a server may answer calls in any order (JSON-RPC),
    # and one pipelined right behind the record could run first.
    then = [
        _rpc(5, "tools/call", {"name": "memory_read", "arguments": {"record_id": "raw-1"}}),
        _rpc(6, "tools/call", {"name": "no_such_tool", "arguments": {}}),
        _rpc(7, "tools/call", {"name": "memory_read", "arguments": ["raw-1"]}),
        _rpc(8, "tools/call", {"name": 5, "arguments": {}}),
    ]
    proc = _serve(db_path)
    assert proc.stdin and proc.stdout
    lines: list[str] = []
    for batch, answered in ((calls, 4), (then, 8)):
        proc.stdin.write("".join(batch))
        proc.stdin.flush()
        while len([line for line in lines if '"id"' in line]) < answered:
            line = proc.stdout.readline()
            assert line, "the server closed stdout early"
            lines.append(line)
    proc.stdin.close()
    lines += proc.stdout.read().splitlines()
    stderr = proc.stderr.read() if proc.stderr else ""
    assert proc.wait(timeout=30) == 0
    proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()
    lines = [line for line in lines if line.strip()]
    messages = [json.loads(line) for line in lines]
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    by_id = {m["id"]: m for m in messages if "id" in m}
    assert set(by_id) >= {1, 2, 3, 4, 5, 6, 7, 8}
    assert by_id[3]["result"]["structuredContent"]["event_id"] == "raw-1"
    assert by_id[4]["result"]["isError"] is True
    assert by_id[4]["result"]["content"][0]["text"].startswith("invalid_argument:")
    assert by_id[5]["result"]["structuredContent"]["source_page"]["text"].startswith("print('hello')")
    assert by_id[7]["error"]["message"].startswith("invalid_argument: params.arguments must be a JSON object")
    assert by_id[8]["error"]["message"].startswith("invalid_argument: params.name must be")
    assert "Traceback" not in "".join(lines)
    # A host keeps stderr as an error log: no start-up lines when no person watches (stderr is a pipe here).
    assert stderr == ""


def test_serve_says_where_it_stands_on_stderr_with_verbose(db_path: Path):
    served = subprocess.run(
        [sys.executable, "-m", "memlikehuman", "-v", "serve", "--db", str(db_path)],
        input="",
        capture_output=True,
        text=True,
        env={**os.environ, **BASE_ENV},
        timeout=60,
        check=False,
    )
    assert served.returncode == 0 and served.stdout == ""
    assert "waiting for an MCP host on stdio" in served.stderr and str(db_path) in served.stderr


def test_every_tool_advertises_an_output_schema(stdio_client):
    tools = stdio_client.list_tools().tools
    assert {"memory_record", "memory_read"} <= {t.name for t in tools}
    assert all(t.output_schema for t in tools)


def test_every_tool_says_what_it_does_to_the_archive_for_hosts_that_gate_tools_by_it(stdio_client):
    # Codex runs a tool marked read-only without asking and refuses unmarked ones in `exec` (docs/hosts.md).
    hints = {t.name: t.annotations for t in stdio_client.list_tools().tools}
    reading = {"memory_recall", "memory_read", "session_resume"}
    assert all(hints[name] is not None and hints[name].read_only_hint for name in reading)
    writing = set(hints) - reading
    assert writing == {"memory_record", "session_checkpoint", "memory_correct", "memory_forget"}
    assert all(hints[name].read_only_hint is False for name in writing)
    assert {name for name in writing if hints[name].destructive_hint} == {"memory_correct", "memory_forget"}
    assert hints["memory_record"].idempotent_hint and not hints["session_checkpoint"].idempotent_hint
    # No provider configured here (the test settings): nothing reaches beyond this machine.
    assert all(hint.open_world_hint is False for hint in hints.values())


def test_recorded_events_survive_a_server_restart(db_path: Path):
    with connected(stdio_params(db_path)) as client:
        client.ok("memory_record", event_id="durable", text="still here", role="user", source="chat")
    with connected(stdio_params(db_path)) as client:
        assert client.ok("memory_read", record_id="durable")["source_page"]["text"] == "still here"


WRITER = r"""
import sys
from memlikehuman import config
from memlikehuman.engine import Engine
from memlikehuman.records import Scope
db, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
env = {"MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
with Engine(config.load(db, env=env)) as engine:
    for i in range(count):
        out = engine.record(Scope("p", "proj"), f"{worker}-{i}", f"text {worker} {i}", "user", worker)
        print(out.event_id, out.sequence, flush=True)
"""


def test_four_processes_recording_at_once_lose_and_duplicate_nothing(db_path: Path):
    count = 60
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db_path), f"w{n}", str(count)], stdout=subprocess.PIPE, text=True
        )
        for n in range(4)
    ]
    acknowledged = {}
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        for line in out.splitlines():
            event_id, sequence = line.split()
            acknowledged[event_id] = int(sequence)
    assert len(acknowledged) == 4 * count
    assert len(set(acknowledged.values())) == 4 * count
    settings = config.load(db_path, env=BASE_ENV)
    with Engine(settings) as engine:
        rows = engine.db.query("SELECT event_id, sequence FROM events ORDER BY sequence")
    assert {r["event_id"]: r["sequence"] for r in rows} == acknowledged
    for n in range(4):
        mine = [acknowledged[f"w{n}-{i}"] for i in range(count)]
        assert mine == sorted(mine), "each writer's sequences increase in its recording order"


def test_a_request_nested_thousands_of_levels_deep_gets_an_answer_and_the_server_keeps_serving(db_path: Path):
    # A model writes a tool's arguments: one nested 5,000 levels deep (10 kB of brackets) is refused by the
    # SDK's parser, and reading its ID must not overflow Python's own parser.
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    deep = "[" * 5000 + "]" * 5000
    calls = [
        _rpc(1, "initialize", init),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n",
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_recall", "arguments": '
        f'{{"query": "x", "cues": {deep}}}}}}}\n',
        _rpc(3, "tools/call", {"name": "memory_recall", "arguments": {"query": "tea"}}),
    ]
    with _serve(db_path) as proc:
        try:
            out, err = proc.communicate("".join(calls), timeout=60)
        finally:
            proc.kill()
    by_id = {m["id"]: m for m in map(json.loads, out.splitlines()) if "id" in m}
    assert by_id[2]["error"]["code"] == -32602
    assert by_id[2]["error"]["message"].startswith("invalid_argument: the request is nested 5,003 levels deep")
    assert by_id[3]["result"]["isError"] is False
    assert proc.returncode == 0 and "Traceback" not in err
