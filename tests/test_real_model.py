"""The real path with a real small model: `serve` over stdio, a local llama.cpp server.

Behind --runslow: the model (Qwen2.5-Coder-1.5B-Instruct, 1.1 GB) and its runtime come from
`scripts/install-local-llm`, and a handful of messages costs about a minute on 2 cores.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest
from conftest import connected, stdio_params
from sampling_support import sampling_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.local_llm import LocalModel, installed  # noqa: E402

MESSAGES = (
    "Hi! I'm Dana. I moved from Boston to Denver last month for a new job at a bike shop.",
    "My sister Maya is getting married in June 2027 in Lisbon.",
    "I really don't like cilantro, it tastes like soap to me.",
    "I adopted a grey cat named Pixel two weeks ago.",
    "lol ok thanks",
)


def collapsed(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@pytest.mark.slow
def test_a_real_small_model_behind_serve_turns_recorded_messages_into_memories_with_verbatim_quotes(tmp_path):
    if not installed():
        pytest.skip("no local model: run scripts/install-local-llm")
    with LocalModel(log_path=tmp_path / "llm.log") as model:
        params = stdio_params(tmp_path / "a.sqlite3", **model.env(timeout=300), MEMLIKEHUMAN_EXTRACTION_WAIT="0")
        with connected(params) as client:
            for number, text in enumerate(MESSAGES):
                result = client.ok(
                    "memory_record", event_id=f"m{number}", text=text, role="user", source="Dana", session_id="s1"
                )
                assert result["extraction_state"] == "pending"  # answered before the model was asked
            deadline = time.monotonic() + 900
            reads: dict[str, dict] = {}
            while time.monotonic() < deadline:
                reads = {f"m{n}": client.ok("memory_read", record_id=f"m{n}") for n in range(len(MESSAGES))}
                if all(r["event"]["extraction_state"] != "pending" for r in reads.values()):
                    break
                time.sleep(1)
            memories = [
                (event_id, client.ok("memory_read", record_id=memory_id)["memory"])
                for event_id, read in reads.items()
                for memory_id in read["event"]["memory_ids"]
            ]
            found = client.ok("memory_recall", query="Where does Dana live now?")
    print("\nreal model:")
    for event_id, read in reads.items():
        print(f"  {event_id} {read['event']['extraction_state']}: {read['source_page']['text']}")
    for event_id, memory in memories:
        label = f"{memory['kind']}/{memory['basis']}"
        print(f"    {event_id} -> [{label}] {memory['content']} | quote: {memory['source']['quote']}")
    assert all(r["event"]["extraction_state"] == "complete" for r in reads.values()), reads
    assert len({event_id for event_id, _ in memories}) >= 3, "the model derived memories from fewer than 3 of 5"
    for event_id, memory in memories:
        assert collapsed(memory["source"]["quote"]) in collapsed(reads[event_id]["source_page"]["text"])
        assert memory["source"]["event_id"] == event_id
    assert found["memories"] or found["raw_fallback"]


@pytest.mark.slow
def test_a_real_small_model_behind_the_clients_sampling_makes_memories_with_verbatim_quotes(tmp_path):
    # The "host's model" is real: the client's sampling callback forwards to the local model.
    if not installed():
        pytest.skip("no local model: run scripts/install-local-llm")
    from bench.sampling import HostModel  # imports openai: 0.8 s of every pytest worker's collection

    with LocalModel(log_path=tmp_path / "llm.log") as model:
        host = HostModel(model.base_url)
        env = {"MEMLIKEHUMAN_EXTRACTOR": "sampling", "MEMLIKEHUMAN_TIMEOUT": "300", "MEMLIKEHUMAN_EXTRACTION_WAIT": "0"}
        with sampling_client(stdio_params(tmp_path / "a.sqlite3", **env), host) as client:
            for number, text in enumerate(MESSAGES):
                client.ok("memory_record", event_id=f"m{number}", text=text, role="user", source="Dana", session_id="s")
            deadline = time.monotonic() + 900
            while time.monotonic() < deadline:
                reads = {f"m{n}": client.ok("memory_read", record_id=f"m{n}") for n in range(len(MESSAGES))}
                if all(r["event"]["extraction_state"] != "pending" for r in reads.values()):
                    break
                time.sleep(1)
            memories = [
                (event_id, client.ok("memory_read", record_id=memory_id)["memory"])
                for event_id, read in reads.items()
                for memory_id in read["event"]["memory_ids"]
            ]
    assert all(r["event"]["extraction_state"] == "complete" for r in reads.values()), reads
    assert len({event_id for event_id, _ in memories}) >= 3 and host.valid == len(host.seconds) >= len(MESSAGES)
    for event_id, memory in memories:
        assert collapsed(memory["source"]["quote"]) in collapsed(reads[event_id]["source_page"]["text"])
        assert memory["extractor"] == "sampling:local"
