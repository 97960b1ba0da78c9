"""`memlikehuman ui` on the command line: its port, and the refusals before it serves anything."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from cli_support import cli, closed_port
from conftest import BASE_ENV, make_settings
from ui_support import URL_RE, spawned_ui

from memlikehuman.engine import Engine


def test_ui_listens_on_the_port_it_is_given(db_path: Path) -> None:
    Engine(make_settings(db_path)).close()
    port = closed_port()
    with spawned_ui(db_path, "--port", str(port)) as ui:
        assert ui.port == port and ui.url.startswith(f"http://127.0.0.1:{port}/?token=")
        assert ui.login().status == 303


def test_ui_refuses_a_port_in_use_with_a_message(db_path: Path) -> None:
    Engine(make_settings(db_path)).close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = cli(db_path, "ui", "--no-browser", "--port", str(port))
    assert result.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and result.stdout == ""


def test_ui_does_not_create_a_missing_archive(tmp_path: Path) -> None:
    missing = tmp_path / "typo.sqlite3"
    result = cli(missing, "ui", "--no-browser")
    assert result.exit_code == 1 and "no archive at" in result.stderr
    assert not missing.exists()


def test_ui_help_says_it_binds_loopback_only() -> None:
    result = cli(Path("/nonexistent.sqlite3"), "ui", "--help")
    assert result.exit_code == 0 and "127.0.0.1 only" in " ".join(result.stdout.split())


def test_ui_without_a_display_prints_the_url_and_says_to_open_it(db_path: Path) -> None:
    Engine(make_settings(db_path)).close()
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    process = subprocess.Popen(
        [sys.executable, "-m", "memlikehuman", "ui", "--db", str(db_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, **BASE_ENV},
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        assert URL_RE.fullmatch(process.stdout.readline().strip())
        lines = [process.stderr.readline(), process.stderr.readline()]
        assert any("no graphical display here: open the URL above in a browser" in line for line in lines), lines
    finally:
        process.terminate()
        process.communicate(timeout=30)
