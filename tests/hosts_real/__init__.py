"""Real-host tests: Claude Code 2.1.197, Gemini CLI 0.61.0 and Codex CLI 0.171.0 (the npm packages), headless,
each against a stand-in model server on 127.0.0.1 (standin.py), wired by our own `memlikehuman install HOST`.

Run: `.venv/bin/python -m pytest tests/hosts_real -q` (one host: tests/hosts_real/test_codex.py). The CLIs
come from `.ci/hosts/node_modules/.bin` (`.ci/run` installs them) or $MEMLIKEHUMAN_TEST_HOSTS_BIN;
without them the tests skip, in CI (CI=true) they fail. $MEMLIKEHUMAN_TEST_HOSTS_OUT=DIR keeps each
world (home, archive, the stand-in's requests.jsonl, Claude Code's --debug logs) for a look afterwards.

Files: standin.py (the model: three dialects, the request log, the script), support.py (a world per
host, running a CLI, the archive through `memlikehuman export`, the per-host steps beyond our install),
scenarios.py (what a user lives through and what is checked), test_*.py (one module per host).
"""
