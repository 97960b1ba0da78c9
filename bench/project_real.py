"""A five-session coding project in the real Claude Code: what reached the model, at a baseline and now.

A new user's project, driven through `claude -p` (one call per prompt; a session's later prompts resume
it) against the stand-in model of tests/hosts_real, which follows our instructions literally: when it is
told a fact, a preference or a rule, it attaches a memory of it (content, quote, kind, subject) to the
turn the prompt hook recorded, with memory_record, then acknowledges ("Noted, ..."); asked a question,
it answers with the current value, as a model that knows it would. Sessions 1-2 state ten facts among a
greeting, a joke request and how-to questions; session 3 changes three of them (a deadline, a port, an
owner); sessions 4 and 5 ask about all ten: session 4 in one session (each prompt resumes it), session 5
each question in a new session. Read from the first model request of each of the 20 questions:
- reached: the current value is in what our hooks put into the request (the session's start and the
  prompt's context);
- by the prompt hook: ... in the prompt's own context (what an earlier prompt of the session was handed
  is not handed again);
- only the old value: for a changed fact, a record handed holds the old value and not the new one;
- echoes: injected records that repeat one of the user's own questions or the model's acknowledgements;
- at the start: of the agent's memories that hold now, how many a new session's start context names;
- characters of our context per question.
Each variant (no memlikehuman is not one: nothing would be handed) runs in a home, project and archive
of its own, pip-installed from a wheel (bench/installed.py) and wired by its own `install claude-code`;
memory_record is allowed in Claude Code's settings where that install did not allow it (598ea20's did
not, and `claude -p` has no one to ask).

    python -m bench.project_real --baseline 598ea20      # ~3 min; writes docs/benchmarks.md
    python -m bench.project_real --host gemini           # the same through Gemini CLI (or codex)
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import subprocess
import sys
import tempfile
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.installed import both_installed  # noqa: E402
from bench.report import table, write_section  # noqa: E402
from tests.hosts_real.scenarios import ids_from_context  # noqa: E402
from tests.hosts_real.standin import Call, Request, Rule, Script, Text  # noqa: E402
from tests.hosts_real.support import HOSTS, ClaudeCode, Host, Run, World, hosts_bin  # noqa: E402


@dataclass(frozen=True)
class Turn:
    """A prompt of the user, the memory the model attaches to it (None: nothing to remember), its answer."""

    prompt: str
    memory: dict[str, str] | None = None
    answer: str = "Sure."


@dataclass(frozen=True)
class Ask:
    """A question about an earlier fact: the value that answers it now, and the one it replaced."""

    prompt: str
    current: str
    old: str | None
    answer: str  # what the model answers, as one that knows would


def _fact(prompt: str, content: str, kind: str, subject: str, answer: str) -> Turn:
    return Turn(prompt, {"content": content, "kind": kind, "subject": subject, "quote": prompt}, answer)


# A real model's answers to how-to questions: long, with code, naming what the project does not use.
DATE_FNS = """Run this in the repository root:

```sh
pnpm add date-fns
```

Then import only the functions you need, so the bundle stays small:

```ts
import { format, addDays, parseISO } from "date-fns";

const due = addDays(parseISO(invoice.issuedAt), 30);
export const dueLabel = format(due, "d MMM yyyy");
```

With npm it would be `npm install date-fns` and with yarn `yarn add date-fns`, but this repo uses pnpm, so
stick to `pnpm add`. date-fns ships its own TypeScript types, so there is no @types package to add. If you
format dates in several places, put the helpers in `src/lib/dates.ts` and keep the format strings in one
place; for time zones add `date-fns-tz` the same way."""
ROUTERS = """Give each feature its own module with one `APIRouter`, and include them all in `main.py`:

```python
# app/invoices/routes.py
from fastapi import APIRouter, Depends

router = APIRouter(prefix="/invoices", tags=["invoices"])

@router.get("/{invoice_id}")
async def read_invoice(invoice_id: int, db=Depends(get_db)):
    return await invoices.get(db, invoice_id)
```

```python
# app/main.py
from fastapi import FastAPI
from app.invoices.routes import router as invoices
from app.customers.routes import router as customers

app = FastAPI()
app.include_router(invoices)
app.include_router(customers)
```

Keep the database session as a dependency (`get_db`) in `app/db.py`, so every router gets it the same
way and tests can override it with `app.dependency_overrides`. Shared schemas go in `app/schemas/`, and
each feature keeps its own service functions next to its routes. When a feature grows, split its router
into read and write modules but keep one prefix per feature, so the OpenAPI docs stay grouped."""
MIGRATIONS = """A migration is a versioned script that changes the database schema (add a table, a column, an
index) or moves data, applied in order and recorded in the database, so every environment reaches the
same schema the same way.

With SQLAlchemy the usual tool is Alembic:

```sh
alembic revision --autogenerate -m "add invoice due date"
alembic upgrade head
```

Each revision has an `upgrade()` and a `downgrade()`. Review autogenerated scripts before you apply them:
Alembic cannot tell a renamed column from a dropped and an added one. Run the migrations in the deploy step
before the new code starts, and never edit a migration that already ran in staging or production: add a
new one instead. For large tables, add columns as nullable first, backfill in batches, then add the
constraint in a later migration, so the table is not locked for long."""

# fmt: off
SESSIONS: tuple[tuple[Turn, ...], ...] = (
    (
        _fact("Morning! I'm starting a small invoicing app called Ledgerly. I always use pnpm, never npm or yarn,"
              " in this repo.", "The user always uses pnpm, never npm or yarn, in this repo", "preference",
              "user.package_manager", "Noted, I'll use pnpm for everything here."),
        _fact("The backend is FastAPI on Python 3.12, and the database is PostgreSQL 16.",
              "Ledgerly's backend is FastAPI on Python 3.12 with PostgreSQL 16", "fact", "project.stack",
              "Understood: FastAPI, Python 3.12, PostgreSQL 16."),
        _fact("The beta has to ship by March 14, that's the hard deadline.", "The beta's hard deadline is March 14",
              "plan", "project.beta_deadline", "Got it, March 14 is the hard deadline."),
        Turn("Tell me a joke about cats.", None, "Why did the cat sit on the computer? To keep an eye on the mouse."),
        Turn("How do I add date-fns to the project?", None, DATE_FNS),
    ),
    (
        _fact("Please always run ruff and pytest before committing.", "Always run ruff and pytest before committing",
              "preference", "user.before_commit", "Noted: ruff and pytest before every commit."),
        _fact("The staging server is staging.ledgerly.dev on port 8443.",
              "The staging server is staging.ledgerly.dev on port 8443", "fact", "project.staging",
              "Noted, staging.ledgerly.dev:8443."),
        Turn("Morning. What's a good way to split FastAPI routers by feature?", None, ROUTERS),
        _fact("Invoice numbers restart every January, like INV-2027-0001.",
              "Invoice numbers restart every January (INV-2027-0001)", "fact", "project.invoice_numbers",
              "Understood, numbering restarts each January."),
        _fact("Priya owns the payments module, ask her before touching it.", "Priya owns the payments module",
              "fact", "project.payments_owner", "Noted, I'll check with Priya before payments changes."),
        _fact("We deploy with Docker Compose, never Kubernetes.", "Ledgerly deploys with Docker Compose, not"
              " Kubernetes", "fact", "project.deploy", "Got it: Docker Compose only."),
        _fact("All amounts are stored as integer cents, never floats.", "Amounts are stored as integer cents",
              "fact", "project.amounts", "Understood, integer cents everywhere."),
    ),
    (
        _fact("Bad news: the beta deadline moved from March 14 to March 28.", "The beta's hard deadline is March 28",
              "plan", "project.beta_deadline", "Noted, the beta deadline is now March 28."),
        _fact("We moved staging to port 9443, the host stays staging.ledgerly.dev.",
              "The staging server is staging.ledgerly.dev on port 9443", "fact", "project.staging",
              "Noted, staging.ledgerly.dev:9443 from now on."),
        _fact("Priya moved teams, Marco owns payments now.", "Marco owns the payments module", "fact",
              "project.payments_owner", "Understood, Marco is the payments owner."),
        Turn("Can you explain what a database migration is?", None, MIGRATIONS),
    ),
)
ASKS: tuple[Ask, ...] = (
    Ask("How do I add zod to the project?", "pnpm", None,
        "Run `pnpm add zod` in the repo root (this repo uses pnpm, not npm), then `import { z } from \"zod\"`."),
    Ask("When does the beta have to ship?", "March 28", "March 14",
        "By March 28: the hard deadline moved there from March 14."),
    Ask("Which port does staging listen on?", "9443", "8443",
        "Port 9443 on staging.ledgerly.dev (it moved from 8443)."),
    Ask("Who should I talk to before changing the payments code?", "Marco", "Priya",
        "Marco: he owns the payments module now that Priya moved teams."),
    Ask("What do I need to run before I commit?", "ruff", None,
        "Ruff and pytest, before every commit: `ruff check . && pytest`."),
    Ask("Which Python version are we on?", "3.12", None, "Python 3.12, with FastAPI and PostgreSQL 16."),
    Ask("How do the invoice numbers work?", "January", None,
        "They restart every January: INV-2027-0001 is the first invoice of 2027."),
    Ask("How do we deploy the app?", "Docker Compose", None,
        "With Docker Compose (`docker compose up -d` on the server), not Kubernetes."),
    Ask("How should I store money amounts?", "cents", None, "As integer cents, never floats: 12.50 is 1250."),
    Ask("Which database does the backend use?", "PostgreSQL 16", None, "PostgreSQL 16."),
)
# fmt: on
# Prompts about nothing the project said: what they get is noise.
UNRELATED = ("Tell me a joke about dogs.", "What's the capital of Australia?", "Write a haiku about autumn rain.")


def _script(turn: Turn) -> Script:
    """One prompt's script: a memory of the recorded turn when there is one to make, then the answer."""
    if turn.memory is None:
        return Script([Rule("", (Text(turn.answer),))])
    memory = turn.memory

    def record(request: Request) -> dict[str, Any]:
        ids = ids_from_context(request)
        if ids is None:  # the context names no recorded turn: the model records the statement itself
            return {"text": request.prompt() or turn.prompt, "role": "user", "memories": [memory]}
        scope = {k: v for k, v in ids.scope.items() if v}
        return {"event_id": ids.event_id, "text": request.prompt() or turn.prompt, "role": "user",
                "source": ids.source, "session_id": ids.session_id, "memories": [memory], **scope}  # fmt: skip

    return Script([Rule("", (Call("memory_record", record), Text(turn.answer)))])


@dataclass
class Variant:
    label: str
    script: str
    asked: list[dict[str, Any]] = field(default_factory=list)
    memories: int = 0
    recorded: list[str] = field(default_factory=list)  # per statement: how its memory_record went
    unrelated: list[list[str]] = field(default_factory=list)  # what the prompt hook handed each UNRELATED prompt


def _recorded(run: Run) -> str:
    """Its outcome: "ok", the error memory_record returned, or "no tools" when the model was not given ours."""
    results = [r for request in run.main() for r in request.all_results() if r.tool == "memory_record"]
    if results:
        return "error: " + results[-1].text[:300] if results[-1].is_error else "ok"
    return "no tools" if not any(request.our_tools() for request in run.main()) else "not called"


RECORD_TOOL = "mcp__memlikehuman__memory_record"
TITLES = {"claude-code": "Claude Code", "gemini": "Gemini CLI", "codex": "Codex CLI"}


def _allow_recording(world: World) -> None:
    """memory_record allowed in Claude Code's settings, as a user who was asked once would have it (an
    install that does not allow it leaves `claude -p` unable to call it: no one is there to ask). The
    other hosts run with their own approvals (tests/hosts_real/support.py)."""
    if not isinstance(world.host, ClaudeCode):
        return
    path = world.home / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    allowed = settings.setdefault("permissions", {}).setdefault("allow", [])
    if RECORD_TOOL not in allowed:
        allowed.append(RECORD_TOOL)
        path.write_text(json.dumps(settings, indent=2))


def _run(world: World, prompt: str, script: Script, resume: str | None) -> Run:
    run = world.run(prompt, script, resume=resume)
    if run.returncode != 0 or not run.main():
        raise RuntimeError(f"{world.host.name} failed:\n{run.describe()}")
    return run


def drive(variant: Variant, host: Host, root: Path) -> Variant:
    """The whole project through one variant's install in the host's headless CLI; each question's request read."""
    world = World(host, root).start()
    try:
        subprocess.run([variant.script, "install", host.name], env=world.env(), cwd=world.project,
                       check=True, capture_output=True)  # fmt: skip
        _allow_recording(world)
        said: list[str] = []  # the user's questions and the model's acknowledgements so far
        for turns in SESSIONS:
            session = None
            for turn in turns:
                run = _run(world, turn.prompt, _script(turn), session)
                session = run.session_id
                if turn.memory:
                    variant.recorded.append(_recorded(run))
                said += [turn.answer] if turn.memory else [turn.prompt]
        current = {t.memory["subject"]: t.memory["content"] for turns in SESSIONS for t in turns if t.memory}
        made = list(current.values())  # the memories that hold now (a later one of a subject replaces it)
        session = None
        for ask in ASKS:  # session 4: one session
            run = _run(world, ask.prompt, Script([Rule("", (Text(ask.answer),))]), session)
            session = run.session_id
            variant.asked.append(_read(run.first(), ask, said, made, new_session=False))
            said.append(ask.prompt)
        for ask in ASKS:  # session 5: each question a new session
            run = _run(world, ask.prompt, Script([Rule("", (Text(ask.answer),))]), None)
            variant.asked.append(_read(run.first(), ask, said, made, new_session=True))
        for prompt in UNRELATED:  # and prompts about nothing the project said, each a new session
            run = _run(world, prompt, Script([Rule("", (Text("Here you go."),))]), None)
            variant.unrelated.append(_records(_prompt_hook(run.first())))
        with closing(sqlite3.connect(f"file:{world.db}?mode=ro", uri=True)) as db:
            variant.memories = db.execute("SELECT count(*) FROM memories").fetchone()[0]
    finally:
        world.stop()
    return variant


def _read(request: Request, ask: Ask, said: list[str], made: list[str], new_session: bool) -> dict[str, Any]:
    """What one question's first model request held of ours."""
    everything = "\n".join(request.injected())
    records = _records(everything)
    prompt_hook = _prompt_hook(request)
    start = "\n".join(b for text in _start_contexts(request) for b in _blocks(text))
    return {
        "ask": ask.prompt,
        "reached": _has(everything, ask.current),
        "by prompt hook": _has(prompt_hook, ask.current),
        "old value": ask.old is not None and any(_has(r, ask.old) and not _has(r, ask.current) for r in records),
        "changed": ask.old is not None,
        "echoes": [s for s in said if _oneline(s) in _oneline(prompt_hook)],
        "start memories": sum(_has(start, m) for m in made) if new_session else None,
        "made": len(made),
        "chars": len(everything),
        "prompt hook chars": len(prompt_hook),
        "context": everything,
    }


def _records(context: str) -> list[str]:
    """The records of our context: one JSON object per line."""
    return [line for line in context.splitlines() if line.startswith("{")]


def _prompt_hook(request: Request) -> str:
    """Our blocks in the prompt's own context: the last one (a resumed session's request carries the
    earlier prompts' too)."""
    return "\n".join(b for text in request.prompt_hook_context()[-1:] for b in _blocks(text))


def _blocks(text: str) -> list[str]:
    return re.findall(r"<memlikehuman-context>.*?(?:</memlikehuman-context>|\Z)", text, re.DOTALL)


def _start_contexts(request: Request) -> list[str]:
    prompt_hook = request.prompt_hook_context()
    return [text for text in request.hook_context() if text not in prompt_hook]


def _oneline(text: str) -> str:
    return " ".join(text.lower().split())


def _has(text: str, value: str) -> bool:
    return _oneline(value) in _oneline(text)


def _report(variants: list[Variant], host: Host) -> str:
    rows = []
    for v in variants:
        asked, changed = v.asked, [a for a in v.asked if a["changed"]]
        starts = [a for a in asked if a["start memories"] is not None]
        echoes = sum(len(a["echoes"]) for a in asked)
        rows.append((
            v.label,
            f"{sum(a['reached'] for a in asked)} of {len(asked)}",
            f"{sum(a['by prompt hook'] for a in asked)} of {len(asked)}",
            f"{sum(a['old value'] for a in changed)} of {len(changed)}",
            f"{echoes} in {sum(bool(a['echoes']) for a in asked)} questions",
            f"{sum(a['start memories'] for a in starts) / len(starts):.1f} of {starts[0]['made']}" if starts else "-",
            f"{v.recorded.count('ok')} of {len(v.recorded)} ({v.memories} memories)",
            f"{sorted(a['chars'] for a in asked)[len(asked) // 2]:,}",
            f"{sum(bool(r) for r in v.unrelated)} of {len(v.unrelated)} ({sum(map(len, v.unrelated))} records)",
        ))  # fmt: skip
    headers = [f"{host.binary} (headless)", "current value reached the model", "by the prompt hook",
               "a record with only the old value", "echoes injected", "memories at a new session's start (mean)",
               "memory_record calls that worked", "characters of our context, p50",
               "unrelated prompts handed records"]  # fmt: skip
    return table(headers, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="598ea20", help="the git revision measured beside this checkout")
    parser.add_argument("--dump", type=Path, help="write every question's injected context to this JSON file")
    parser.add_argument("--host", choices=sorted(HOSTS), default="claude-code", help="the host CLI to drive")
    args = parser.parse_args()
    host = HOSTS[args.host]
    if not (hosts_bin() / host.binary).exists():
        raise SystemExit(f"{host.binary} is not installed under .ci/hosts: run .ci/run's npm install first")
    with tempfile.TemporaryDirectory(dir=ROOT / "bench") as tmp:  # not /tmp: socket paths stay short below it
        root = Path(tmp)
        baseline, name, this = both_installed(args.baseline, root)
        variants = [drive(Variant(f"main {name}", baseline), host, root / "v0"),
                    drive(Variant("this", this), host, root / "v1")]  # fmt: skip
    if args.dump:
        found = {v.label: {"asked": v.asked, "recorded": v.recorded, "unrelated": v.unrelated} for v in variants}
        args.dump.write_text(json.dumps(found, indent=1, ensure_ascii=False))
    body = "\n\n".join([
        _report(variants, host),
        f"{sum(len(s) for s in SESSIONS)} statements and requests in sessions 1-3, then {len(ASKS)} questions"
        " twice: in one session (4) and each in a new session (5). Reached: the current value is in our context"
        " of the question's first model request (the session's start and the prompt hook); by the prompt hook:"
        " in that prompt's own context (what an earlier prompt of the session was handed is not handed again);"
        " only the old value: questions about a changed fact with a record handed that holds the old value and"
        " not the new; echoes: records of the prompt's own context that repeat the user's earlier questions or"
        " the model's acknowledgements. The stand-in model makes a memory of each statement as our"
        " instructions say; at the start: of those memories that hold now, how many a new session's start"
        " context names. Unrelated prompts: a joke, a capital, a haiku, each in a new session. The model's"
        " answers to how-to questions are long, with code (and name npm beside pnpm), as a real model's are.",
    ])  # fmt: skip
    section = "project-real" + ("" if isinstance(host, ClaudeCode) else f"-{host.name}")
    write_section(
        section,
        f"A five-session project in the real {TITLES[host.name]}: what reached the model",
        f"python -m bench.project_real --baseline {args.baseline}"
        + ("" if isinstance(host, ClaudeCode) else f" --host {host.name}"),
        body,
    )
    print(body)


if __name__ == "__main__":
    main()
