"""How many checkpoints the hooks write, and what the next session start shows, for two kinds of use.

Run: python -m bench.hook_checkpoints
Each hook call runs in this process (`hosts.hook.run`, as the console script calls it) on a new archive:
`headless` is 35 `claude -p` calls (a session of one prompt each); `interactive` one session of 12
prompts, then 5 such calls. Printed: the checkpoints written, and how many of the prompts the next
`SessionStart` context shows (docs/decisions/2026-12-07-command-line-defaults.md).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path

os.environ.update(
    {"MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
)

from memlikehuman.archive.db import open_database  # noqa: E402
from memlikehuman.hosts import hook  # noqa: E402


def call(db: Path, event: str, project: Path, session: str, **fields: str) -> str:
    """One hook call of Claude Code, installed with the defaults (`--project auto`); its stdout."""
    payload = {"hook_event_name": event, "session_id": session, "cwd": str(project), **fields}
    out = io.StringIO()
    options = hook.Options("claude-code", db=str(db), persona="default", project="auto")
    hook.run(options, io.StringIO(json.dumps(payload)), out, io.StringIO())
    return out.getvalue()


def turn(db: Path, project: Path, session: str, prompt: str, reply: str) -> None:
    call(db, "UserPromptSubmit", project, session, prompt=prompt)
    call(db, "Stop", project, session, last_assistant_message=reply)


def run(kind: str) -> str:
    folder = Path(tempfile.mkdtemp())
    db, project = folder / "m.sqlite3", folder / "app"
    project.mkdir()
    prompts: list[str] = []
    if kind == "interactive":
        for n in range(12):
            prompts.append(f"interactive step {n}: refactor module {n} of the billing service")
            turn(db, project, "live", prompts[-1], f"Refactored module {n}.")
        call(db, "SessionEnd", project, "live")
    calls = 35 if kind == "headless" else 5
    for n in range(calls):
        prompts.append(f"headless question {n}: which port does service {n} use?")
        turn(db, project, f"p{n}", prompts[-1], f"Service {n} listens on port {8000 + n}.")
        call(db, "SessionEnd", project, f"p{n}")
    archive = open_database(str(db))
    try:
        written = archive.scalar("SELECT count(*) FROM checkpoints")
    finally:
        archive.close()
    answer = call(db, "SessionStart", project, "next", source="startup")
    context = json.loads(answer)["hookSpecificOutput"]["additionalContext"] if answer.strip() else ""
    shown = sum(prompt in context for prompt in prompts)
    first = kind != "interactive" or prompts[0] in context
    return (
        f"{kind}: {written} checkpoints; the next SessionStart ({len(context):,} characters) shows {shown} of"
        f" {len(prompts)} prompts" + ("" if kind == "headless" else f"; the session's first request: {first}")
    )


if __name__ == "__main__":
    for kind in ("headless", "interactive"):
        print(run(kind))
