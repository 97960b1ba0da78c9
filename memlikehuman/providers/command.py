"""The extractor that runs a command: the host's own CLI in headless mode (issue 29), or any program.

``MEMLIKEHUMAN_EXTRACTOR=command`` with ``MEMLIKEHUMAN_EXTRACTOR_COMMAND``: a command line (split as a
POSIX shell would, but run without one) or the name of a preset (``PRESETS``: the real headless
commands of Claude Code, Codex and Gemini CLI, read from their packages; docs/hosts.md). The prompt
goes to the command's standard input, the reply is read from its standard output, and the JSON
envelope the CLI wraps it in is taken off (``reply_text``); extract.parse_answer then strips code
fences. One run is bounded by ``MEMLIKEHUMAN_TIMEOUT``: past it the command's process group is
killed.

What a run gets: the environment this server was given, less the keys of our own providers
(``MEMLIKEHUMAN_*_API_KEY``, ``OPENAI_API_KEY``: a CLI logs in on its own), plus
``MEMLIKEHUMAN_EXTRACTING=1``, which makes every ``memlikehuman hook`` that the CLI might run record
nothing: the extraction prompt is never recorded as a prompt of the user's.

Errors: a command that cannot be started raises ``Unavailable`` (pending until the configuration is
fixed); a timeout, a non-zero exit or an envelope that says it failed raise ``Transient`` (the
worker retries a few times with a backoff); any other output is returned for the caller to judge.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgument, Transient, Unavailable
from .base import Extractor

# The headless command of each host CLI (versions read: docs/hosts.md, "Extraction by the host's model").
# Each answers one prompt from stdin without tools, MCP servers, hooks or a saved session.
PRESETS: dict[str, tuple[str, ...]] = {
    # --safe-mode: no hooks, MCP servers, CLAUDE.md or plugins, while the user's login still works
    # (--bare would take an ANTHROPIC_API_KEY only); --tools "": no tool at all
    "claude-code": (
        "claude", "-p", "--safe-mode", "--output-format", "json", "--no-session-persistence", "--tools", "",
    ),
    # --ignore-user-config: no MCP servers or hooks of ~/.codex/config.toml (the login stays)
    "codex": (
        "codex", "exec", "--json", "--ephemeral", "--ignore-user-config", "--skip-git-repo-check",
        "--sandbox", "read-only", "-",
    ),
    # -p "": headless, the prompt being stdin; no extensions, and no MCP server is allowed
    "gemini": (
        "gemini", "--output-format", "json", "--extensions", "none", "--allowed-mcp-server-names", "none",
        "--approval-mode", "plan", "-p", "",
    ),
}  # fmt: skip
EXTRACTING = "MEMLIKEHUMAN_EXTRACTING"
_OWN_SECRETS = ("OPENAI_API_KEY",)
MAX_OUTPUT = 4_000_000  # bytes of stdout kept; an extraction answer is a few kB


def parse_command(value: str | None) -> tuple[tuple[str, ...], str]:
    """(argv, label) of MEMLIKEHUMAN_EXTRACTOR_COMMAND; InvalidArgument when it is missing or empty."""
    if value is None or not value.strip():
        names = ", ".join(PRESETS)
        raise InvalidArgument(
            "MEMLIKEHUMAN_EXTRACTOR=command needs MEMLIKEHUMAN_EXTRACTOR_COMMAND: a command line that reads the"
            f" prompt on stdin and prints the reply, or a preset ({names})"
        )
    name = value.strip()
    if name in PRESETS:
        return PRESETS[name], name
    try:
        argv = tuple(shlex.split(name))
    except ValueError as exc:
        raise InvalidArgument(f"MEMLIKEHUMAN_EXTRACTOR_COMMAND cannot be split into words ({exc})") from None
    return argv, os.path.basename(argv[0])


def child_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The command's environment: ours less our providers' keys, with the recording guard set."""
    kept = {
        k: v for k, v in env.items() if k not in _OWN_SECRETS and not (k.startswith("MEMLIKEHUMAN_") and "API_KEY" in k)
    }
    return {**kept, EXTRACTING: "1"}


class CommandExtractor(Extractor):
    """Runs ``argv`` once per prompt: the prompt on stdin, the reply on stdout."""

    needs_network = False  # the command may use one; this process opens no connection

    def __init__(self, argv: tuple[str, ...], label: str, timeout: float, env: Mapping[str, str]) -> None:
        self.argv, self.timeout = argv, timeout
        self.env = child_environment(env)
        self.model_id = f"command:{shlex.join(argv)}"
        self.label = f"command:{label}"

    def complete(self, system: str, user: str, schema: dict[str, Any]) -> str:
        """Run the command with the prompt; return its reply without the CLI's envelope."""
        prompt = f"{system}\n\n{user}\n"
        try:
            process = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                start_new_session=True,  # its own process group: a timeout kills what it started too
            )
        except OSError as exc:
            raise Unavailable(
                f"the extraction command {self.argv[0]!r} cannot be started ({exc.strerror or exc}):"
                " install it or fix MEMLIKEHUMAN_EXTRACTOR_COMMAND"
            ) from None
        try:
            out, err = process.communicate(prompt.encode("utf-8"), timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill(process)
            raise Transient(
                f"the extraction command {self.argv[0]!r} did not answer within {self.timeout:g} s"
                " (MEMLIKEHUMAN_TIMEOUT): raise the timeout or batch fewer events"
            ) from None
        if process.returncode != 0:
            detail = _short(err.decode("utf-8", "replace")) or _short(out.decode("utf-8", "replace"))
            raise Transient(f"the extraction command {self.argv[0]!r} exited with {process.returncode}: {detail}")
        return reply_text(out[:MAX_OUTPUT].decode("utf-8", "replace"))


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.communicate()


def reply_text(stdout: str) -> str:
    """The model's reply inside a CLI's envelope; stdout itself when it is none of them.

    Claude Code (``-p --output-format json``): ``{"type": "result", "is_error": false, "result": ...}``.
    Gemini CLI (``--output-format json``): ``{"response": ..., "stats": {...}}`` or ``{"error": {...}}``.
    Codex (``exec --json``): JSON Lines of events; the reply is the text of the last
    ``item.completed`` event whose item is an ``agent_message``; ``turn.failed``/``error`` events fail.
    Raises Transient when the envelope says the run failed.
    """
    text = stdout.strip()
    try:
        whole = json.loads(text)
    except ValueError:
        return _codex_reply(text) if text.startswith("{") else text
    if not isinstance(whole, dict):
        return text
    if whole.get("type") == "result" and "result" in whole:  # Claude Code
        if whole.get("is_error") or whole.get("subtype") not in (None, "success"):
            raise Transient(
                f"the host CLI reported an error: {_short(str(whole.get('result') or whole.get('subtype')))}"
            )
        return str(whole["result"])
    if "response" in whole or "error" in whole:  # Gemini CLI
        error = whole.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else error
            raise Transient(f"the host CLI reported an error: {_short(str(message))}")
        return str(whole.get("response") or "")
    if "type" in whole:  # one Codex event alone
        return _codex_reply(text)
    return text


def _codex_reply(text: str) -> str:
    reply = None
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind in ("turn.failed", "error"):
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else event.get("message")
            raise Transient(f"the host CLI reported an error: {_short(str(message))}")
        item = event.get("item")
        if kind == "item.completed" and isinstance(item, dict) and item.get("type") == "agent_message":
            reply = str(item.get("text") or "")
    return text if reply is None else reply


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
