"""The scenarios every host lives through, as a user would, and what each one checks.

Session 1: the user states a preference and a fact (two prompts of one session; the second resumes it).
Session 2: a paraphrase ("which package manager ...") : the first request must hold our injected
context, our tools and our server instructions; the scripted model calls memory_recall and reads the
pnpm statement back. Session 3: the model attaches its own memories to the prompt the hook recorded,
checkpoints, resumes, recalls and forgets. Apart: install, run, uninstall leaves the config as it was.

Checks that can fail independently are collected (`Problems`) and reported together, so one run of a
host shows every defect of a scenario at once.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlikehuman.server.app import INSTRUCTIONS

from .standin import TOOLS, Call, Request, Rule, Script, Text, ToolResult
from .support import Archive, ClaudeCode, Run, World, claude_connect_ms, debug_lines

PNPM = "I always use pnpm, never npm, in this repo."
STAGING = "Our staging server is staging.example.internal:8443."
STAGING_HOST = "staging.example.internal"
PARAPHRASE = "which package manager should I use to add lodash?"
CHORES = "Always run the tests with pnpm test --silent. Also, forget what I told you about the staging server."
TEST_QUOTE = "Always run the tests with pnpm test --silent"
GOAL = "Set up how the tests run in this repo"
NOTED = Script([Rule("", (Text("Noted."),))])


class Problems:
    """Checks collected, reported at once."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.found: list[str] = []

    def check(self, ok: object, message: str) -> bool:
        if not ok:
            self.found.append(message)
        return bool(ok)

    def assert_none(self, evidence: str = "") -> None:
        if self.found:
            listed = "\n".join(f"{i}. {problem}" for i, problem in enumerate(self.found, 1))
            raise AssertionError(
                f"{self.title}: {len(self.found)} problem(s)\n{listed}\n\n--- evidence ---\n{evidence}"
            )


def _oneline(text: str) -> str:
    return " ".join(text.split())


# -- session 1: a preference and a fact -----------------------------------------------------------


@dataclass
class SessionOne:
    runs: list[Run]
    archive: Archive


PNPM_MEMORY = {"content": "The user uses pnpm, never npm, in this repo", "quote": PNPM, "kind": "preference",
               "subject": "user.package_manager"}  # fmt: skip


def remember_script() -> Script:
    """The model follows the instructions literally: the preference becomes a memory of the recorded turn
    (memory_record with the IDs the prompt hook's context names), then it answers."""

    def record(request: Request) -> dict[str, Any]:
        ids = ids_from_context(request)
        if ids is None:
            raise LookupError("the prompt hook's context names no recorded turn to attach memories to")
        scope = {k: v for k, v in ids.scope.items() if v}
        return {"event_id": ids.event_id, "text": request.prompt() or "", "role": "user", "source": ids.source,
                "session_id": ids.session_id, "memories": [PNPM_MEMORY], **scope}  # fmt: skip

    return Script([Rule("pnpm", (Call("memory_record", record), Text("Noted.")))])


def session_one(world: World) -> SessionOne:
    """Two prompts in one session (the second resumes the first): the first, a preference, becomes the
    agent's memory; the second, a fact, is answered "Noted."."""
    first = world.expect_ok(world.run(PNPM, remember_script()))
    second = world.expect_ok(world.run(STAGING, NOTED, resume=first.session_id))
    return SessionOne([first, second], world.archive())


def check_recorded_as_typed(world: World, one: SessionOne) -> None:
    """Both prompts are in the archive as the user's, exactly as typed (no injected context inside)."""
    problems = Problems(f"{world.host.name}: session 1 prompts in the archive")
    for run in one.runs:
        exact = [e for e in one.archive.user_events() if e["text"] == run.prompt]
        holding = [e for e in one.archive.events if run.prompt in e["text"] and e["text"] != run.prompt]
        if problems.check(exact, f"no user event has exactly the text {run.prompt!r}"):
            event = exact[0]
            problems.check(
                len(exact) == 1, f"{len(exact)} user events hold {run.prompt!r}: {[e['event_id'] for e in exact]}"
            )
            problems.check(event["source"] == world.host.name, f"source {event['source']!r}, not {world.host.name!r}")
        for event in holding:
            problems.check(
                False,
                f"event {event['event_id']} ({event['role']}) records the prompt with more text around it"
                f" ({len(event['text'])} characters, injected context inside:"
                f" {'memlikehuman-context' in event['text']}):"
                f" {event['text'][:300]!r} ... {event['text'][-120:]!r}",
            )
    problems.assert_none(one.archive.describe())


def check_resumed_prompt_names_its_record(world: World, one: SessionOne) -> None:
    """The second prompt of session 1 resumes it: what the model was given names that prompt's recorded
    event and the session it was recorded in, as memory_record needs them (Gemini CLI keeps no hook
    context across a resume: a resumed session there starts as a new one does)."""
    problems = Problems(f"{world.host.name}: a resumed session's prompt, as the model can name it")
    second = one.runs[1]
    ids = ids_from_context(second.first())
    recorded = [e for e in one.archive.user_events() if e["text"] == second.prompt]
    if problems.check(ids is not None, "the context of the resumed prompt names no recorded turn and session"):
        assert ids is not None
        events = [e["event_id"] for e in recorded]
        sessions = [e["session_id"] for e in recorded]
        problems.check(ids.event_id in events[:1], f"it names {ids.event_id!r}, not the prompt's event {events}")
        problems.check(ids.session_id in sessions[:1], f"it names session {ids.session_id!r}, not {sessions}")
    problems.assert_none(second.describe())


# -- session 2: a paraphrase -----------------------------------------------------------------------


def recall_script() -> Script:
    """The model recalls the package manager (with the words the memory itself would hold) and answers."""
    query = {"query": "package manager preference", "alternatives": ["pnpm", "npm", "yarn"]}
    return Script([Rule("package manager", (Call("memory_recall", query), Text("Use pnpm: `pnpm add lodash`.")))])


def session_two(world: World) -> Run:
    return world.expect_ok(world.run(PARAPHRASE, recall_script()))


def check_first_request(world: World, run: Run) -> None:
    """The model's first request: our tools, our server instructions, and the prompt hook's context naming pnpm."""
    first = run.first()
    problems = Problems(f"{world.host.name}: the first model request of session 2")
    offered = first.our_tools()
    evidence = [f"tools offered: {first.tool_names()}"]
    if isinstance(world.host, ClaudeCode):
        evidence.append(f"Claude Code debug log: memlikehuman connected in {claude_connect_ms(run)} ms")
        evidence.append(debug_lines(run, 'MCP server "memlikehuman"', "UserPromptSubmit"))
    problems.check(
        set(TOOLS) <= set(offered),
        f"our tools are not all offered: {sorted(offered) or 'none of ours'}"
        + (" (Claude Code offers WaitForMcpServers instead)" if "WaitForMcpServers" in first.tool_names() else ""),
    )
    shown = first.server_instructions()
    problems.check(
        _oneline(INSTRUCTIONS) in _oneline(shown),
        f"our server instructions are not in the request (found: {shown[:200]!r})",
    )
    prompt_context = first.prompt_hook_context()
    problems.check(
        any("pnpm" in text for text in prompt_context),
        "the prompt hook injected nothing that names pnpm"
        f" (prompt hook context: {[t[:400] for t in prompt_context] or 'none'};"
        f" pnpm in the session-start context: {any('pnpm' in t for t in first.hook_context())})",
    )
    # What the agent made of session 1's preference is what session 2 is handed: the memory, not the prompt.
    records = [o for text in prompt_context for o in _json_objects(text)]
    problems.check(
        any(r.get("memory_id") and r.get("content") == PNPM_MEMORY["content"] for r in records),
        f"the agent's pnpm memory is not among the injected records: {records}",
    )
    problems.check(
        not any(r.get("text") == PNPM for r in records),
        "the session-1 prompt itself was injected beside (or instead of) the memory made of it",
    )
    evidence += [f"hook context: {text[:1500]}" for text in first.hook_context()]
    evidence.append(_hooks_log(world))
    problems.assert_none("\n".join(evidence) + "\n" + run.describe())


def check_recall_result_read(world: World, run: Run) -> None:
    """After the scripted memory_recall, the next request carries its result, holding the pnpm statement."""
    after = run.after("memory_recall")
    result = next(r for r in after.results() if r.tool == "memory_recall")
    assert not result.is_error, f"{world.host.name}: memory_recall failed: {result.text[:2000]}\n{run.describe()}"
    assert PNPM in result.text, (
        f"{world.host.name}: the recall result the model read does not hold {PNPM!r}:\n{result.text[:3000]}"
    )


# -- standing facts at the start of a session ------------------------------------------------------

BUN = "We switched to bun: use bun from now on, not pnpm."
BUN_MEMORY = {"content": "The user uses bun as the package manager of this repo", "quote": "use bun from now on",
              "kind": "preference", "subject": "user.package_manager"}  # fmt: skip
STANDING = re.compile(r"«DATA (\d+) standing_facts»\n(.*?)\n«END \1 standing_facts»", re.DOTALL)


def standing_facts(request: Request) -> list[str]:
    """The contents of the standing_facts block the session's start context handed (in any hook context)."""
    found = [m.group(2) for text in request.hook_context() for m in STANDING.finditer(text)]
    return [json.loads(line)["content"] for block in found for line in block.splitlines()]


def check_standing_facts_at_start(world: World, run: Run) -> None:
    """A new session's first request holds the memory the agent made in session 1, as a standing fact."""
    facts = standing_facts(run.first())
    problems = Problems(f"{world.host.name}: standing facts at the start of session 2")
    problems.check(PNPM_MEMORY["content"] in facts, f"the standing facts {facts} lack {PNPM_MEMORY['content']!r}")
    problems.assert_none("\n".join(_cut(text) for text in run.first().hook_context()))


def change_script() -> Script:
    """The model keeps the change as a memory of the recorded turn with the same subject, then answers."""

    def record(request: Request) -> dict[str, Any]:
        ids = ids_from_context(request)
        if ids is None:
            raise LookupError("the hooks' context names no recorded turn to attach memories to")
        return {"event_id": ids.event_id, "text": request.prompt() or "", "role": "user", "source": ids.source,
                "session_id": ids.session_id, "memories": [BUN_MEMORY], **scope_from_context(request)}  # fmt: skip

    return Script([Rule("bun", (Call("memory_record", record), Text("Noted: bun from now on.")))])


def check_only_the_new_value_at_start(world: World) -> None:
    """After the change, the next session starts with the new value only."""
    world.expect_ok(world.run(BUN, change_script()))
    later = world.expect_ok(world.run("hello", NOTED))
    facts = standing_facts(later.first())
    problems = Problems(f"{world.host.name}: standing facts after a change")
    problems.check(BUN_MEMORY["content"] in facts, f"the standing facts {facts} lack {BUN_MEMORY['content']!r}")
    problems.check(PNPM_MEMORY["content"] not in facts, f"the standing facts {facts} still hold the old value")
    problems.assert_none("\n".join(_cut(text) for text in later.first().hook_context()))


# -- session 3: the agent's own memories, checkpoint, resume, forget --------------------------------


@dataclass(frozen=True)
class PromptIds:
    """The hook's record of the current prompt, as the model must name it in memory_record."""

    event_id: str
    session_id: str
    source: str
    how: str  # "context" (copied from the prompt hook's context) or "archive (fallback)"
    scope: dict[str, str] = field(default_factory=dict)  # persona_id, project_id when the context names them


_KEY = r"[\"'`]?\s*[:=]\s*[\"'`]?([^\s\"'`,;)]+)"
_ID_KEYS = ("event_id", "session_id", "source")


def ids_from_context(request: Request) -> PromptIds | None:
    """The current prompt's event ID, session ID and source, copied from the hooks' injected context.

    The prompt hook's context ends with "This prompt is recorded as {"event_id": ...}."; the session's start
    context says once "This session's prompts are recorded with {"role": "user", "source": ..., "session_id":
    ...}" (and the scope in words). Taken: the last JSON object of the prompt hook's context that holds only
    an event_id (recalled records carry more), with the last such session object of any hook context; else
    the last `event_id: X` / `session_id: X` / `source: X` of the prompt hook's context.
    """
    text = "\n".join(request.prompt_hook_context())
    notes = [o for o in _json_objects(text) if set(o) == {"event_id"} and isinstance(o["event_id"], str)]
    sessions = [
        o
        for o in _json_objects("\n".join(request.hook_context()))
        if set(o) == {"role", "source", "session_id"} and all(isinstance(v, str) for v in o.values())
    ]
    if notes and sessions:
        return PromptIds(notes[-1]["event_id"], sessions[-1]["session_id"], sessions[-1]["source"], "context")
    found = {}
    for key in _ID_KEYS:
        matches = re.findall(r"\b" + key.replace("_", "[_ ]") + _KEY, text, re.IGNORECASE)
        if not matches:
            return None
        found[key] = matches[-1]
    return PromptIds(found["event_id"], found["session_id"], found["source"], "context")


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object written in the text, in order."""
    decoder, found, position = json.JSONDecoder(), [], 0
    while (start := text.find("{", position)) >= 0:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            position = start + 1
            continue
        if isinstance(value, dict):
            found.append(value)
        position = end
    return found


def scope_from_context(request: Request) -> dict[str, str]:
    """persona_id and project_id as the session-start context asks the model to pass them ({} when it does not)."""
    match = re.search(r"persona '([^']+)', project '([^']+)'", "\n".join(request.hook_context()))
    return {"persona_id": match.group(1), "project_id": match.group(2)} if match else {}


class ChoresScript:
    """Session 3's model: memory_record with memories, session_checkpoint, session_resume, memory_recall,
    memory_forget, then a reply. The IDs come from the prompt hook's context; where it names none, from
    the archive (so the rest still runs), and the test reports it."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.ids: PromptIds | None = None
        self.scope: dict[str, str] = {}

    def script(self) -> Script:
        steps = (
            Call("memory_record", self.record),
            Call("session_checkpoint", self.checkpoint),
            Call("session_resume", self.resume),
            Call("memory_recall", self.recall),
            Call("memory_forget", self.forget),
            Text("Done: the tests run with `pnpm test --silent`, and the staging server is forgotten."),
        )
        return Script([Rule("Always run the tests", steps)])

    def _ids(self, request: Request) -> PromptIds:
        if self.ids is None:
            self.scope = scope_from_context(request)
            self.ids = ids_from_context(request) or self._from_archive(request.prompt() or "")
        return self.ids

    def _from_archive(self, prompt: str) -> PromptIds:
        events = [e for e in self.world.archive().user_events() if e["text"].endswith(prompt)]
        if not events:
            raise LookupError(f"the hook recorded no user event ending with {prompt!r}")
        latest = events[-1]
        return PromptIds(latest["event_id"], latest["session_id"], latest["source"], "archive (fallback)")

    def record(self, request: Request) -> dict[str, Any]:
        ids = self._ids(request)
        memory = {
            "content": "The user runs the tests with `pnpm test --silent`.",
            "quote": TEST_QUOTE,
            "kind": "preference",
            "subject": "user.test_command",
        }
        text = request.prompt() or ""
        return {"event_id": ids.event_id, "text": text, "role": "user", "source": ids.source,
                "session_id": ids.session_id, "memories": [memory], **self.scope}  # fmt: skip

    def checkpoint(self, request: Request) -> dict[str, Any]:
        ids = self._ids(request)
        state = {
            "goal": GOAL,
            "completed": ["Recorded that the tests run with pnpm test --silent"],
            "pending": ["Forget what the user said about the staging server"],
            "constraints": ["Use pnpm, never npm"],
            "next_step": "Forget the staging server details",
        }
        return {"state": state, "covered_event_id": ids.event_id, "session_id": ids.session_id, **self.scope}

    def resume(self, request: Request) -> dict[str, Any]:
        ids = self._ids(request)
        return {"session_id": ids.session_id, "query": "test command", "target_model": "stand-in", **self.scope}

    def recall(self, request: Request) -> dict[str, Any]:
        return {"query": "staging server", "alternatives": [STAGING_HOST], **self.scope}

    def forget(self, request: Request) -> dict[str, Any]:
        recalled = [r for r in request.results() if r.tool == "memory_recall"]
        body = recalled[-1].json() if recalled else {}
        items = [*body.get("memories", []), *body.get("raw_fallback", [])]
        # The statement itself first (an excerpt may hold it among other text), then anything naming the host.
        for needle in (STAGING, STAGING_HOST):
            for item in items:
                if needle in json.dumps(item, ensure_ascii=False):
                    return {"record_id": item.get("memory_id") or item["event_id"], **self.scope}
        seen = recalled[-1].text[:500] if recalled else None
        raise LookupError(f"the recall result names no record holding {STAGING_HOST!r}: {seen}")


@dataclass
class SessionThree:
    run: Run
    chores: ChoresScript
    results: dict[str, ToolResult] = field(default_factory=dict)
    archive: Archive | None = None


def session_three(world: World) -> SessionThree:
    chores = ChoresScript(world)
    run = world.run(CHORES, chores.script())
    three = SessionThree(run, chores)
    for request in run.main():
        for result in request.results():
            three.results.setdefault(result.tool, result)
    three.archive = world.archive()
    return three


def check_chores(world: World, three: SessionThree) -> None:
    run, ids, archive = three.run, three.chores.ids, three.archive
    assert not run.script_errors and ids is not None and archive is not None, f"harness: {run.describe()}"
    problems = Problems(f"{world.host.name}: the agent's memories, checkpoint, resume and forget")
    problems.check(run.returncode == 0, f"the CLI exited {run.returncode}")
    problems.check(
        ids.how == "context",
        f"the prompt hook's context names no event_id/session_id/source of the current prompt; the model"
        f" could not copy them (the test took {ids.event_id} from the archive). Prompt hook context:"
        f" {[t[:600] for t in run.first().prompt_hook_context()] or 'none'}",
    )
    for tool in ("memory_record", "session_checkpoint", "session_resume", "memory_recall", "memory_forget"):
        result = three.results.get(tool)
        if problems.check(result is not None, f"{tool} was never called (or its result never came back)"):
            assert result is not None
            problems.check(
                not result.is_error, f"{tool}{json.dumps(result.arguments)[:300]} failed: {_cut(result.text)}"
            )
    # memory_record: the memory is attached to the hook's event, which stays the only copy of the prompt.
    attached = [m for m in archive.memories if m["event_id"] == ids.event_id]
    problems.check(
        any(m["quote"] == TEST_QUOTE and m.get("extractor") == "agent" for m in attached),
        f"no memory (extractor agent, quote {TEST_QUOTE!r}) is attached to {ids.event_id}: {attached}",
    )
    copies = [e for e in archive.user_events() if CHORES in e["text"]]
    problems.check(len(copies) == 1, f"{len(copies)} user events hold the prompt: {[e['event_id'] for e in copies]}")
    event = archive.event(ids.event_id)
    problems.check(
        event and event["extraction_state"] == "complete",
        f"the prompt's event is {event and event['extraction_state']}",
    )
    # session_checkpoint and session_resume
    checkpoint_id = _structured(three.results.get("session_checkpoint")).get("checkpoint_id")
    saved = [c for c in archive.checkpoints if c["checkpoint_id"] == checkpoint_id]
    if problems.check(saved, f"checkpoint {checkpoint_id} is not in the archive"):
        problems.check(
            saved[0]["covered_event_id"] == ids.event_id, f"checkpoint covers {saved[0]['covered_event_id']}"
        )
        problems.check(
            saved[0]["invalidated_at"],
            "the forget did not invalidate the checkpoint (docs: every checkpoint of the scope)",
        )
    resumed = _structured(three.results.get("session_resume"))
    taken = next((c for c in archive.checkpoints if c["checkpoint_id"] == resumed.get("checkpoint_id")), None)
    problems.check(
        GOAL in str(resumed.get("context", "")),
        f"session_resume's context lacks the checkpoint goal: it took checkpoint {resumed.get('checkpoint_id')}"
        f" (created {taken and taken['created_at']}, covering {taken and taken['covered_event_id']}), not the"
        f" agent's {checkpoint_id} (created {saved[0]['created_at'] if saved else None}); all of this session's:"
        f" {[(c['checkpoint_id'], c['created_at']) for c in archive.checkpoints if c['session_id'] == ids.session_id]}",
    )
    # memory_forget: the staging fact is gone everywhere, the rest stays.
    forgotten = _structured(three.results.get("memory_forget"))
    problems.check(forgotten.get("deleted_event_ids"), f"memory_forget deleted no event: {forgotten}")
    problems.check(STAGING_HOST not in archive.texts(), f"{STAGING_HOST!r} is still in the archive")
    problems.check(any(e["text"].endswith(PNPM) for e in archive.events), "the pnpm statement was forgotten too")
    problems.assert_none(run.describe() + "\n" + archive.describe())


def _cut(text: str, head: int = 300, tail: int = 700) -> str:
    """A long tool result shortened for a message; an error from its "Error executing tool" on."""
    start = text.find("Error executing tool")
    if start > 0:
        return text[start : start + head + tail]
    return text if len(text) <= head + tail else f"{text[:head]} [...] {text[-tail:]}"


def _structured(result: ToolResult | None) -> dict[str, Any]:
    return result.json() if result is not None and not result.is_error else {}


# -- install, run, uninstall -----------------------------------------------------------------------

CLAUDE_USER_SETTINGS = '{\n  "permissions": {\n    "allow": [\n      "Bash(git status)"\n    ]\n  }\n}\n'


def install_run_uninstall(world: World) -> None:
    """The user's config files are as the CLI left them before install, and nothing of ours stays."""
    if isinstance(world.host, ClaudeCode):
        settings = world.home / ".claude" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(CLAUDE_USER_SETTINGS, encoding="utf-8")
    # A session before install: the CLI writes (or rewrites) its own files first.
    world.expect_ok(world.run("hello", Script([Rule("", (Text("Hi."),))])))
    snapshot = {path: _read(path) for path in world.home.rglob("*") if path.is_file() and path.stat().st_size < 2**20}
    installed = world.install()
    changed = [
        Path(line.split(":", 1)[1].strip()) for line in installed.stdout.splitlines() if line.startswith("changed:")
    ]
    files = sorted({*world.host.config_files(world), *changed})
    before = {path: snapshot.get(path) for path in files}
    run = world.expect_ok(world.run(PNPM, NOTED))
    world.uninstall()
    problems = Problems(f"{world.host.name}: install, a session, uninstall")
    warnings = world.host.config_warnings(run)
    problems.check(not warnings, f"{world.host.name} warned about the config install wrote: {warnings}")
    problems.check(any(e["text"].endswith(PNPM) for e in world.archive().user_events()), "the hooks recorded nothing")
    for path in files:
        now = _read(path)
        diff = "".join(
            difflib.unified_diff(
                (before[path] or "").splitlines(True), (now or "").splitlines(True), "before install", "after uninstall"
            )
        )
        problems.check(
            now == before[path],
            f"{path} differs (existed before: {before[path] is not None}, now: {now is not None}):\n{diff}",
        )
    backups = sorted(str(p.relative_to(world.home)) for p in world.home.rglob("*memlikehuman-backup*"))
    problems.check(not backups, f"backup files remain: {backups}")
    records = world.home / ".local" / "share" / "memlikehuman" / "installs.json"
    left = json.loads(records.read_text(encoding="utf-8")) if records.exists() else {}
    problems.check(not left, f"installs.json still records: {sorted(left)}")
    telemetry = world.home / ".cache" / "Microsoft" / "DeveloperTools" / ".onnxruntime"
    problems.check(
        not telemetry.exists(),
        "onnxruntime wrote its device ID and telemetry queue into the user's home (ORT_DISABLE_TELEMETRY unset):"
        f" {sorted(p.name for p in telemetry.iterdir()) if telemetry.exists() else []}",
    )
    problems.assert_none(f"install: {installed.stdout}\n{run.describe()}")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return None


def _hooks_log(world: World) -> str:
    log = Path(str(world.db) + ".hooks.log")
    return f"hooks log: {log.read_text(encoding='utf-8')[-1500:]}" if log.exists() else "hooks log: (none)"
