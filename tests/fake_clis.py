"""Small programs on PATH that stand in for the host CLIs run headless: each prints its CLI's real envelope.

The envelopes are those the CLIs print (read from their npm packages; docs/hosts.md, "Memories made
by the host's model"). The "model" inside remembers each event's first sentence, quoting it exactly.
Each run appends its argv, and the environment variables the tests look at, to `runs.jsonl`.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

BODY = r"""
import json, os, re, sys, time
prompt = sys.stdin.read()
with open(os.path.join(os.path.dirname(__file__), "runs.jsonl"), "a") as log:
    names = ("MEMLIKEHUMAN_EXTRACTING", "OPENAI_API_KEY", "MEMLIKEHUMAN_EXTRACTOR_API_KEY", "MEMLIKEHUMAN_DB",
             "PGPASSWORD", "CLAUDECODE", "KEPT_VARIABLE", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DATABASE_URL",
             "ANTHROPIC_API_KEY", "AWS_REGION", "LC_ALL", "LC_TIME", "LC_SECRET_TOKEN")
    seen = {k: os.environ.get(k) for k in names}
    record = {"argv": sys.argv[1:], "env": seen, "prompt_chars": len(prompt), "pid": os.getpid(), "cwd": os.getcwd()}
    log.write(json.dumps(record) + "\n")
time.sleep(float(os.environ.get("FAKE_CLI_SLEEP", "0")))
blocks = re.findall(r"<<<BEGIN DATA (\w+) EVENT[^>]*>>>\n[^\n]*\n(.*?)\n<<<END DATA \1>>>", prompt, re.S)
items = []
for number, (_, text) in enumerate(blocks, start=1):
    first = re.split(r"(?<=[.!?])\s", text.strip())[0]
    items.append({"content": "The user said: " + first, "quote": first, "kind": "fact", "basis": "stated",
                  "subject": None, "valid_from": None, "gist": None, "event": number})
reply = "```json\n" + json.dumps({"memories": items}) + "\n```"
"""

ENVELOPES = {
    # claude -p --output-format json (the fields of Claude Code 2.1.197's envelope)
    "claude": r"""
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
                  "duration_ms": 1598, "duration_api_ms": 1529, "num_turns": 1, "result": reply,
                  "stop_reason": "end_turn", "session_id": "bbdc655b-8433-424b-9484-18fe7c7659df",
                  "total_cost_usd": 0.00026, "usage": {"input_tokens": 1200, "output_tokens": 80},
                  "permission_denials": [], "terminal_reason": "completed"}))
""",
    # codex exec --json: JSON Lines of events (seen from codex-cli 0.171.0 against a local endpoint),
    # with the warning item and the retry event it prints before a turn that succeeds
    "codex": r"""
for event in ({"type": "thread.started", "thread_id": "01a23a98-18cd-7e82-85cc-d9bb46a2c2b5"},
              {"type": "item.completed", "item": {"id": "item_0", "type": "error",
               "message": "Model metadata for `gpt-x` not found. Defaulting to fallback metadata"}},
              {"type": "turn.started"},
              {"type": "error", "message": "Reconnecting... 1/5 (stream disconnected before completion)"},
              {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": reply}},
              {"type": "turn.completed", "usage": {"input_tokens": 1200, "output_tokens": 80}}):
    print(json.dumps(event))
""",
    # gemini --output-format json; like Gemini CLI 0.61.0 it saves the chat under ~/.gemini/tmp/<cwd name>
    "gemini": r"""
chats = os.path.join(os.environ["HOME"], ".gemini", "tmp", os.path.basename(os.getcwd()), "chats")
os.makedirs(chats, exist_ok=True)
with open(os.path.join(chats, "session-1.jsonl"), "w") as saved:
    saved.write(json.dumps({"prompt": prompt}))
print(json.dumps({"session_id": "5b1f6c3e", "response": reply,
                  "stats": {"models": {"gemini-2.5-pro": {"tokens": {"prompt": 1200, "candidates": 80}}},
                            "tools": {"totalCalls": 0}}}, indent=2))
""",
}
FAILURES = {
    "garbage": 'print("I could not do that, sorry.")',
    "exit": 'sys.stderr.write("Error: not logged in. Run claude /login\\n"); sys.exit(1)',
    "claude-error": r"""print(json.dumps({"type": "result", "subtype": "success", "is_error": True,
    "api_error_status": 401, "result": "Invalid API key \u00b7 Fix external API key", "session_id": "x",
    "total_cost_usd": 0})); sys.exit(1)""",
    "codex-error": r"""
for event in ({"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
              {"type": "error", "message": "Reconnecting... 5/5 (unexpected status 401 Unauthorized)"},
              {"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized: Incorrect API key"}}):
    print(json.dumps(event))
sys.exit(1)""",
    # Gemini CLI writes its error to stderr after a stack trace; stdout stays empty
    "gemini-error": r"""sys.stderr.write("Error: auth\n    at handleError (gemini.js:1:1)\n")
sys.stderr.write(json.dumps({"session_id": "45b9d917", "error": {"type": "FatalAuthenticationError",
    "message": "Please set an Auth method", "code": 41}}, indent=2) + "\n"); sys.exit(41)""",
    # a Claude Code envelope whose result is nested 2,000 deep (json raises RecursionError on it)
    "deep": r"""print('{"type": "result", "subtype": "success", "is_error": false, "result": ' + "[" * 2000
      + "]" * 2000 + "}")""",
    "hang": "time.sleep(3600)",
    # prints far more than any answer, on stdout or stderr, in 1 MB writes
    "flood": 'block = b"x" * 2**20\nfor _ in range(300): sys.stdout.buffer.write(block)',
    "flood-stderr": 'block = b"x" * 2**20\nfor _ in range(300): sys.stderr.buffer.write(block)',
    # leaves a grandchild in a session of its own (out of the process group), noted in grandchild.pid, then hangs
    "escape": r"""import subprocess
code = "import os, time; os.setsid(); time.sleep(600)"
child = subprocess.Popen([sys.executable, "-c", code])
with open(os.path.join(os.path.dirname(__file__), "grandchild.pid"), "w") as note:
    note.write(str(child.pid))
time.sleep(3600)""",
}


def install(folder: Path, name: str, tail: str, python: str) -> Path:
    """Write an executable `name` into `folder` that runs BODY then `tail`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!{python}\n{BODY}\n{tail}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def runs(folder: Path) -> list[dict]:
    log = folder / "runs.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
