"""The extractor that runs a command: the host's own CLI in headless mode, or any program.

``MEMLIKEHUMAN_EXTRACTOR=command`` with ``MEMLIKEHUMAN_EXTRACTOR_COMMAND``: a command line (split as a
POSIX shell would, but run without one) or the name of a preset (``PRESETS``: the headless commands
of Claude Code 2.1.197, Codex 0.171.0 and Gemini CLI 0.61.0, their flags and envelopes read from
their npm packages and run against a local endpoint; docs/hosts.md). The prompt goes to the
command's standard input (Claude Code takes the system message as ``--system-prompt``), the reply
is read from its standard output, and the JSON envelope the CLI wraps it in is taken off
(``reply_text``); extract.parse_answer then strips code fences. One run is bounded by
``MEMLIKEHUMAN_TIMEOUT`` and by caps on its output, read as it comes (providers/run.py): past either,
the whole process tree the command started is killed.

What a run gets: an empty working directory of its own (no project files, CLAUDE.md or workspace
settings of the project are read) and an environment made from an allow-list, not from everything
this server was given: the basics every program needs (``PASSED``: PATH, HOME, LANG, proxies, ...),
what the preset's CLI reads (``Preset.passes``: its own key, base URL and config directory), the
names the user lists in ``MEMLIKEHUMAN_EXTRACTOR_ENV``, and ``MEMLIKEHUMAN_EXTRACTING=1``: every
``memlikehuman`` that the CLI might start (its hooks, or our MCP server where a preset could not keep
MCP servers off) records nothing and extracts nothing, so the extraction prompt is never recorded
as the user's and no run starts another. Anything else (a GITHUB_TOKEN, cloud keys, the archive's
DATABASE_URL) stays with this process.

Errors: a command that cannot be started raises ``Unavailable`` (pending until the configuration is
fixed); a timeout, a non-zero exit or an envelope that says it failed raise ``Transient`` (the
worker retries a few times with a backoff); any other output is returned for the caller to judge.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument, Transient, Unavailable
from ..text import nesting
from . import run
from .base import Extractor


@dataclass(frozen=True)
class Preset:
    argv: tuple[str, ...]
    system_flag: str | None = None  # the flag that takes the system message; None: it goes on stdin
    env: tuple[tuple[str, str], ...] = ()
    # what a run leaves under HOME that holds the prompt, removed after it ({dir}: the run's directory name)
    leaves: tuple[str, ...] = ()
    # environment variables the CLI reads, passed on besides PASSED (a name ending in "_" is a prefix)
    passes: tuple[str, ...] = ()


PRESETS: dict[str, Preset] = {
    # --safe-mode: no hooks, MCP servers, CLAUDE.md, skills or plugins, while the user's login works
    # (--bare would read ANTHROPIC_API_KEY only); --tools "": no tool at all; nothing saved. Exit 1
    # when the envelope says is_error. An API error is retried 9 times by default: once is enough here.
    # --name: a session with a name gets no second request for a title (which would send the prompt again).
    "claude-code": Preset(
        (
            "claude",
            "-p",
            "--output-format",
            "json",
            "--safe-mode",
            "--tools",
            "",
            "--no-session-persistence",
            "--name",
            "memlikehuman-extract",
        ),
        system_flag="--system-prompt",
        env=(("CLAUDE_CODE_MAX_RETRIES", "1"),),
        passes=(
            "ANTHROPIC_",
            "CLAUDE_CONFIG_DIR",
            "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CODE_USE_VERTEX",
            "DISABLE_TELEMETRY",
            "DISABLE_ERROR_REPORTING",
            "DISABLE_AUTOUPDATER",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        ),
    ),  # fmt: skip
    # --ignore-user-config: no MCP servers of ~/.codex/config.toml (the login in CODEX_HOME stays; so
    # does the default model: -m MODEL in a command line of your own picks one); --disable hooks: no
    # hooks.json; --ephemeral: no session files; stdout: JSON Lines of events.
    "codex": Preset(
        (
            "codex",
            "exec",
            "--json",
            "--ephemeral",
            "--ignore-user-config",
            "--disable",
            "hooks",
            "--skip-git-repo-check",
            "--sandbox",
            "read-only",
            "-",
        ),
        passes=("CODEX_",),
    ),  # fmt: skip
    # -p "": headless, the prompt being stdin; no extensions; an allow-list that names no MCP server;
    # --skip-trust: the empty working directory needs no trust prompt. Gemini has no flag against its
    # hooks: MEMLIKEHUMAN_EXTRACTING keeps ours quiet. It saves every chat (the whole prompt) under
    # ~/.gemini/tmp/<directory name>, with no setting against it: removed after the run.
    "gemini": Preset(
        (
            "gemini",
            "-p",
            "",
            "--output-format",
            "json",
            "--extensions",
            "none",
            "--allowed-mcp-server-names",
            "__none__",
            "--approval-mode",
            "plan",
            "--skip-trust",
        ),
        leaves=(".gemini/tmp/{dir}", ".gemini/history/{dir}"),
        passes=("GEMINI_", "GOOGLE_"),
    ),  # fmt: skip
}
EXTRACTING = "MEMLIKEHUMAN_EXTRACTING"
# What every run gets (a name ending in "_" is a prefix): where programs and home are, the locale, the
# terminal, the user's directories, proxies and certificates; no key, token or URL with a password.
# The locale variables by exact name: any other LC_ name could carry anything into the CLI.
LOCALE = (
    "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "LC_COLLATE", "LC_NUMERIC", "LC_TIME", "LC_MONETARY",
    "LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT", "LC_IDENTIFICATION",
)  # fmt: skip
PASSED = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", *LOCALE, "TZ", "TMPDIR", "TERM",
    "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
)  # fmt: skip


def parse_command(value: str | None) -> tuple[Preset, str]:
    """(preset, label) of MEMLIKEHUMAN_EXTRACTOR_COMMAND; InvalidArgument when it is missing or empty."""
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
    if not argv:
        raise InvalidArgument("MEMLIKEHUMAN_EXTRACTOR_COMMAND names no program")
    return Preset(argv), os.path.basename(argv[0])


def child_environment(
    env: Mapping[str, str], preset: Preset = Preset(("",)), named: tuple[str, ...] = ()
) -> dict[str, str]:
    """The command's environment: of `env`, only what PASSED, the preset's `passes` and the user's
    `named` list allow (MEMLIKEHUMAN_EXTRACTOR_ENV), then the preset's own values and the guard."""
    allowed = (*PASSED, *preset.passes, *named)
    kept = {k: v for k, v in env.items() if any(k == a or (a.endswith("_") and k.startswith(a)) for a in allowed)}
    return {**kept, **dict(preset.env), EXTRACTING: "1"}


class CommandExtractor(Extractor):
    """Runs ``argv`` once per prompt: the prompt on stdin, the reply on stdout."""

    needs_network = False  # the command may use one; this process opens no connection

    def __init__(
        self, preset: Preset, label: str, timeout: float, env: Mapping[str, str], named: tuple[str, ...] = ()
    ) -> None:
        self.preset, self.timeout = preset, timeout
        self.env = child_environment(env, preset, named)
        self._running: set[subprocess.Popen[bytes]] = set()  # killed by close()
        self.model_id = f"command:{shlex.join(preset.argv)}"
        self.label = f"command:{label}"

    def complete(self, system: str, user: str, schema: dict[str, Any]) -> str:
        """Run the command with the prompt; return its reply without the CLI's envelope."""
        argv, name = self.preset.argv, self.preset.argv[0]
        if self.preset.system_flag:
            argv, prompt = (*argv, self.preset.system_flag, system), user
        else:
            prompt = f"{system}\n\n{user}\n"
        with tempfile.TemporaryDirectory(prefix="memlikehuman-extract-") as where:
            try:
                return self._run(argv, name, prompt, where)
            finally:
                self._clean(os.path.basename(where))

    def close(self) -> None:
        """Kill the runs still going (the server stops): the CLI would go on, and cost, without us."""
        for process in list(self._running):
            run.kill(process)

    def _clean(self, run_dir: str) -> None:
        home = self.env.get("HOME")
        if home is None:
            return
        for template in self.preset.leaves:
            shutil.rmtree(os.path.join(home, template.format(dir=run_dir)), ignore_errors=True)

    def _run(self, argv: tuple[str, ...], name: str, prompt: str, where: str) -> str:
        if shutil.which(name, path=self.env.get("PATH")) is None:
            raise Unavailable(
                f"the extraction command {name!r} cannot be started (not found on PATH):"
                " install it or fix MEMLIKEHUMAN_EXTRACTOR_COMMAND"
            )
        try:
            process = run.start(argv, self.env, where)
        except OSError as exc:
            raise Unavailable(
                f"the extraction command {name!r} cannot be started ({exc.strerror or exc}):"
                " install it or fix MEMLIKEHUMAN_EXTRACTOR_COMMAND"
            ) from None
        self._running.add(process)
        try:
            done = run.exchange(process, prompt.encode("utf-8"), self.timeout)
        except subprocess.TimeoutExpired:
            raise Transient(
                f"the extraction command {name!r} did not answer within {self.timeout:g} s"
                " (MEMLIKEHUMAN_TIMEOUT): raise the timeout or batch fewer events"
            ) from None
        except run.TooMuchOutput as exc:
            raise Transient(
                f"the extraction command {name!r} printed more than {exc.cap:,} bytes on {exc.stream}: it was"
                " stopped; check MEMLIKEHUMAN_EXTRACTOR_COMMAND (an answer is a few kB)"
            ) from None
        finally:
            self._running.discard(process)
        text = done.stdout.decode("utf-8", "replace")
        if done.returncode != 0:
            raise Transient(f"the extraction command {name!r} exited with {done.returncode}: {_why(text, done.stderr)}")
        return reply_text(text)


def _why(stdout: str, stderr: bytes) -> str:
    """What a failed run said: its envelope's error (on stdout, or at the end of stderr as Gemini CLI
    writes it after a stack trace), else the end of stderr, else stdout."""
    errors = stderr.decode("utf-8", "replace")
    start = errors.rfind("\n{")
    for text in (stdout, errors[start + 1 :] if start >= 0 else errors):
        try:
            reply_text(text)
        except Transient as exc:
            return exc.message.removeprefix("the host CLI reported an error: ")
    lines = [line for line in errors.splitlines() if line.strip()]
    return _short(lines[-1]) if lines else _short(stdout)


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
        whole = nesting.loads(text)
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
    """The last agent message of Codex's events; Transient for a failed turn. Its "error" events and
    error items also report retries that later succeed ("Reconnecting... 1/5"): they count only when no
    message came."""
    reply, errors = None, []
    for line in text.splitlines():
        try:
            event = nesting.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind, item = event.get("type"), event.get("item")
        if kind == "turn.failed":
            error = event.get("error")
            raise Transient(f"the host CLI reported an error: {_short(str(_message(error)))}")
        if kind == "error":
            errors.append(str(event.get("message")))
        if kind == "item.completed" and isinstance(item, dict) and item.get("type") == "agent_message":
            reply = str(item.get("text") or "")
    if reply is None and errors:
        raise Transient(f"the host CLI reported an error: {_short(errors[-1])}")
    return text if reply is None else reply


def _message(error: Any) -> Any:
    return error.get("message") if isinstance(error, dict) else error


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
