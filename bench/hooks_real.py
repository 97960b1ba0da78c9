"""What the real `claude -p` waits for: the prompt hook with a warm server, and `serve` up to `initialize`.

Part of `python -m bench.hooks` (its rows are added there when Claude Code 2.1.197 is installed under
.ci/hosts, as `.ci/run` installs it). The CLI runs headless against the stand-in model of
tests/hosts_real (a scripted server on 127.0.0.1), after a plain `memlikehuman install claude-code`,
with a `memlikehuman serve` of the same archive already warm, as a long-running host session keeps
one. The installed UserPromptSubmit command is wrapped by a timer (a small Python program that runs
it and notes its wall time), so the figure is what Claude Code waits for, process start included.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.report import percentile  # noqa: E402
from tests.hosts_real.standin import Rule, Script, Text  # noqa: E402
from tests.hosts_real.support import ClaudeCode, World, hosts_bin  # noqa: E402

TIMER = """import json, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[2:], stdin=sys.stdin)
with open(sys.argv[1], "a") as log:
    log.write(json.dumps({"ms": (time.perf_counter() - started) * 1000}) + "\\n")
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


def available() -> bool:
    """Whether Claude Code is installed where the real-host suite finds it (and Node.js runs it)."""
    return (hosts_bin() / "claude").exists()


def _wrap_prompt_hook(world: World, log: Path) -> None:
    """The installed UserPromptSubmit command, run through the timer."""
    path = world.home / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    timer = world.root / "timer.py"
    timer.write_text(TIMER)
    for group in settings["hooks"]["UserPromptSubmit"]:
        for hook in group["hooks"]:
            hook["command"] = f"{sys.executable} {timer} {log} {hook['command']}"
    path.write_text(json.dumps(settings, indent=2))


def _warm_server(world: World) -> subprocess.Popen[bytes]:
    """`memlikehuman serve` of the world's archive with the local embedder, once its socket is there."""
    env = {**world.env(), "MEMLIKEHUMAN_EMBEDDER": "local"}
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("memlikehuman")), "serve"],
        env=env,
        cwd=world.project,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sockets = world.root / "run" / "memlikehuman"
    deadline = time.monotonic() + 120
    while not (sockets.is_dir() and any(sockets.glob("*.sock"))):
        if time.monotonic() > deadline or server.poll() is not None:
            raise RuntimeError("the warm server never listened")
        time.sleep(0.1)
    return server


def prompt_hook(root: Path, runs: int) -> dict[str, object]:
    """p50/p95 of the UserPromptSubmit hook inside `claude -p` with a warm server, and its search mode."""
    world = World(ClaudeCode(), root).start()
    log = root / "prompt-hook.jsonl"
    server = None
    try:
        world.install()
        world.model.script = Script([Rule("", (Text("Noted."),))])
        for fact in FACTS:  # the archive the asks are about, recorded through the real CLI and its hooks
            world.run(fact, world.model.script)
        _wrap_prompt_hook(world, log)
        server = _warm_server(world)
        modes = []
        for n in range(runs):
            run = world.run(ASKS[n % len(ASKS)], world.model.script)
            first = run.main()[0] if run.main() else None
            context = " ".join(first.prompt_hook_context()) if first else ""
            modes.append("semantic" if "by semantic search" in context else "fast" if "by fast" in context else "-")
    finally:
        if server is not None:
            server.terminate()
            server.wait(30)
        world.stop()
    times = [json.loads(line)["ms"] for line in log.read_text().splitlines()]
    return {
        "p50": percentile(times, 50),
        "p95": percentile(times, 95),
        "runs": len(times),
        "semantic": modes.count("semantic"),
        "modes": modes,
    }


CLIENT = {"name": "bench", "version": "0"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT}}  # fmt: skip


def serve_start(db: Path, runs: int) -> dict[str, list[float]]:
    """Milliseconds from spawning `memlikehuman serve` to its answer to `initialize`, beside the floor
    `python -c "import mcp"` (the MCP SDK's import, which every server built on it pays)."""
    env = {**os.environ, "MEMLIKEHUMAN_DB": str(db), "MEMLIKEHUMAN_EMBEDDER": "local", "MEMLIKEHUMAN_CONFIG": "/x"}
    script = str(Path(sys.executable).with_name("memlikehuman"))
    found: dict[str, list[float]] = {"serve: spawn to initialize answered": [], "floor: python -c 'import mcp'": []}
    for _ in range(runs):
        started = time.perf_counter()
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.DEVNULL}
        with subprocess.Popen([script, "serve"], env=env, **pipes) as served:  # type: ignore[call-overload]
            assert served.stdin is not None and served.stdout is not None
            served.stdin.write((json.dumps(INIT) + "\n").encode())
            served.stdin.flush()
            served.stdout.readline()
            found["serve: spawn to initialize answered"].append((time.perf_counter() - started) * 1000)
            served.kill()
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import mcp"], check=True)
        found["floor: python -c 'import mcp'"].append((time.perf_counter() - started) * 1000)
    return found
