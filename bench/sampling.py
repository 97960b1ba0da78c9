"""Memories made by the "host's model" through MCP sampling, with a real model behind the client.

`memlikehuman serve` runs over real stdio with MEMLIKEHUMAN_EXTRACTOR=sampling; the client is the
official SDK's (the handshake flow hosts speak today), and its sampling callback forwards each
request to the local Qwen2.5-Coder-1.5B server of scripts/install-local-llm (started on 127.0.0.1
here, stopped at the end): the system prompt and the user message as the server sent them, JSON
mode. The first `--turns` turns of a LoCoMo conversation are recorded as a host would
(MEMLIKEHUMAN_EXTRACTION_WAIT=0: memory_record answers at once), and the worker extracts them in
the background through the client. Reported: answers that were JSON of the right shape, items whose
quote occurs in their event's text, memories stored, model seconds per event, memory_record p50.

    python -m bench.sampling [--turns 30] [--conversation 0] [--batch 1] [--minutes 30]

Writes the "sampling" section of docs/benchmarks.md. The data (CC BY-NC 4.0) is read from
../shared/data/locomo10.json and never copied into the repo.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import openai
from mcp import Client, StdioServerParameters
from mcp_types import CreateMessageRequestParams, CreateMessageResult, TextContent

from bench.conversation_recall import DATA, load
from bench.local_llm import MODEL_ALIAS, LocalModel, installed
from bench.report import percentile, table, write_section

BASE = {"MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent", "MEMLIKEHUMAN_EXTRACTION_WAIT": "0"}
EVENT = re.compile(r"<<<BEGIN DATA (\w+) EVENT[^>]*>>>\n[^\n]*\n(.*?)\n<<<END DATA \1>>>", re.S)


@dataclass
class HostModel:
    """The sampling callback: the client's model is the local llama.cpp server."""

    base_url: str
    use_schema: bool = False  # hold the model to the schema the server sends in the request's metadata
    seconds: list[float] = field(default_factory=list)
    events: int = 0
    valid: int = 0
    items: int = 0
    quoted: int = 0

    def __post_init__(self) -> None:
        self.client = openai.OpenAI(base_url=self.base_url, api_key="local", max_retries=0, timeout=600)

    async def __call__(self, ctx: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        prompt = params.messages[0].content
        assert isinstance(prompt, TextContent)
        texts = [match.group(2) for match in EVENT.finditer(prompt.text)]
        messages = [{"role": "system", "content": params.system_prompt or ""}, {"role": "user", "content": prompt.text}]
        started = time.monotonic()
        schema = (params.metadata or {}).get("memlikehuman/responseSchema") if self.use_schema else None
        reply = await anyio.to_thread.run_sync(lambda: self._complete(messages, params.max_tokens, schema))
        self.seconds.append(time.monotonic() - started)
        self.events += len(texts)
        self._judge(reply, texts)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=reply), model=MODEL_ALIAS)

    def _complete(self, messages: list[dict[str, str]], max_tokens: int, schema: dict[str, Any] | None) -> str:
        # llama-cpp-python's server turns a json_object format's schema into a grammar.
        fmt: dict[str, Any] = {"type": "json_object", **({"schema": schema} if schema else {})}
        answer = self.client.chat.completions.create(
            model=MODEL_ALIAS,
            messages=messages,  # type: ignore[arg-type]
            temperature=0,
            max_tokens=min(max_tokens, 1024),
            response_format=fmt,  # type: ignore[arg-type]
        )
        return answer.choices[0].message.content or ""

    def _judge(self, reply: str, texts: list[str]) -> None:
        try:
            items = json.loads(reply)["memories"]
            assert isinstance(items, list)
        except (ValueError, KeyError, TypeError, AssertionError):
            return
        self.valid += 1
        for item in items:
            self.items += 1
            number = item.get("event", 1) if isinstance(item, dict) else None
            quote = item.get("quote") if isinstance(item, dict) else None
            inside = isinstance(number, int) and 1 <= number <= len(texts) and isinstance(quote, str)
            if inside and _collapsed(quote) in _collapsed(texts[number - 1]):
                self.quoted += 1


def _collapsed(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


async def run(
    db: Path, env: dict[str, str], turns: list[Any], host: HostModel | None, minutes: float
) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memlikehuman", "serve", "--db", str(db)], env={**os.environ, **env}
    )
    record_ms: list[float] = []
    started = time.monotonic()
    async with Client(params, sampling_callback=host, mode="legacy") as client:  # type: ignore[arg-type]
        for turn in turns:
            args = {"event_id": turn.dia_id, "text": turn.text, "role": "user", "source": turn.speaker,
                    "session_id": f"session-{turn.session}", "occurred_at": turn.occurred_at}  # fmt: skip
            begin = time.perf_counter()
            result = await client.call_tool("memory_record", args)
            record_ms.append((time.perf_counter() - begin) * 1000)
            assert not result.is_error, result.content
        states: dict[str, int] = {}
        memories = 0
        deadline = started + minutes * 60
        while host is not None and time.monotonic() < deadline:
            reads = [await client.call_tool("memory_read", {"record_id": t.dia_id}) for t in turns]
            events = [r.structured_content["event"] for r in reads if r.structured_content]
            states = {s: sum(e["extraction_state"] == s for e in events) for s in ("complete", "pending", "failed")}
            memories = sum(len(e["memory_ids"]) for e in events)
            if states["pending"] == 0:
                break
            await anyio.sleep(2)
    return {"record_ms": record_ms, "states": states, "memories": memories, "wall": time.monotonic() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--conversation", type=int, default=0)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--schema", action="store_true", help="the client holds its model to the answer schema in the request metadata"
    )
    args = parser.parse_args()
    if not installed():
        raise SystemExit("no local model: run scripts/install-local-llm first")
    turns = load(args.data, args.conversation + 1)[args.conversation].turns[: args.turns]
    env = {**BASE, "MEMLIKEHUMAN_EXTRACTOR": "sampling", "MEMLIKEHUMAN_TIMEOUT": "600",
           "MEMLIKEHUMAN_EXTRACTION_BATCH": str(args.batch)}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp, LocalModel(log_path=Path(tmp) / "llm.log") as model:
        baseline = anyio.run(
            run, Path(tmp) / "none.sqlite3", {**BASE, "MEMLIKEHUMAN_EXTRACTOR": "none"}, turns, None, 0
        )
        host = HostModel(model.base_url, use_schema=args.schema)
        sampled = anyio.run(run, Path(tmp) / "sampling.sqlite3", env, turns, host, args.minutes)
    states = sampled["states"]
    counts = " / ".join(str(states.get(state)) for state in ("complete", "pending", "failed"))
    answers = len(host.seconds)
    rows = [
        ["turns recorded", len(turns)],
        ["sampling requests (answers)", answers],
        ["answers that were valid JSON of the right shape", f"{host.valid}/{answers}"],
        ["items whose quote occurs in their event", f"{host.quoted}/{host.items}"],
        ["events complete / pending / failed", counts],
        ["memories stored", sampled["memories"]],
        ["model seconds per event", f"{sum(host.seconds) / max(1, host.events):.1f}"],
        ["memory_record p50 ms, sampling (WAIT=0)", f"{percentile(sampled['record_ms'], 50):.2f}"],
        ["memory_record p50 ms, no extractor (baseline, same run)", f"{percentile(baseline['record_ms'], 50):.2f}"],
        ["wall time, first record to last extraction", f"{sampled['wall']:.0f} s"],
    ]  # fmt: skip
    body = table(["MCP sampling, Qwen2.5-Coder-1.5B behind the client", "value"], rows)
    body += (
        f"\n\nLoCoMo conversation {args.conversation}, its first {len(turns)} turns, one event per sampling request"
        if args.batch == 1
        else f"\n\nLoCoMo conversation {args.conversation}, first {len(turns)} turns, batches of up to {args.batch}"
    )
    body += (
        ". The client forwards the server's system prompt and message unchanged to the local model"
        " (JSON mode, 2 threads); the server checks every item as for any extractor. The 1.5B model stands in"
        " for a host's model here: it exercises the real path, not the quality a host's model would give."
    )
    print(body)
    command = f"python -m bench.sampling --turns {args.turns} --conversation {args.conversation} --batch {args.batch}"
    command += " --schema" if args.schema else ""
    held = "the schema in the request metadata as a grammar" if args.schema else "JSON mode only"
    body = body.replace("(JSON mode, 2 threads)", f"({held}, 2 threads)")
    name = "sampling-schema" if args.schema else "sampling"
    title = "Extraction through MCP sampling with a real model" + (", schema held" if args.schema else "")
    write_section(name, title, command, body)


if __name__ == "__main__":
    main()
