"""The memory browser, audited as another local user would try it: what its command lines show.

`memlikehuman ui` opens the browser. Every local user can read every process's command line (`ps`),
so whatever the browser is started with must not open the UI for anyone else: the browser gets the
path of a page only the user can read, which sends it on to the URL with the token.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from channel_support import OTHER, as_root
from conftest import BASE_ENV, make_settings
from ui_support import UI, URL_RE, spawned_ui

from memlikehuman.engine import Engine

# One GET to the UI with the given Cookie header, printed as its status: what a client of any user sends.
CLIENT = """
import http.client, sys
port, path, cookie = int(sys.argv[1]), sys.argv[2], sys.argv[3]
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}", **({"Cookie": cookie} if cookie else {})})
print(conn.getresponse().status)
"""
RECORDER = """#!{python}
import json, sys
with open({log!r}, "a") as log:
    log.write(json.dumps(sys.argv) + "\\n")
"""


def _browser(tmp_path: Path) -> tuple[Path, Path]:
    """A BROWSER that records the command line it was started with (one JSON list per start)."""
    log = tmp_path / "browser-argv.jsonl"
    script = tmp_path / "browser"
    script.write_text(RECORDER.format(python=sys.executable, log=str(log)))
    script.chmod(0o755)
    return script, log


def _argv_of_browser(log: Path, process: subprocess.Popen[str]) -> list[str]:
    deadline = time.monotonic() + 30
    # Until its first line is whole: the recorder creates the file before it writes the line.
    while not (log.exists() and "\n" in log.read_text()):
        assert process.poll() is None and time.monotonic() < deadline, "the browser was never started"
        time.sleep(0.05)
    return json.loads(log.read_text().splitlines()[0])


def test_the_browser_command_line_holds_no_token_and_nothing_in_it_opens_the_ui(tmp_path: Path):
    db = tmp_path / "memory.sqlite3"
    Engine(make_settings(db)).close()
    script, log = _browser(tmp_path)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = {**os.environ, **BASE_ENV, "BROWSER": str(script), "DISPLAY": ":99", "XDG_RUNTIME_DIR": str(runtime)}
    process = subprocess.Popen(
        [sys.executable, "-m", "memlikehuman", "ui", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        match = URL_RE.fullmatch(url)
        assert match, url
        ui = UI(process, url, int(match.group(1)), match.group(2))
        argv = _argv_of_browser(log, process)
        assert all(ui.token not in arg for arg in argv)
        # What another client can do with each argument: fetch it as a path of the UI, or as a URL.
        for arg in argv[1:]:
            path = urlsplit(arg).path or "/"
            assert ui.request("GET", path).status == 401
            assert ui.request("GET", "/?" + (urlsplit(arg).query or arg)).status == 401
        # The page the browser opens is the user's alone, and it leads to the UI.
        (page,) = [Path(urlsplit(arg).path) for arg in argv[1:] if arg.startswith("file://")]
        assert stat.S_IMODE(page.stat().st_mode) == 0o600 and stat.S_IMODE(page.parent.stat().st_mode) == 0o700
        assert url.replace("&", "&amp;") in page.read_text()
        assert ui.login().status == 303  # the URL itself works (for the user, who reads it on stdout)
    finally:
        process.terminate()
        process.communicate(timeout=30)
    assert not page.exists()  # removed when the UI stops


def test_standard_error_names_the_address_but_never_the_token(tmp_path: Path):
    db = tmp_path / "memory.sqlite3"
    Engine(make_settings(db)).close()
    process = subprocess.Popen(
        [sys.executable, "-m", "memlikehuman", "ui", "--db", str(db), "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **BASE_ENV},
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        match = URL_RE.fullmatch(process.stdout.readline().strip())
        assert match, "the first line of stdout is the URL with the token"
        said = process.stderr.readline()  # written before the URL is served
    finally:
        process.terminate()
        _, rest = process.communicate(timeout=30)
    # Standard error often goes to a log file or a terminal multiplexer's scrollback: no token there.
    assert f"http://127.0.0.1:{match.group(1)}/" in said
    assert match.group(2) not in said + rest and "token=" not in said + rest


# An interpreter another user may run (this one may live in root's home); the client needs only the stdlib.
SYSTEM_PYTHON = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")


def _status_as(uid: int, ui: UI, path: str, cookie: str = "") -> int:
    """The status another process, running as `uid`, gets for one GET of the UI."""
    assert SYSTEM_PYTHON is not None
    done = subprocess.run(
        [SYSTEM_PYTHON, "-I", "-c", CLIENT, str(ui.port), path, cookie],
        capture_output=True,
        text=True,
        user=uid,
        cwd="/",
        env={"PATH": os.environ.get("PATH", "")},
        timeout=60,
        check=True,
    )
    return int(done.stdout)


@as_root
@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no python3 outside the virtual environment")
def test_another_user_holding_the_cookie_or_the_token_is_refused(tmp_path: Path):
    # A listener of another user on another port of 127.0.0.1 receives the browser's cookie for this UI
    # (cookies ignore ports); replayed to the UI from that user's socket, it opens nothing.
    db = tmp_path / "memory.sqlite3"
    Engine(make_settings(db)).close()
    with spawned_ui(db) as ui:
        ui.login()
        assert ui.cookie is not None
        assert _status_as(os.getuid(), ui, "/", ui.cookie) == 200  # the user's own client: served
        assert _status_as(OTHER, ui, "/", ui.cookie) == 403
        assert _status_as(OTHER, ui, f"/?token={ui.token}") == 403
        assert _status_as(OTHER, ui, "/static/ui.css", ui.cookie) == 403
        assert ui.get("/").status == 200
