"""memory_record over stdio with an extractor configured: does background extraction keep it fast?

`memlikehuman serve` processes in one run, each sent the same messages over stdio:
- no extractor (the baseline: today's figure without a model);
- an extractor whose model takes SECONDS per call (the scripted OpenAI-compatible server on
  127.0.0.1 with a delay), MEMLIKEHUMAN_EXTRACTION_WAIT=0: the worker is busy with the model the
  whole time, memory_record must not notice;
- the same with the host's model: MCP sampling (a legacy client whose sampling callback
  takes SECONDS), and a command (a script on PATH taking SECONDS, as a host CLI run headless);
- memory_record with the agent's own `memories` (one item, checked and stored in the call);
- the first extractor with a wait longer than the model (inline extraction, as before background extraction),
  for a few calls: what a host paid per message.

    python -m bench.record_extracting [--calls 300] [--model-seconds 3]

Writes the "record-extracting" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp_types import CreateMessageResult, TextContent

from bench.report import percentile, table, write_section

BASE = {"MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}


class SlowModel:
    """An OpenAI-compatible chat endpoint that answers `{"memories": []}` after `seconds`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                model.calls += 1
                time.sleep(model.seconds)
                message = {"role": "assistant", "content": json.dumps({"memories": []})}
                body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "slow",
                                   "choices": [{"index": 0, "finish_reason": "stop", "message": message}]})  # fmt: skip
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


class SlowSampling:
    """A sampling callback (the host's model) that answers `{"memories": []}` after `seconds`."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.calls = seconds, 0

    async def __call__(self, ctx: Any, params: Any) -> CreateMessageResult:
        self.calls += 1
        await anyio.sleep(self.seconds)
        content = TextContent(type="text", text=json.dumps({"memories": []}))
        return CreateMessageResult(role="assistant", content=content, model="slow-host")


def slow_command(folder: Path, seconds: float) -> Path:
    """A program that reads the prompt, waits `seconds` and prints an empty answer (a headless CLI)."""
    path = folder / "slow-cli"
    reply = 'json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "{\\"memories\\": []}"})'
    body = f"import json, sys, time\nsys.stdin.read()\ntime.sleep({seconds})\nprint({reply})\n"
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return path


GIVEN = [{"content": "The user had dinner in Lisbon with Ana", "quote": "I had dinner in Lisbon with Ana"}]


async def round_trips(
    db: Path, env: dict[str, str], calls: int, tag: str, sampling: SlowSampling | None = None, given: bool = False
) -> list[float]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memlikehuman", "serve", "--db", str(db)], env={**os.environ, **env}
    )
    times: list[float] = []
    mode = "legacy" if sampling is not None else "auto"
    async with Client(params, sampling_callback=sampling, mode=mode) as client:  # type: ignore[arg-type]
        await client.call_tool("memory_read", {"record_id": "none"})  # warm: the archive is open
        for i in range(calls):
            text = f"I had dinner in Lisbon with Ana on Friday and we talked about the garden ({tag} {i})."
            args: dict[str, Any] = {
                "event_id": f"{tag}-{i}", "text": text, "role": "user", "source": "bench", "session_id": "s"
            }  # fmt: skip
            if given:
                args["memories"] = GIVEN
            start = time.perf_counter()
            result = await client.call_tool("memory_record", args)
            times.append((time.perf_counter() - start) * 1000)
            assert not result.is_error, result.content
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--inline-calls", type=int, default=5)
    parser.add_argument("--model-seconds", type=float, default=3.0)
    args = parser.parse_args()
    model = SlowModel(args.model_seconds)
    extractor = {
        **BASE,
        "MEMLIKEHUMAN_EXTRACTOR": "openai",
        "MEMLIKEHUMAN_EXTRACTOR_BASE_URL": model.base_url,
        "MEMLIKEHUMAN_EXTRACTOR_API_KEY": "bench",
        "MEMLIKEHUMAN_TIMEOUT": str(args.model_seconds * 4),
    }
    sampling = SlowSampling(args.model_seconds)
    slow = f"{args.model_seconds:g} s/call, WAIT=0"
    with tempfile.TemporaryDirectory() as tmp:
        command = slow_command(Path(tmp), args.model_seconds)
        runs: list[tuple[str, dict[str, str], int, SlowSampling | None, bool]] = [
            ("no extractor (baseline)", {**BASE, "MEMLIKEHUMAN_EXTRACTOR": "none"}, args.calls, None, False),
            (f"extractor, model {slow}", {**extractor, "MEMLIKEHUMAN_EXTRACTION_WAIT": "0"}, args.calls, None, False),
            (f"sampling, the client's model {slow}", {**BASE, "MEMLIKEHUMAN_EXTRACTOR": "sampling",
             "MEMLIKEHUMAN_TIMEOUT": str(args.model_seconds * 4)}, args.calls, sampling, False),
            (f"command, a CLI {slow}", {**BASE, "MEMLIKEHUMAN_EXTRACTOR": "command",
             "MEMLIKEHUMAN_EXTRACTOR_COMMAND": str(command), "MEMLIKEHUMAN_TIMEOUT": str(args.model_seconds * 4)},
             args.calls, None, False),
            ("memories given by the agent (1 item)", {**BASE, "MEMLIKEHUMAN_EXTRACTOR": "none"}, args.calls, None,
             True),
            (
                f"extractor, model {args.model_seconds:g} s/call, WAIT=60 (inline)",
                {**extractor, "MEMLIKEHUMAN_EXTRACTION_WAIT": "60"},
                args.inline_calls, None, False,
            ),
        ]  # fmt: skip
        rows = []
        figures: dict[str, float] = {}
        for number, (name, env, calls, callback, given) in enumerate(runs):
            times = anyio.run(round_trips, Path(tmp) / f"a{number}.sqlite3", env, calls, f"r{number}", callback, given)
            figures[name] = percentile(times, 50)
            rows.append([name, calls, f"{percentile(times, 50):.2f}", f"{percentile(times, 95):.2f}"])
    base = figures[runs[0][0]]
    deltas = ", ".join(f"{name.split(',')[0]} {figures[name] - base:+.2f} ms" for name, *_ in runs[1:5])
    body = table(["memory_record over stdio", "calls", "p50 ms", "p95 ms"], rows)
    body += (
        f"\n\nWith the worker busy on a model that takes {args.model_seconds:g} s per call"
        f" ({model.calls} OpenAI-compatible calls, {sampling.calls} sampling requests during the run),"
        f" memory_record's p50 against the figure without an extractor: {deltas} (target: within 2 ms)."
        " The inline row is what every message cost a host before background extraction (and costs with a"
        " large MEMLIKEHUMAN_EXTRACTION_WAIT)."
    )
    print(body)
    command = f"python -m bench.record_extracting --calls {args.calls} --model-seconds {args.model_seconds:g}"
    write_section("record-extracting", "memory_record with an extractor configured", command, body)


if __name__ == "__main__":
    main()
