"""Fixtures of the real-host suite: one world per host module (its HOME, project, archive, stand-in
model and our install), session 1 and session 2 run once and shared by the tests that read them.

Each test module names its host in HOST. The CLIs run one at a time (2 cores).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from . import scenarios, support

# Where the worlds go when they must outlive the run (each CLI's files, the stand-in's requests.jsonl,
# the archive): e.g. a CI artifact folder. Default: pytest's tmp folders (only the last 3 runs are kept).
KEEP_ENV = "MEMLIKEHUMAN_TEST_HOSTS_OUT"


def _root(factory: pytest.TempPathFactory, name: str) -> Path:
    kept = os.environ.get(KEEP_ENV)
    if not kept:
        return factory.mktemp(name)
    root = Path(kept).absolute() / f"{name}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    root.mkdir(parents=True)
    return root


@pytest.fixture(scope="module")
def host(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[support.World]:
    """The module's host in a throwaway home, wired by `memlikehuman install HOST`."""
    name = request.module.HOST
    with support.world(name, _root(tmp_path_factory, name)) as opened:
        opened.install()
        yield opened


@pytest.fixture(scope="module")
def session1(host: support.World) -> scenarios.SessionOne:
    return scenarios.session_one(host)


@pytest.fixture(scope="module")
def session2(host: support.World, session1: scenarios.SessionOne) -> support.Run:
    return scenarios.session_two(host)


@pytest.fixture
def fresh(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[support.World]:
    """The module's host in another throwaway home, not installed."""
    name = request.module.HOST
    with support.world(name, _root(tmp_path_factory, f"{name}-fresh")) as opened:
        yield opened


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not support.FIGURES:
        return
    terminalreporter.section("real hosts: each headless session")
    for figures in support.FIGURES:
        terminalreporter.write_line(", ".join(f"{key} {value}" for key, value in figures.items()))
