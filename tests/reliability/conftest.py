"""Prints every reliability suite's figures in pytest's terminal summary, so CI output can be quoted."""

from __future__ import annotations

import pytest

from .support import FIGURES


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for suite, numbers in FIGURES:
        figures = ", ".join(f"{name.replace('_', ' ')} {value}" for name, value in numbers.items())
        terminalreporter.write_line(f"{suite}: {figures}")
