"""Running the real host CLIs headless against the stand-in model, in a throwaway home of their own.

A `World` is one host's sandbox: a HOME (with CODEX_HOME and the XDG folders inside it), a project
folder that is a git repository, an archive path (MEMLIKEHUMAN_DB), and a stand-in model server.
`World.install()` runs our own `memlikehuman install HOST` with that HOME; `World.run(prompt, script)`
runs one headless CLI session (one CLI process at a time) and returns what it printed and every
request the model got. What each host needs beyond our install is in its `Host` class: the user's own
setup (a model provider, an auth type: what any user of that CLI has) and its WORKAROUNDS, the steps
our docs do not tell a user and that the host needed anyway (product defects, each with its reason:
drop one to check its fix).

The CLIs come from `.ci/hosts/node_modules/.bin` (`.ci/run` installs them at pinned versions) or
from $MEMLIKEHUMAN_TEST_HOSTS_BIN; a missing CLI skips the test outside CI and fails it in CI.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memlikehuman.hosts import warm

from .standin import Request, Script, StandIn, main_requests

ROOT = Path(__file__).resolve().parents[2]
BIN_ENV = "MEMLIKEHUMAN_TEST_HOSTS_BIN"
DEFAULT_BIN = ROOT / ".ci" / "hosts" / "node_modules" / ".bin"
PINNED = {
    "claude": "@anthropic-ai/claude-code@2.1.197",
    "gemini": "@google/gemini-cli@0.61.0",
    "codex": "@openai/codex@0.171.0",
}
RUN_TIMEOUT = 150  # seconds for one headless session (a cold start of the CLI and of `memlikehuman serve`)
LINGER = 15  # seconds the CLI's own children (MCP server, hooks) may take to end after the CLI exits
# Every run, for the terminal summary (conftest.py): host, prompt, seconds, whether the first request had our tools.
FIGURES: list[dict[str, Any]] = []


def hosts_bin() -> Path:
    return Path(os.environ.get(BIN_ENV) or DEFAULT_BIN)


def cli(name: str) -> str:
    """The CLI's path; skip without it (fail in CI, where .ci/run installs it)."""
    path = hosts_bin() / name
    if path.exists() and os.access(path, os.X_OK) and shutil.which("node"):
        return str(path)
    message = (
        f"{name} is not installed in {hosts_bin()} (or Node.js is missing): run `npm install --no-save --no-audit"
        f" --no-fund --prefix .ci/hosts {' '.join(PINNED.values())}` or set ${BIN_ENV}"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def memlikehuman() -> str:
    """Our console script in the test's own environment (the one `install` writes into the hosts' configs)."""
    script = Path(sys.executable).with_name("memlikehuman")
    if not script.exists():
        pytest.fail(f"{script} is missing: install the package into this environment (scripts/test does)")
    return str(script)


# -- one headless session ------------------------------------------------------------------------


@dataclass
class Run:
    """One headless CLI session: its exit, its output, the model requests it made."""

    host: str
    prompt: str
    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    requests: list[Request]
    session_id: str | None = None
    debug_log: Path | None = None  # Claude Code's --debug file
    script_errors: list[str] = field(default_factory=list)
    started: float = 0.0  # time.monotonic() when the CLI was spawned

    def main(self) -> list[Request]:
        """The conversation's own requests (with the host's tools), oldest first."""
        return main_requests(self.requests)

    def first(self) -> Request:
        found = self.main()
        assert found, f"{self.host}: the model got no conversation request\n{self.describe()}"
        return found[0]

    def after(self, tool: str, nth: int = 1) -> Request:
        """The first request that carries the result of our `tool`'s nth call."""
        for request in self.main():
            if sum(1 for r in request.results() if r.tool == tool) >= nth:
                return request
        raise AssertionError(f"{self.host}: no request carried a result of {tool} (call {nth})\n{self.describe()}")

    def describe(self) -> str:
        """What happened, for failure messages: exit, output tails, each request's summary."""
        lines = [f"$ {' '.join(self.command)}", f"exit {self.returncode} after {self.seconds:.1f} s"]
        lines += [f"stdout: {_brief(self.stdout)}", f"stderr: {self.stderr[-1500:]}"]
        lines += [
            f"request {i}: {json.dumps(r.summary(), ensure_ascii=False)[:1200]}" for i, r in enumerate(self.main())
        ]
        lines += [f"script error: {e}" for e in self.script_errors]
        return "\n".join(lines)


def _brief(stdout: str) -> str:
    """The CLI's output without its statistics (Gemini CLI prints a long `stats` object)."""
    try:
        value = json.loads(stdout)
    except ValueError:
        return stdout[-1500:]
    if isinstance(value, dict):
        keys = ("session_id", "is_error", "result", "response", "error", "subtype")
        return json.dumps({k: value[k] for k in keys if k in value}, ensure_ascii=False)[:1500]
    return stdout[-1500:]


# -- the hosts -----------------------------------------------------------------------------------


class Host:
    name = ""  # what `memlikehuman install` calls it (and the hooks' source)
    binary = ""
    # Steps beyond `memlikehuman install HOST` and docs/hosts.md that the host needed to work at all.
    WORKAROUNDS: tuple[str, ...] = ()

    def env(self, world: World) -> dict[str, str]:
        return {}

    def prepare(self, world: World) -> None:
        """The user's own setup of the CLI before our install (what any user of it has)."""

    def command(self, world: World, prompt: str, resume: str | None) -> list[str]:
        raise NotImplementedError

    def session_of(self, stdout: str) -> str | None:
        raise NotImplementedError

    def config_files(self, world: World) -> list[Path]:
        """The files `memlikehuman install` edits (user level)."""
        raise NotImplementedError

    def config_warnings(self, run: Run) -> list[str]:
        """What the CLI said against the config our install wrote."""
        return []


class ClaudeCode(Host):
    name = "claude-code"
    binary = "claude"

    def env(self, world: World) -> dict[str, str]:
        return {
            "ANTHROPIC_BASE_URL": world.model.url,
            "ANTHROPIC_API_KEY": "dummy",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }

    def command(self, world: World, prompt: str, resume: str | None) -> list[str]:
        # install allows the tools that delete nothing (permissions.allow); memory_forget, which session 3
        # calls, keeps asking, and `-p` has nobody to ask: the user allows it for the run.
        more = ["--resume", resume] if resume else []
        return [cli(self.binary), "-p", prompt, "--output-format", "json",
                "--allowedTools", "mcp__memlikehuman__memory_forget", "--debug", *more]  # fmt: skip

    def session_of(self, stdout: str) -> str | None:
        return _json_field(stdout, "session_id")

    def config_files(self, world: World) -> list[Path]:
        return [world.home / ".claude.json", world.home / ".claude" / "settings.json"]


class Gemini(Host):
    name = "gemini"
    binary = "gemini"
    # With GOOGLE_GEMINI_BASE_URL set and no auth type in the settings, 0.61.0 picks auth type
    # "gateway" and refuses it ("Invalid auth method selected.", exit 41); a user who set up an API key
    # has this in ~/.gemini/settings.json (the CLI's own setup, not ours).
    USER_SETTINGS = '{\n  "security": {\n    "auth": {\n      "selectedType": "gemini-api-key"\n    }\n  }\n}\n'

    def env(self, world: World) -> dict[str, str]:
        return {"GOOGLE_GEMINI_BASE_URL": world.model.url, "GEMINI_API_KEY": "dummy"}

    def prepare(self, world: World) -> None:
        settings = world.home / ".gemini" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(self.USER_SETTINGS, encoding="utf-8")

    def command(self, world: World, prompt: str, resume: str | None) -> list[str]:
        more = ["--resume", "latest"] if resume else []
        return [cli(self.binary), "-p", prompt, "--output-format", "json", "--skip-trust", "--approval-mode", "yolo",
                *more]  # fmt: skip

    def session_of(self, stdout: str) -> str | None:
        return _json_field(stdout, "session_id")

    def config_files(self, world: World) -> list[Path]:
        return [world.home / ".gemini" / "settings.json"]


class Codex(Host):
    name = "codex"
    binary = "codex"
    # Nothing beyond `memlikehuman install codex`: it trusts our hooks (Codex runs no untrusted hook and
    # `exec` says nothing), approves our tools (`exec` cannot ask) and gives MCP servers time to start.

    def env(self, world: World) -> dict[str, str]:
        return {"STUB_API_KEY": "dummy"}

    def prepare(self, world: World) -> None:
        config = world.home / ".codex" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            "# my own Codex settings\n"
            'model = "stub-model"\n'
            'model_provider = "stub"\n'
            "\n"
            "[model_providers.stub]\n"
            'name = "stub"\n'
            f'base_url = "{world.model.url}/v1"\n'
            'env_key = "STUB_API_KEY"\n'
            'wire_api = "responses"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n",
            encoding="utf-8",
        )

    def command(self, world: World, prompt: str, resume: str | None) -> list[str]:
        start = [cli(self.binary), "exec", "--json", "--skip-git-repo-check"]
        return [*start, "resume", resume, prompt] if resume else [*start, prompt]

    def session_of(self, stdout: str) -> str | None:
        for line in stdout.splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict) and item.get("type") == "thread.started":
                return str(item.get("thread_id"))
        return None

    def config_files(self, world: World) -> list[Path]:
        return [world.home / ".codex" / "config.toml", world.home / ".codex" / "hooks.json"]

    def config_warnings(self, run: Run) -> list[str]:
        """`exec --json` error items about the config (e.g. a deprecated feature key)."""
        found = []
        for line in run.stdout.splitlines():
            try:
                item = json.loads(line).get("item") or {}
            except (ValueError, AttributeError):
                continue
            message = str(item.get("message", "")) if item.get("type") == "error" else ""
            if any(word in message for word in ("codex_hooks", "memlikehuman", "mcp_servers", "[features]")):
                found.append(message)
        return found


HOSTS: dict[str, Host] = {h.name: h for h in (ClaudeCode(), Gemini(), Codex())}


def _json_field(stdout: str, key: str) -> str | None:
    try:
        value = json.loads(stdout)
    except ValueError:
        match = re.search(r'"' + key + r'"\s*:\s*"([^"]+)"', stdout)
        return match.group(1) if match else None
    return str(value.get(key)) if isinstance(value, dict) and value.get(key) else None


# -- the archive, as `memlikehuman export` shows it ----------------------------------------------


@dataclass
class Archive:
    events: list[dict[str, Any]]
    memories: list[dict[str, Any]]
    checkpoints: list[dict[str, Any]]

    def event(self, event_id: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e["event_id"] == event_id), None)

    def user_events(self, session_id: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events if e["role"] == "user" and session_id in (None, e["session_id"])]

    def texts(self) -> str:
        """Every text the archive holds (events, memories, checkpoint states), for "is it gone" checks."""
        parts = [e["text"] for e in self.events] + [m["content"] + "\n" + m["quote"] for m in self.memories]
        parts += [json.dumps(c.get("state"), ensure_ascii=False) for c in self.checkpoints]
        return "\n".join(parts)

    def describe(self) -> str:
        rows = [f"event {e['event_id']} [{e['role']}/{e['source']}] {e['text'][:200]!r}" for e in self.events]
        rows += [f"memory {m['memory_id']} of {m['event_id']}: {m['content'][:120]!r}" for m in self.memories]
        rows += [f"checkpoint {c['checkpoint_id']} covers {c['covered_event_id']}" for c in self.checkpoints]
        return "\n".join(rows) or "(empty archive)"


# -- a world -------------------------------------------------------------------------------------


class World:
    """One host's throwaway home, project, archive and stand-in model."""

    def __init__(self, host: Host, root: Path, log: str = "requests.jsonl") -> None:
        self.host = host
        self.root = root
        self.home = root / "home"
        self.project = root / "project"
        self.db = root / "data" / "memory.sqlite3"
        self.model = StandIn(Script(), root / log)
        self.runs: list[Run] = []

    def start(self) -> World:
        for folder in (self.home, self.project, self.db.parent, self.root / "run"):
            folder.mkdir(parents=True, exist_ok=True)
        (self.root / "run").chmod(0o700)
        subprocess.run(["git", "init", "-q", str(self.project)], check=True, env=self.env())
        self.model.__enter__()
        self.host.prepare(self)
        return self

    def stop(self) -> None:
        """Stop the stand-in and the warm processes our hooks and servers started in this home."""
        self.model.__exit__(None, None, None)
        for directory in self.runtime_dirs():
            warm.stop(directory)

    def runtime_dirs(self) -> list[Path]:
        """Where a warm process of this world keeps its lock: its runtime directory, and the cache's (Codex
        starts MCP servers without XDG_RUNTIME_DIR)."""
        return [self.root / "run" / "memlikehuman", self.home / ".cache" / "memlikehuman" / "run"]

    def env(self) -> dict[str, str]:
        """A clean environment: nothing of the developer's (no MEMLIKEHUMAN_*, no CI, no API keys)."""
        home = self.home
        base = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(home),
            "USER": os.environ.get("USER", "tester"),
            "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_RUNTIME_DIR": str(self.root / "run"),
            "CODEX_HOME": str(home / ".codex"),
            "MEMLIKEHUMAN_DB": str(self.db),
            "NO_COLOR": "1",
        }
        return {**base, **self.host.env(self)}

    # ---- our CLI ----

    def mlh(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`memlikehuman ARGS` with this world's HOME and archive."""
        done = subprocess.run(
            [memlikehuman(), *args], env=self.env(), cwd=self.project, capture_output=True, text=True, timeout=120
        )
        if check:
            assert done.returncode == 0, (
                f"memlikehuman {' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
            )
        return done

    def install(self) -> subprocess.CompletedProcess[str]:
        return self.mlh("install", self.host.name)

    def uninstall(self) -> subprocess.CompletedProcess[str]:
        return self.mlh("uninstall", self.host.name)

    def archive(self) -> Archive:
        """Everything in the archive now (`memlikehuman export`)."""
        if not self.db.exists():
            return Archive([], [], [])
        lines = [json.loads(line) for line in self.mlh("export", "--all").stdout.splitlines() if line.strip()]
        pick = lambda kind: [line for line in lines if line.get("type") == kind]  # noqa: E731
        return Archive(pick("event"), pick("memory"), pick("checkpoint"))

    # ---- the host's CLI ----

    def run(self, prompt: str, script: Script, resume: str | None = None) -> Run:
        """One headless session (or a resumed one) answered by `script`; waits for the CLI's children to end."""
        self.model.script = script
        mark = self.model.mark()
        errors_before = len(self.model.errors)
        command = self.host.command(self, prompt, resume)
        started = time.monotonic()
        with subprocess.Popen(
            command,
            env=self.env(),
            cwd=self.project,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: a timeout ends the CLI and what it started
        ) as process:
            try:
                stdout, stderr = process.communicate(timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                _end_group(process.pid, at_once=True)
                stdout, stderr = process.communicate()
                stderr += f"\n[test harness: killed after {RUN_TIMEOUT} s]"
            seconds = time.monotonic() - started
            _end_group(process.pid)
        run = Run(
            host=self.host.name,
            prompt=prompt,
            command=[Path(command[0]).name, *command[1:]],
            returncode=process.returncode,
            stdout=stdout,
            stderr=stderr,
            seconds=seconds,
            requests=self.model.since(mark),
            session_id=self.host.session_of(stdout),
            script_errors=self.model.errors[errors_before:],
            started=started,
        )
        if isinstance(self.host, ClaudeCode) and run.session_id:
            log = self.home / ".claude" / "debug" / f"{run.session_id}.txt"
            run.debug_log = log if log.exists() else None
        self.runs.append(run)
        main = run.main()
        FIGURES.append(
            {
                "host": self.host.name,
                "prompt": prompt[:40],
                "seconds": round(seconds, 1),
                "exit": process.returncode,
                "first request had our tools": bool(main and main[0].our_tools()),
                **({"MCP connect ms": claude_connect_ms(run)} if run.debug_log else {}),
            }
        )
        return run

    def expect_ok(self, run: Run) -> Run:
        """The run ended normally and the script had no bug (the harness's own checks)."""
        assert not run.script_errors, f"stand-in script failed:\n{run.describe()}"
        assert run.returncode == 0, f"{self.host.name} failed:\n{run.describe()}"
        assert run.session_id, f"{self.host.name} printed no session ID:\n{run.describe()}"
        return run


def _end_group(pgid: int, at_once: bool = False) -> None:
    """Wait for the process group we started to end (the CLI's MCP server, a last hook), then end what is left."""
    deadline = time.monotonic() + (0 if at_once else LINGER)
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        time.sleep(1)


@contextmanager
def world(host: str, root: Path) -> Iterator[World]:
    cli(HOSTS[host].binary)  # skip (or fail in CI) before anything starts
    opened = World(HOSTS[host], root)
    try:
        yield opened.start()
    finally:
        opened.stop()


# -- Claude Code's debug log ---------------------------------------------------------------------


def claude_connect_ms(run: Run) -> int | None:
    """How long Claude Code says `memlikehuman serve` took from spawn to an answered `initialize`."""
    if run.debug_log is None:
        return None
    # A resumed session appends to the same file: its last connection is this run's.
    text = run.debug_log.read_text(encoding="utf-8", errors="replace")
    found = re.findall(r'MCP server "memlikehuman": Successfully connected \(transport: stdio\) in (\d+)ms', text)
    return int(found[-1]) if found else None


def debug_lines(run: Run, *words: str) -> str:
    """The lines of Claude Code's debug log holding any of the words (evidence for failure messages)."""
    if run.debug_log is None:
        return ""
    text = run.debug_log.read_text(encoding="utf-8", errors="replace")
    return "\n".join(line[:600] for line in text.splitlines() if any(w in line for w in words))
