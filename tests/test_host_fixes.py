"""What a host met in its first days, each driven the way a host does: over stdio."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import BASE_ENV, SyncClient, connected, serving
from openai_stub import ScriptedOpenAI, extraction_reply, memory_item

from memlikehuman import __version__
from memlikehuman.records import Memory
from memlikehuman.retrieval.gist import overview
from memlikehuman.sessions import tokens


def record(client: SyncClient, event_id: str, text: str, **fields: Any) -> dict[str, Any]:
    fields.setdefault("role", "user")
    fields.setdefault("source", "chat")
    return client.ok("memory_record", event_id=event_id, text=text, **fields)


def extractor_env(api: ScriptedOpenAI) -> dict[str, str]:
    return {
        "MEMLIKEHUMAN_EXTRACTOR": "openai",
        "MEMLIKEHUMAN_EXTRACTOR_BASE_URL": api.base_url,
        "MEMLIKEHUMAN_EXTRACTOR_API_KEY": "test",
        "MEMLIKEHUMAN_EXTRACTION_WAIT": "60",  # these tests need each event's memories: wait for them
    }


# 1 -------------------------------------------------------------------------------------------------


def test_every_persona_id_the_tools_accept_is_readable_through_the_persona_resource(db_path: Path):
    with connected(serving(db_path)) as client:
        for persona in ("c:team", "a:b", "x.y", "a..b", "-", ":", "C:", "team:alice.v2"):
            record(client, f"e-{persona}", "hello", persona_id=persona)
            text = client.read_resource(f"persona://{persona}/current").contents[0].text
            assert json.dumps(persona) in text, persona
            prompt = client.get_prompt("start_session", {"persona_id": persona}).messages[0].content.text
            assert f"persona://{persona}/current" in prompt


def test_persona_ids_of_dots_only_are_refused_by_every_tool(db_path: Path):
    calls = {
        "memory_record": {"event_id": "e", "text": "t", "role": "user", "source": "s"},
        "memory_recall": {"query": "t"},
        "memory_read": {"record_id": "e"},
        "session_checkpoint": {"state": {"goal": "g"}, "covered_event_id": "e"},
        "session_resume": {},
        "memory_correct": {"memory_id": "mem_x", "content": "c", "reason": "r"},
        "memory_forget": {"record_id": "e"},
    }
    with connected(serving(db_path)) as client:
        for persona in (".", ".."):
            for tool, arguments in calls.items():
                error = client.error(tool, **arguments, persona_id=persona)
                assert error.startswith("invalid_argument: persona_id must not consist of dots"), (tool, error)


# 2 -------------------------------------------------------------------------------------------------


def test_raw_fallback_shows_the_part_of_an_event_that_no_memory_covers(db_path: Path):
    text = "I live in Lisbon. My locker code is 4411."
    with ScriptedOpenAI() as api, connected(serving(db_path, **extractor_env(api))) as client:
        api.chat.append(extraction_reply(memory_item("The user lives in Lisbon.", "I live in Lisbon.")))
        assert record(client, "e1", text)["extraction_state"] == "complete"
        out = client.ok("memory_recall", query="locker code")
        assert [hit["event_id"] for hit in out["raw_fallback"]] == ["e1"]
        hit = out["raw_fallback"][0]
        assert hit["excerpt"] == "My locker code is 4411." and hit["truncated"] is True
        # What the memory covers is found as the memory, and not again as an excerpt.
        covered = client.ok("memory_recall", query="Lisbon")
        assert [m["content"] for m in covered["memories"]] == ["The user lives in Lisbon."]
        assert covered["raw_fallback"] == []


def test_a_rejected_item_leaves_its_sentence_in_raw_fallback(db_path: Path):
    with ScriptedOpenAI() as api, connected(serving(db_path, **extractor_env(api))) as client:
        api.chat.append(
            extraction_reply(
                memory_item("The user lives in Lisbon.", "I live in Lisbon."),
                memory_item("The user's locker code is 4411.", "my locker number is 4411"),  # not verbatim
            )
        )
        out = record(client, "e1", "I live in Lisbon. My locker code is 4411.")
        assert len(out["memory_ids"]) == 1 and any("rejected" in w for w in out["warnings"])
        hits = client.ok("memory_recall", query="locker code")["raw_fallback"]
        assert [h["excerpt"] for h in hits] == ["My locker code is 4411."]


def test_a_corrected_statement_does_not_come_back_through_the_gaps_of_its_event(db_path: Path):
    with ScriptedOpenAI() as api, connected(serving(db_path, **extractor_env(api))) as client:
        api.chat.append(extraction_reply(memory_item("The user lives in Lisbon.", "I live in Lisbon.")))
        memory_id = record(client, "e1", "I live in Lisbon. My locker code is 4411.")["memory_ids"][0]
        client.ok("memory_correct", memory_id=memory_id, content="The user lives in Porto.", reason="moved")
        for hit in client.ok("memory_recall", query="Lisbon locker")["raw_fallback"]:
            assert "Lisbon" not in hit["excerpt"]


# 3 -------------------------------------------------------------------------------------------------


def test_a_correction_takes_the_originals_place_in_time_for_as_of(db_path: Path):
    with ScriptedOpenAI() as api, connected(serving(db_path, **extractor_env(api))) as client:
        api.chat.append(
            extraction_reply(memory_item("The user lives in Lisbon.", "I live in Lisbon", subject="user.home_city"))
        )
        memory_id = record(client, "e1", "I live in Lisbon", occurred_at="2025-01-10T09:00:00Z")["memory_ids"][0]
        fixed = client.ok("memory_correct", memory_id=memory_id, content="The user lives in Porto.", reason="typo")
        past = client.ok("memory_recall", query="where does the user live", as_of="2025-06-01T00:00:00Z")
        assert [m["memory_id"] for m in past["memories"]] == [fixed["replacement_id"]]
        found = past["memories"][0]
        assert found["valid_from"] == "2025-01-10T09:00:00.000000Z"
        assert found["corrects"] == memory_id and found["source"]["event_id"] == fixed["correction_event_id"]
        assert found["source"]["occurred_at"] > "2026"  # the correction's own date stays in its record
        before = client.ok("memory_recall", query="where does the user live", as_of="2025-01-01T00:00:00Z")
        assert before["memories"] == []


def test_a_correction_with_valid_at_starts_where_valid_at_says(db_path: Path):
    with ScriptedOpenAI() as api, connected(serving(db_path, **extractor_env(api))) as client:
        api.chat.append(extraction_reply(memory_item("The user lives in Lisbon.", "I live in Lisbon")))
        memory_id = record(client, "e1", "I live in Lisbon", occurred_at="2025-01-10T09:00:00Z")["memory_ids"][0]
        client.ok(
            "memory_correct",
            memory_id=memory_id,
            content="The user lives in Porto.",
            reason="moved in March",
            valid_at="2025-03-01T00:00:00Z",
        )
        assert client.ok("memory_recall", query="user lives", as_of="2025-02-01T00:00:00Z")["memories"] == []
        march = client.ok("memory_recall", query="user lives", as_of="2025-06-01T00:00:00Z")["memories"]
        assert [m["content"] for m in march] == ["The user lives in Porto."]


# 4 -------------------------------------------------------------------------------------------------


def test_a_resume_without_target_model_counts_close_to_real_tokens(db_path: Path):
    with connected(serving(db_path)) as client:
        for n in range(40):
            record(client, f"e{n}", f"Turn {n}: we talked about the garden, the tomatoes and the new fence again.")
        out = client.ok("session_resume", token_budget=4096)
        assert out["token_method"] == "estimate:tokenizers-max*1.4" and out["status"] in ("ok", "partial")
        real = tokens.counter_for("gpt-4o").count(out["context"])
        assert real >= 2_000  # the old byte estimate filled a 4,096 budget with about 1,000 real tokens
        assert out["token_count"] >= max(tokens.counter_for(m).count(out["context"]) for m in ("gpt-4", "gpt-4o"))
        small = client.ok("session_resume", token_budget=600)
        assert small["status"] != "insufficient_budget"


def test_the_tools_and_the_prompt_tell_the_agent_to_pass_its_model_name(db_path: Path):
    with connected(serving(db_path)) as client:
        tools = {tool.name: tool for tool in client.list_tools().tools}
        resume = tools["session_resume"]
        assert "target_model" in resume.description
        assert "your own model name" in resume.input_schema["properties"]["target_model"]["description"]
        prompt = client.get_prompt("start_session", {}).messages[0].content.text
        assert "target_model" in prompt


# 5 -------------------------------------------------------------------------------------------------

ACTIONS = (
    "use", "give", "send", "pass", "check", "remove", "shorten", "split", "choose", "add", "call", "retry",
    "correct", "forget", "record", "edit", "fix", "raise", "merge", "summarize", "find", "read", "run", "set",
    "leave", "cover", "reuse", "import", "export", "upgrade",
)  # fmt: skip
_ACTION = re.compile(r"[:;]\s+(?:[^:;]*?\b)?(?:" + "|".join(ACTIONS) + r")\b", re.IGNORECASE)


def refusals(ids: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """One call down every refusal path of every tool."""
    long = "x" * 4_001
    return [
        ("memory_record", {"event_id": "", "text": "t", "role": "user", "source": "s"}),
        ("memory_record", {"event_id": "mem_1", "text": "t", "role": "user", "source": "s"}),
        ("memory_record", {"event_id": "e2", "text": "", "role": "user", "source": "s"}),
        ("memory_record", {"event_id": "e2", "text": "x" * 200_001, "role": "user", "source": "s"}),
        ("memory_record", {"event_id": "e2", "text": "t", "role": "owner", "source": "s"}),
        ("memory_record", {"event_id": "e2", "text": "t", "role": "user", "source": "a\nb"}),
        ("memory_record", {"event_id": "e2", "text": "t", "role": "user", "source": "s", "category": "x"}),
        ("memory_record", {"event_id": "e2", "text": "t", "role": "user", "source": "s", "occurred_at": "today"}),
        ("memory_record", {"event_id": "e2", "text": "t", "role": "user", "source": "s", "occurred_at": "2025-01-01"}),
        ("memory_record", {"event_id": "e2", "text": "t", "role": "user", "source": "s", "cues": [{"kind": "x"}]}),
        ("memory_record", {"event_id": "e2", "text": "t", "role": "user", "source": "s",
                           "cues": [{"kind": "text", "key": f"k{n}"} for n in range(21)]}),
        ("memory_record", {"event_id": ids["event"], "text": "other", "role": "user", "source": "s"}),
        ("memory_record", {"event_id": ids["event"], "text": "t", "role": "user", "source": "s", "persona_id": "b"}),
        ("memory_record", {"event_id": "e2", "text": "t", "role": "user", "source": "s", "persona_id": "a b"}),
        ("memory_record", {"event_id": "e2", "text": "t", "role": "user", "source": "s", "nope": 1}),
        ("memory_recall", {"query": ""}),
        ("memory_recall", {"query": long}),
        ("memory_recall", {"query": "q", "limit": 0}),
        ("memory_recall", {"query": "q", "limit": "3"}),
        ("memory_recall", {"query": "q", "detail": "all"}),
        ("memory_recall", {"query": "q", "search_mode": "exact"}),
        ("memory_recall", {"query": "q", "as_of": "yesterday"}),
        ("memory_recall", {"query": "q", "cue_key": ""}),
        ("memory_recall", {"query": "q", "session_id": "a\tb"}),
        ("memory_read", {"record_id": "nope"}),
        ("memory_read", {"record_id": "mem_nope"}),
        ("memory_read", {"record_id": ids["event"], "offset": -1}),
        ("memory_read", {"record_id": ids["event"], "offset": 10_000}),
        ("memory_read", {"record_id": ids["event"], "max_chars": 0}),
        ("memory_read", {"record_id": ""}),
        ("session_checkpoint", {"state": {"goal": ""}, "covered_event_id": ids["event"]}),
        ("session_checkpoint", {"state": {"goal": "g"}, "covered_event_id": "nope"}),
        ("session_checkpoint", {"state": {"goal": "g"}, "covered_event_id": ids["event"], "session_id": "other"}),
        ("session_checkpoint", {"state": {"goal": "g", "pending": ["x"] * 101}, "covered_event_id": ids["event"]}),
        ("session_checkpoint", {"state": {"goal": "g", "extra": 1}, "covered_event_id": ids["event"]}),
        ("session_resume", {"token_budget": 0}),
        ("session_resume", {"query": long}),
        ("session_resume", {"target_model": ""}),
        ("memory_correct", {"memory_id": "mem_nope", "content": "c", "reason": "r"}),
        ("memory_correct", {"memory_id": ids["memory"], "content": "", "reason": "r"}),
        ("memory_correct", {"memory_id": ids["memory"], "content": "c", "reason": long}),
        ("memory_correct", {"memory_id": ids["memory"], "content": "c", "reason": "r", "valid_at": "soon"}),
        ("memory_correct", {"memory_id": ids["emotion"], "content": "c", "reason": "r"}),
        ("memory_forget", {"record_id": "nope"}),
        ("memory_forget", {"record_id": "mem_nope"}),
        ("no_such_tool", {}),
    ]  # fmt: skip


def test_every_refusal_says_what_was_wrong_and_what_to_do(db_path: Path):
    with ScriptedOpenAI() as api, connected(serving(db_path, **extractor_env(api))) as client:
        api.chat.append(extraction_reply(memory_item("The user likes tea.", "I like tea")))
        memory = record(client, "e1", "I like tea")["memory_ids"][0]
        api.chat.append(extraction_reply(memory_item("The assistant felt glad.", "I am glad", kind="emotion")))
        emotion = record(client, "e-emotion", "I am glad", role="assistant")["memory_ids"][0]
        ids = {"event": "e1", "memory": memory, "emotion": emotion}
        for tool, arguments in refusals(ids):
            text = client.error(tool, **arguments)
            code, _, message = text.partition(": ")
            assert code in ("invalid_argument", "not_found", "conflict", "limit_exceeded", "forbidden"), text
            assert len(message) > 20 and _ACTION.search(message), f"{tool} {arguments}: {text}"


# 6 -------------------------------------------------------------------------------------------------


def test_null_for_any_optional_argument_means_its_default(db_path: Path):
    with connected(serving(db_path)) as client:
        nulls = {"persona_id": None, "project_id": None}
        out = client.ok(
            "memory_record", event_id="e1", text="tea time", role="user", source="s",
            category=None, session_id=None, occurred_at=None, cues=None, **nulls,
        )  # fmt: skip
        assert out["extraction_state"] == "pending"
        found = client.ok(
            "memory_recall", query="tea", limit=None, as_of=None, include_history=None, detail=None,
            search_mode=None, cue_key=None, session_id=None, **nulls,
        )  # fmt: skip
        assert [hit["event_id"] for hit in found["raw_fallback"]] == ["e1"]
        read = client.ok("memory_read", record_id="e1", offset=None, max_chars=None, **nulls)
        assert read["source_page"]["text"] == "tea time"
        state = {"goal": "g", "completed": None, "pending": None, "constraints": None, "next_step": None}
        client.ok("session_checkpoint", state=state, covered_event_id="e1", session_id=None, **nulls)
        resume = client.ok("session_resume", query=None, token_budget=None, target_model=None, session_id=None, **nulls)
        assert resume["status"] == "ok" and resume["checkpoint_id"]
        # The schemas do not spell null out (a host sends them with every request): null means the default.
        schema = {tool.name: tool.input_schema for tool in client.list_tools().tools}
        assert schema["memory_recall"]["properties"]["limit"] == {"type": "integer", "default": 10, "minimum": 1,
                                                                  "maximum": 100}  # fmt: skip


def test_null_for_a_required_argument_is_reported_as_missing(db_path: Path):
    with connected(serving(db_path)) as client:
        error = client.error("memory_record", event_id=None, text="t", role="user", source="s")
        assert error.startswith("invalid_argument: event_id: Field required")


# 7 -------------------------------------------------------------------------------------------------


def test_an_event_dated_in_the_future_is_announced_when_recorded_and_counted_by_recall(db_path: Path):
    with connected(serving(db_path)) as client:
        out = record(client, "e1", "the meeting moved to Tuesday", occurred_at="2999-01-01T10:00:00+01:00")
        assert any("ahead of this server's clock" in w for w in out["warnings"])
        assert record(client, "e2", "the meeting is on Tuesday")["warnings"] == []
        found = client.ok("memory_recall", query="meeting Tuesday")
        assert [hit["event_id"] for hit in found["raw_fallback"]] == ["e2"]
        assert found["coverage"]["events_after_as_of"] == 1
        assert any("1 event in scope occurred after now" in w for w in found["warnings"])
        past = client.ok("memory_recall", query="meeting", as_of="2000-01-01T00:00:00Z")
        assert past["coverage"]["events_after_as_of"] == 2
        assert any("after as_of" in w for w in past["warnings"])


# 8 -------------------------------------------------------------------------------------------------


def test_the_semantic_window_warning_counts_only_what_the_session_filter_admits(tmp_path: Path):
    with ScriptedOpenAI() as api:
        env = {
            "MEMLIKEHUMAN_EMBEDDER": "openai",
            "MEMLIKEHUMAN_EMBEDDER_BASE_URL": api.base_url,
            "MEMLIKEHUMAN_EMBEDDER_API_KEY": "test",
            "MEMLIKEHUMAN_SEMANTIC_WINDOW": "3",
        }
        db = tmp_path / "memory.sqlite3"
        with connected(serving(db, **env)) as client:
            for n in range(11):
                record(client, f"other-{n}", f"note {n} about the weather", session_id="big")
            for n in range(5):
                record(client, f"s-{n}", f"note {n} about the garden", session_id="small")
            subprocess.run(
                [sys.executable, "-m", "memlikehuman", "reindex", "--missing", "--only", "vectors", "--db", str(db)],
                env={**os.environ, **BASE_ENV, **env},
                check=True,
                capture_output=True,
            )
            out = client.ok("memory_recall", query="garden", search_mode="semantic", session_id="small")
            window = [w for w in out["warnings"] if "semantic search scanned" in w]
            assert window and "scanned the 3 most recent events" in window[0] and "skipped 2 older" in window[0]


# 9 -------------------------------------------------------------------------------------------------


def test_the_overview_of_a_fact_still_says_what_it_is_about(db_path: Path):
    with ScriptedOpenAI() as api, connected(serving(db_path, **extractor_env(api))) as client:
        api.chat.append(
            extraction_reply(
                memory_item("The user lives in Lisbon near Rossio.", "I live in Lisbon"),
                memory_item("The user's locker code is 4411.", "My locker code is 4411."),
            )
        )
        record(client, "e1", "I live in Lisbon. My locker code is 4411.")
        shown = {m["content"] for m in client.ok("memory_recall", query="Lisbon locker", detail="gist")["memories"]}
        assert any(c.endswith("The user lives in Lisbon near Rossio.") and "[overview" in c for c in shown), shown
        assert any(c.endswith("The user's locker code is \u2026") for c in shown), shown


def test_recall_and_resume_show_the_same_overview_of_a_memory(db_path: Path):
    memory = Memory(
        rowid=1, memory_id="mem_1", event_sequence=1, persona_id="p", project_id="q", session_id="s",
        content="Ana ran the Berlin marathon on 3 May in 3:41.", quote="q", kind="event", basis="stated",
        category="conversation", subject=None, gist=None, valid_from="2020-01-01", valid_to=None, recorded_at="x",
    )  # fmt: skip
    from memlikehuman.records import MemoryHit
    from memlikehuman.sessions.context import memory_record as resume_line

    assert resume_line(MemoryHit(memory, 1.0, "overview", "current"))["content"] == overview(memory)


# 10 ------------------------------------------------------------------------------------------------


def test_an_internal_error_of_memory_record_says_a_retry_with_the_same_id_is_safe():
    from memlikehuman.server.app import READ_ONLY, RECORDED

    assert "same event_id" in RECORDED and "nothing was changed" not in RECORDED
    assert "nothing was changed" in READ_ONLY


def test_initialize_reports_the_server_version(db_path: Path):
    with connected(serving(db_path)) as client:
        info = client.client.server_info
        assert (info.name, info.version) == ("memlikehuman", __version__)


def test_summaries_count_in_the_right_number(db_path: Path):
    with connected(serving(db_path)) as client:
        result = client.call("memory_record", event_id="e1", text="hi", role="user", source="s")
        assert result.content[0].text.startswith("Recorded event e1 (sequence 1); extraction pending, 0 memories.")
        recall = client.call("memory_recall", query="hi")
        assert recall.content[0].text.startswith("0 memories and 1 raw excerpt (")
        forget = client.call("memory_forget", record_id="e1")
        assert forget.content[0].text.startswith("Forgot 1 event and 0 memories; 0 checkpoints invalidated.")


def test_ctrl_c_ends_a_cli_command_with_exit_status_130(tmp_path: Path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlikehuman", "--db", str(tmp_path / "m.sqlite3"), "import", "-"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env={**os.environ, **BASE_ENV},
        # A suite started in the background inherits "ignore SIGINT"; a terminal's Ctrl-C does not.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stderr is not None and proc.stdin is not None
    assert b"importing" in proc.stderr.readline()  # it is reading standard input now
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    proc.stdin.close()
    proc.stderr.close()


def test_retry_prints_no_http_client_log_lines(tmp_path: Path):
    db = tmp_path / "m.sqlite3"
    with ScriptedOpenAI() as api:
        env = {**os.environ, **BASE_ENV}
        subprocess.run([sys.executable, "-m", "memlikehuman", "--db", str(db), "stats"], env=env, capture_output=True)
        with connected(serving(db)) as client:
            record(client, "e1", "I like tea")
        api.chat.append(extraction_reply(memory_item("The user likes tea.", "I like tea")))
        done = subprocess.run(
            [sys.executable, "-m", "memlikehuman", "--db", str(db), "retry", "--project", "default"],
            env={**env, **extractor_env(api)},
            capture_output=True,
            text=True,
        )
    assert done.returncode == 0, done.stderr
    assert "HTTP Request" not in done.stderr and "1 complete" in done.stdout


def test_the_local_embedder_is_loaded_once_per_server(tmp_path: Path):
    from conftest import make_settings

    from memlikehuman.engine import Engine

    with Engine(make_settings(tmp_path / "m.sqlite3", MEMLIKEHUMAN_EMBEDDER="local")) as engine:
        from memlikehuman.records import Scope

        engine.record(Scope(), "e1", "The quick brown fox.", "user", "s")
        assert engine.indexer.wait_idle(120)
        # the indexer embedded with the engine's own instance: one model in the process
        assert engine.embedder is not None and engine.embedder._model is not None  # type: ignore[attr-defined]
