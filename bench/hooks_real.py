"""What the real `claude -p` waits for, without memlikehuman, at a baseline revision and now: launch to the
first model request, `serve` up to `initialize`, each hook, the prompt hook's search, what we add to a request.

Run: python -m bench.hooks_real [--runs 10] [--baseline 598ea20]
Writes the "hooks-real" section of docs/benchmarks.md. Needs Claude Code 2.1.197 under .ci/hosts (as
`.ci/run` installs it) and Node.js.

Each variant runs `claude -p` headless against the stand-in model of tests/hosts_real (a scripted
server on 127.0.0.1 that notes when each request arrives), in a home, project and archive of its own:
no memlikehuman at all; --baseline's revision and this checkout, each built into a wheel and
pip-installed into a scratch venv (bench/installed.py) and wired by its own `install claude-code`.
Every installed hook command is wrapped by a timer (a small Python program that runs it and notes its
event and wall time), so a hook's figure is what Claude Code waits for, process start included; the
timer's own start (about 15 ms a hook) counts in the installed variants' launch. Each variant is told
the four FACTS once, then asked one of the ASKS per round; the rounds interleave the variants (the
order turns each round), so a load spike on this shared machine hits all of them alike.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.installed import both_installed  # noqa: E402
from bench.report import percentile, table, write_section  # noqa: E402
from memlikehuman.hosts import warm  # noqa: E402
from tests.hosts_real.standin import Request, Rule, Script, Text  # noqa: E402
from tests.hosts_real.support import ClaudeCode, World, claude_connect_ms, hosts_bin  # noqa: E402

TIMER = """import json, subprocess, sys, time
started = time.monotonic()
data = sys.stdin.buffer.read()
try:
    event = json.loads(data).get("hook_event_name", "?")
except ValueError:
    event = "?"
done = subprocess.run(sys.argv[2:], input=data)
ended = time.monotonic()
with open(sys.argv[1], "a") as log:
    log.write(json.dumps({"event": event, "start": started, "end": ended, "ms": (ended - started) * 1000}) + "\\n")
sys.exit(done.returncode)
"""
FACTS = (
    "I always use pnpm, never npm, in this repo.",
    "Our staging server is staging.example.internal:8443.",
    "Please always run ruff before committing.",
    "The invoices are numbered per year, starting at 1 each January.",
)
ASKS = (
    "which package manager do we use here?",
    "where does the staging server run?",
    "what do I run before a commit?",
    "how are invoices numbered?",
)
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
VECTOR_WAIT = 120.0  # seconds the archives get, after the last call, to have every event embedded


def available() -> bool:
    """Whether Claude Code is installed where the real-host suite finds it (and Node.js runs it)."""
    return (hosts_bin() / "claude").exists()


@dataclass
class Variant:
    """One way to run `claude -p`: without memlikehuman (script None) or wired by that console script's install."""

    label: str
    script: str | None
    world: World | None = None
    log: Path | None = None
    settings: tuple[str, str] | None = None  # Claude Code's settings as installed, and with the hooks timed
    samples: list[dict[str, Any]] = field(default_factory=list)


def _timed_settings(world: World, log: Path) -> str:
    """Claude Code's settings with every installed hook command run through the timer (the text to write)."""
    settings = json.loads((world.home / ".claude" / "settings.json").read_text())
    timer = world.root / "timer.py"
    timer.write_text(TIMER)
    for groups in settings["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                hook["command"] = f"{sys.executable} -I -S {timer} {log} {hook['command']}"
    return json.dumps(settings, indent=2)


def _prepared(variant: Variant, root: Path) -> Variant:
    world = World(ClaudeCode(), root).start()
    variant.world, variant.log = world, root / "hooks.jsonl"
    if variant.script is not None:
        install = [variant.script, "install", "claude-code"]
        subprocess.run(install, env=world.env(), cwd=world.project, check=True, capture_output=True)
        path = world.home / ".claude" / "settings.json"
        variant.settings = (path.read_text(), _timed_settings(world, variant.log))
    return variant


def _sample(variant: Variant, prompt: str, timed: bool) -> dict[str, Any]:
    """One `claude -p` call: launch to first model request, MCP connect, the search used; each hook's wall
    time when `timed` (the timer's own start then counts in the launch: those launches are not reported)."""
    assert variant.world is not None and variant.log is not None
    if variant.settings:
        (variant.world.home / ".claude" / "settings.json").write_text(variant.settings[timed])
    before = len(_hook_lines(variant.log))
    run = variant.world.run(prompt, Script([Rule("", (Text("Noted."),))]))
    main = run.main()
    first = main[0] if main else None
    hooks = _hook_lines(variant.log)[before:]
    until = first.at if first else float("inf")
    context = " ".join(first.prompt_hook_context()) if first else ""
    return {
        "timed": timed,
        "launch_ms": (first.at - run.started) * 1000 if first else None,
        "connect_ms": claude_connect_ms(run),
        "hooks": {h["event"]: h["ms"] for h in hooks},
        "series_ms": sum(h["ms"] for h in hooks if h["end"] <= until),  # the hooks Claude Code waited for
        "mode": "semantic" if "by semantic search" in context else "fast" if "by fast" in context else "-",
        "tools": bool(first and first.our_tools()),
        "tokens": _tokens(first) if first else {},
        "exit": run.returncode,
    }


def _hook_lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _tokens(request: Request) -> dict[str, int]:
    """o200k tokens of what we add to a request: our tools' definitions, the server's instructions, the hook context."""
    from memlikehuman.sessions.tokens import counter_for

    count = counter_for("gpt-4o").count
    body = request.body if isinstance(request.body, dict) else {}
    ours = [t for t in body.get("tools") or [] if str(t.get("name", "")).startswith("mcp__memlikehuman__")]
    return {
        "tools": count(json.dumps(ours, ensure_ascii=False)) if ours else 0,
        "instructions": count(request.server_instructions()),
        "injected": count("\n".join(request.hook_context())),
    }


def launch(root: Path, variants: list[Variant], runs: int) -> list[Variant]:
    """The FACTS told once to each variant, then `runs` rounds of one ask each, interleaved, asked twice: as
    installed (the launch) and with the hooks timed (the hooks); then how many events of each archive are
    without a vector (after up to VECTOR_WAIT seconds). Stops what it started."""
    try:
        for n, variant in enumerate(variants):
            _prepared(variant, root / f"v{n}")
        for fact in FACTS:
            for variant in variants:
                _sample(variant, fact, timed=False)
        for n in range(runs):
            for variant in variants[n % len(variants) :] + variants[: n % len(variants)]:
                for timed in (False, True):
                    variant.samples.append(_sample(variant, ASKS[n % len(ASKS)], timed))
        _vectors_after(variants)
    finally:
        for variant in variants:
            if variant.world is not None:
                variant.world.stop()
    return variants


def unembedded(db: Path) -> int:
    """Events of the archive without a vector (0 when there is no archive)."""
    from memlikehuman.archive.db import open_database

    if not db.exists():
        return 0
    opened = open_database(db)
    try:
        sql = "SELECT count(*) FROM events e LEFT JOIN event_vectors v ON v.event_sequence = e.sequence"
        return int(opened.scalar(sql + " WHERE v.event_sequence IS NULL") or 0)
    finally:
        opened.close()


def _vectors_after(variants: list[Variant]) -> None:
    deadline = time.monotonic() + VECTOR_WAIT
    installed = [v for v in variants if v.script is not None and v.world is not None]
    while time.monotonic() < deadline and any(unembedded(v.world.db) for v in installed if v.world):
        time.sleep(1)
    for variant in installed:
        assert variant.world is not None
        variant.samples[-1]["unembedded"] = unembedded(variant.world.db)
        variant.samples[-1]["events"] = len(variant.world.archive().events)


# -- serve up to `initialize`, and the warm process ----------------------------------------------

CLIENT = {"name": "bench", "version": "0"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT}}  # fmt: skip


def serve_start(script: str, root: Path, runs: int) -> dict[str, list[float]]:
    """Milliseconds from spawning `serve` to its answer to `initialize`: relayed to a warm process that
    runs, serving by itself (MEMLIKEHUMAN_WARM_IDLE=0), and the floor `python -c "import mcp"`."""
    runtime = root / "run"
    runtime.mkdir(mode=0o700, parents=True)
    env = {**os.environ, "MEMLIKEHUMAN_DB": str(root / "serve.sqlite3"), "MEMLIKEHUMAN_CONFIG": "/x",
           "MEMLIKEHUMAN_EMBEDDER": "local", "XDG_RUNTIME_DIR": str(runtime)}  # fmt: skip
    cases = {
        "serve relayed to the warm process": env,
        "serve by itself (MEMLIKEHUMAN_WARM_IDLE=0)": {**env, "MEMLIKEHUMAN_WARM_IDLE": "0"},
    }
    found: dict[str, list[float]] = {label: [] for label in [*cases, "floor: python -c 'import mcp'"]}
    python = str(Path(script).with_name("python"))
    try:
        _initialized([script, "serve"], env)  # the warm process started (not counted)
        for _ in range(runs):
            for label, environment in cases.items():
                found[label].append(_initialized([script, "serve"], environment))
            started = time.perf_counter()
            subprocess.run([python, "-c", "import mcp"], check=True)
            found["floor: python -c 'import mcp'"].append((time.perf_counter() - started) * 1000)
    finally:
        warm.stop(runtime / "memlikehuman")
    return found


def _initialized(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.DEVNULL}
    with subprocess.Popen(argv, env=env, **pipes) as served:  # type: ignore[call-overload]
        served.stdin.write((json.dumps(INIT) + "\n").encode())
        served.stdin.flush()
        served.stdout.readline()
        took = (time.perf_counter() - started) * 1000
        served.kill()
    return took


def warm_start(script: str, root: Path, runs: int) -> dict[str, list[float]]:
    """The warm process from a hook's spawn: seconds to its MCP socket and to the hooks' channel (embedder
    warm); its resident memory; its CPU over IDLE_SAMPLE seconds of idling. Each run a new archive."""
    found: dict[str, list[float]] = {}
    for n in range(runs):
        for label, value in _cold_start(script, root / f"w{n}").items():
            found.setdefault(label, []).append(value)
    return found


def _cold_start(script: str, root: Path) -> dict[str, float]:
    runtime = root / "run" / "memlikehuman"
    runtime.parent.mkdir(mode=0o700, parents=True)
    env = {**os.environ, "MEMLIKEHUMAN_DB": str(root / "memory.sqlite3"), "MEMLIKEHUMAN_CONFIG": "/x",
           "MEMLIKEHUMAN_EMBEDDER": "local", "XDG_RUNTIME_DIR": str(runtime.parent)}  # fmt: skip
    payload = json.dumps({"session_id": "s", "cwd": str(root), "hook_event_name": "SessionStart"}).encode()

    def mcp() -> bool:  # the MCP socket is named as the lock
        return any(lock.with_suffix(".sock").exists() for lock in runtime.glob("*.lock"))

    def channel() -> bool:  # the hooks' channel: `<archive key>-<pid>.sock`, once the embedder is warm
        return any(p.name.count("-") == 1 for p in runtime.glob("[!.]*.sock"))

    try:
        started = time.monotonic()
        subprocess.run([script, "hook", "claude-code"], input=payload, env=env, check=True)
        figures = {"to MCP socket, s": _until(mcp, started)}
        figures["to hooks' channel, s"] = _until(channel, started)
        (pid,) = [p for lock in runtime.glob("*.lock") if (p := warm.holder(lock))]
        time.sleep(5)  # the indexer's first pass and the embedder's start-up settle
        figures["RSS, MB"] = _rss_mb(pid)
        before = _cpu_seconds(pid)
        time.sleep(IDLE_SAMPLE)
        figures[f"CPU while idle, % of a core over {IDLE_SAMPLE:.0f} s"] = (
            100 * (_cpu_seconds(pid) - before) / IDLE_SAMPLE
        )
    finally:
        warm.stop(runtime)
    return figures


IDLE_SAMPLE = 30.0


def _until(condition: Any, started: float, seconds: float = 120) -> float:
    while not condition():
        if time.monotonic() - started > seconds:
            raise RuntimeError("the warm process did not get there")
        time.sleep(0.01)
    return time.monotonic() - started


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) / 1024


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the report ----------------------------------------------------------------------------------


def _p50(values: list[Any]) -> str:
    kept = [v for v in values if v is not None]
    return f"{percentile(kept, 50):.0f}" if kept else "-"


def _launch_table(variants: list[Variant]) -> str:
    rows = []
    for variant in variants:
        plain = [s for s in variant.samples if not s["timed"]]  # as installed: the launch
        timed = [s for s in variant.samples if s["timed"]]  # the hooks through the timer: each hook's time
        launch = [s["launch_ms"] for s in plain if s["launch_ms"] is not None]
        last = variant.samples[-1] if variant.samples else {}
        ours = variant.script is not None
        rows.append((
            variant.label,
            _p50(launch),
            f"{percentile(launch, 95):.0f}" if launch else "-",
            _p50([s["connect_ms"] for s in plain]),
            _p50([s["hooks"].get("SessionStart") for s in timed]),
            _p50([s["hooks"].get("UserPromptSubmit") for s in timed]),
            _p50([s["series_ms"] for s in timed]) if ours else "-",
            f"{sum(s['mode'] == 'semantic' for s in timed)} of {len(timed)}" if ours else "-",
            f"{sum(s['tools'] for s in variant.samples)} of {len(variant.samples)}" if ours else "-",
            f"{last['unembedded']} of {last['events']}" if "unembedded" in last else "-",
        ))  # fmt: skip
    headers = ["claude -p 2.1.197", "launch to first model request p50 ms", "p95 ms", "spawn to MCP connected p50 ms",
               "SessionStart p50 ms", "UserPromptSubmit p50 ms", "hooks waited for, p50 ms",
               "prompt hook by semantic search", "first request had our tools",
               f"events without a vector {VECTOR_WAIT:.0f} s after"]  # fmt: skip
    return table(headers, rows)


def _tokens_table(variants: list[Variant]) -> str:
    rows = []
    for variant in variants:
        if variant.script is None:
            continue
        tokens = [s["tokens"] for s in variant.samples if s["tokens"]]
        parts = {key: percentile([t[key] for t in tokens], 50) for key in ("tools", "instructions", "injected")}
        rows.append((variant.label, *(f"{parts[k]:.0f}" for k in parts), f"{sum(parts.values()):.0f}"))
    headers = ["tokens (o200k) per request, p50", "our tool definitions", "server instructions", "hook context",
               "total"]  # fmt: skip
    return table(headers, rows)


def _timings_table(found: dict[str, list[float]], unit: str) -> str:
    rows = [(label, f"{percentile(v, 50):.{1 if unit == 's' else 0}f}", f"{percentile(v, 95):.1f}")
            for label, v in found.items()]  # fmt: skip
    return table(["", "p50", "p95"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="claude -p asks per variant")
    parser.add_argument("--baseline", default="598ea20", help="the git revision measured beside this checkout")
    parser.add_argument("--serve-runs", type=int, default=10, help="serve starts up to `initialize`, per case")
    parser.add_argument("--warm-runs", type=int, default=3, help="cold starts of the warm process")
    args = parser.parse_args()
    if not available():
        raise SystemExit("Claude Code is not installed under .ci/hosts: run .ci/run's npm install first")
    with tempfile.TemporaryDirectory(dir=ROOT / "bench") as tmp:  # not /tmp: socket paths stay short below it
        root = Path(tmp)
        baseline, name, this = both_installed(args.baseline, root)
        variants = [Variant("no memlikehuman", None), Variant(f"main {name}", baseline), Variant("this", this)]
        launch(root / "worlds", variants, args.runs)
        started = serve_start(this, root / "serve", args.serve_runs)
        warmed = warm_start(this, root / "warm", args.warm_runs)
    body = "\n\n".join([
        _launch_table(variants),
        _tokens_table(variants),
        _timings_table(started, "ms").replace("| |", "| spawn to `initialize` answered, ms |", 1),
        _timings_table(warmed, "s").replace("| |", "| the warm process, from a hook's spawn |", 1),
        f"{args.runs} rounds after the four facts, interleaved; in each, every variant is asked twice: as installed"
        " (the launch, spawn to MCP connected) and with its hooks run through the timer (the hooks, the search)."
        " Hooks waited for: the wall times of the hooks that ended before the first model request (SessionStart"
        " and UserPromptSubmit, one after the other)."
        " Semantic search: the prompt hook's context says it found its items by semantic search (else fast, lexical)."
        " Tokens: our seven tools' definitions as sent, the server instructions as the system prompt carries them,"
        " and all hook context of the first request of an ask. Targets: launch p50 at most the variant without"
        " memlikehuman + 500 ms; the prompt hook p50 at most 300 ms with semantic search in at least 9 of 10 calls;"
        f" no event without a vector. Load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
    ])  # fmt: skip
    write_section(
        "hooks-real",
        "What claude -p waits for: no memlikehuman, the baseline, this",
        f"python -m bench.hooks_real --runs {args.runs} --baseline {args.baseline}",
        body,
    )
    print(body)


if __name__ == "__main__":
    main()
