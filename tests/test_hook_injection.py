"""What the prompt hook injects, over the real hook command: the relevance gate (retrieval/injection.py),
and semantic recall from a running `memlikehuman serve` over its private socket (hosts/channel.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import BASE_ENV
from hook_support import SCRIPT, Ran, injected_records, missing_vectors, run_hook, side_file, stored
from hook_support import hook_archive as hook_archive  # noqa: F401  # the `db` fixture, both backends

from memlikehuman import config
from memlikehuman.hosts import channel, prompt_context, warm

EARLIER = [
    "I prefer pnpm over npm for this repo",
    "Please always run ruff before committing",
    "The staging server is staging.example.internal on port 8443",
]
# Shares no content word with the staging note; found by meaning alone (leads the next nearest by about 0.05).
PARAPHRASE = "what address does the test environment live at?"
UNRELATED = "what's the weather like in Paris tomorrow?"


def prompt(session: str, text: str, project: Path) -> dict[str, Any]:
    return {"session_id": session, "cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": text}


def seed(db: Path | str, project: Path, **env: str) -> None:
    for n, text in enumerate(EARLIER):
        assert run_hook("claude-code", prompt(f"earlier-{n}", text, project), db, project, **env).returncode == 0


def injected(ran: Ran) -> list[str]:
    """The texts of the injected records (their "text" or "content"); [] when the hook injected none."""
    return [record.get("text") or record["content"] for record in injected_records(ran)]


def search_of(ran: Ran) -> str:
    context = ran.json()["hookSpecificOutput"]["additionalContext"] if ran.stdout.strip() else ""
    return "semantic" if "by semantic search" in context else "fast" if "by fast (lexical) search" in context else "-"


@pytest.fixture(name="runtime")
def private_runtime_dir() -> Iterator[Path]:
    """An XDG_RUNTIME_DIR of this test alone, short enough for socket paths (at most 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="mlh-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# -- the gate, in the hook (no server) -----------------------------------------------------------


def test_a_prompt_gets_the_earlier_prompt_it_shares_a_need_with_and_not_the_unrelated_ones(
    db: Path | str, project: Path
) -> None:
    seed(db, project)
    ran = run_hook("claude-code", prompt("now", "add lodash with npm please", project), db, project)
    assert injected(ran) == [EARLIER[0]]
    assert search_of(ran) == "fast"


def test_an_unrelated_prompt_gets_nothing_injected(db: Path | str, project: Path) -> None:
    seed(db, project)
    ran = run_hook("claude-code", prompt("now", UNRELATED, project), db, project)
    assert ran.returncode == 0 and injected_records(ran) == []
    assert stored(db)[-1]["text"] == UNRELATED  # recorded all the same


def test_a_memory_is_found_by_the_words_of_its_subject_slot(db: Path | str, project: Path) -> None:
    """What the agent made of a prompt: found by the words the index holds for it (its subject too)."""
    from memlikehuman.engine import Engine
    from memlikehuman.records import Scope

    said = "I always use pnpm, never npm, in this repo."
    assert run_hook("claude-code", prompt("earlier", said, project), db, project).returncode == 0
    row = stored(db)[-1]
    memory = {"content": "The user uses pnpm, never npm, in this repo", "quote": said, "kind": "preference",
              "subject": "user.package_manager"}  # fmt: skip
    engine = Engine(config.load(db, env=BASE_ENV))
    try:
        scope = Scope(row["persona_id"], row["project_id"])
        fields = {k: row[k] for k in ("event_id", "text", "role", "source", "session_id")}
        engine.record(scope, **fields, memories=[memory])
    finally:
        engine.close()
    ran = run_hook(
        "claude-code", prompt("now", "which package manager should I use to add lodash?", project), db, project
    )
    assert injected(ran) == [memory["content"]]


def test_what_was_injected_in_a_session_is_not_injected_again_in_it(db: Path | str, project: Path) -> None:
    seed(db, project)
    first = run_hook("claude-code", prompt("now", "add lodash with npm please", project), db, project)
    again = run_hook("claude-code", prompt("now", "npm cannot find lodash", project), db, project)
    other = run_hook("claude-code", prompt("later", "npm", project), db, project)
    assert injected(first) == [EARLIER[0]]
    assert EARLIER[0] not in injected(again)
    assert EARLIER[0] in injected(other)  # another session gets it


def test_after_a_compaction_what_the_session_was_handed_may_be_handed_again(db: Path | str, project: Path) -> None:
    seed(db, project)
    first = run_hook("claude-code", prompt("now", "add lodash with npm please", project), db, project)
    assert injected(first) == [EARLIER[0]]
    compacted = {"session_id": "now", "cwd": str(project), "hook_event_name": "SessionStart", "source": "compact"}
    run_hook("claude-code", compacted, db, project)  # the compacted conversation no longer holds it
    again = run_hook("claude-code", prompt("now", "npm cannot find lodash", project), db, project)
    assert EARLIER[0] in injected(again)


def test_the_injected_note_names_rows_not_the_hook_event_ids_that_hold_a_digest_of_the_text(
    db: Path | str, project: Path
) -> None:
    seed(db, project)
    first = run_hook("claude-code", prompt("now", "add lodash with npm please", project), db, project)
    assert injected(first) == [EARLIER[0]]
    note = json.loads(side_file(db, ".injected.json").read_text())
    event_id = next(row["event_id"] for row in stored(db) if row["text"] == EARLIER[0])
    assert event_id not in json.dumps(note) and len(note["now"]) == 1 and re.fullmatch(r"event:\d+", note["now"][0])
    again = run_hook("claude-code", prompt("now", "npm cannot find lodash", project), db, project)
    assert EARLIER[0] not in injected(again)  # the row's key still keeps it out


def test_a_long_session_on_the_subject_does_not_crowd_out_the_earlier_prompt(db: Path | str, project: Path) -> None:
    seed(db, project)
    # Twenty turns of this session share the prompt's words and its session's score; they are already in
    # the model's context, and must not take the places of the earlier sessions' candidates.
    for n in range(20):
        step = f"the lodash import still fails, attempt {n}"
        assert run_hook("claude-code", prompt("long", step, project), db, project).returncode == 0
    ran = run_hook("claude-code", prompt("long", "add lodash with npm please", project), db, project)
    assert injected(ran) == [EARLIER[0]]


def test_the_items_setting_caps_what_is_injected(db: Path | str, project: Path) -> None:
    seed(db, project)
    both = run_hook("claude-code", prompt("a", "run ruff on the staging server", project), db, project)
    ask = "run ruff on the staging server"
    one = run_hook("claude-code", prompt("b", ask, project), db, project, MEMLIKEHUMAN_INJECT_ITEMS="1")
    none = run_hook("claude-code", prompt("c", ask, project), db, project, MEMLIKEHUMAN_INJECT_ITEMS="0")
    assert sorted(injected(both)) == sorted(EARLIER[1:])
    assert len(injected(one)) == 1
    assert injected_records(none) == []


@pytest.mark.parametrize("value", ["nan", "inf", "1e999"])
def test_a_setting_that_is_not_a_finite_number_is_refused_and_the_hook_goes_on_with_its_default(
    db: Path | str, project: Path, value: str
) -> None:
    # NaN passed every floor: a coverage of "nan" let every candidate through, a wait of "inf" broke settimeout.
    with pytest.raises(config.InvalidArgument, match="MEMLIKEHUMAN_INJECT_COVERAGE.*not a finite number"):
        config.load(db, env={**BASE_ENV, "MEMLIKEHUMAN_INJECT_COVERAGE": value})
    seed(db, project)
    ask = "add lodash with npm please"
    default = run_hook("claude-code", prompt("before", ask, project), db, project)
    ran = run_hook("claude-code", prompt("now", ask, project), db, project, MEMLIKEHUMAN_INJECT_COVERAGE=value)
    assert ran.returncode == 0 and sorted(injected(ran)) == sorted(injected(default)) != []
    assert "MEMLIKEHUMAN_INJECT_COVERAGE" in ran.stderr and "goes on with its default" in ran.stderr


def test_without_a_server_the_hook_does_not_wait_for_one_and_injects_from_fast(
    db: Path | str, project: Path, runtime: Path
) -> None:
    env = {"XDG_RUNTIME_DIR": str(runtime), "MEMLIKEHUMAN_INJECT_WAIT": "600"}  # run_hook gives up after 60 s
    seed(db, project, **env)
    ran = run_hook("claude-code", prompt("now", "add lodash with npm please", project), db, project, **env)
    assert (injected(ran), search_of(ran)) == ([EARLIER[0]], "fast")
    assert not (runtime / "memlikehuman").exists()  # asking made no socket directory


# -- sockets that must not be trusted --------------------------------------------------------------


def socket_dir(runtime: Path) -> Path:
    path = runtime / "memlikehuman"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def target_of(db: Path | str) -> str:
    return prompt_context.target(config.load(db, env=BASE_ENV))


def test_a_stale_socket_file_of_the_archive_is_ignored(db: Path | str, project: Path, runtime: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(runtime), "MEMLIKEHUMAN_INJECT_WAIT": "600"}
    seed(db, project, **env)
    stale = socket_dir(runtime) / f"{channel.archive_key(target_of(db))}-99999.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(stale))  # bound, never listening, closed: the file stays behind
    os.chmod(stale, 0o600)
    ran = run_hook("claude-code", prompt("now", "add lodash with npm please", project), db, project, **env)
    assert (injected(ran), search_of(ran)) == ([EARLIER[0]], "fast")


POISON_LINE = '{"event_id":"x","from":"user via x","on":"2026-01-01","text":"POISON"}'
POISON = {"items": [{"record_id": "x", "line": POISON_LINE}], "search_mode": "semantic"}


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a socket file to another user needs root")
def test_a_socket_file_of_another_user_is_never_trusted(
    db: Path | str, project: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    seed(db, project, **env)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    listener = channel.Listener(target_of(db), lambda request: POISON)
    path = listener.start()
    assert path is not None
    try:
        trusted = run_hook("claude-code", prompt("a", "deploy it", project), db, project, **env)
        assert injected(trusted) == ["POISON"]  # the same socket, still ours: answered (the test can fail)
        os.chown(path, 65534, 65534)
        ran = run_hook("claude-code", prompt("b", "add lodash with npm please", project), db, project, **env)
    finally:
        listener.close()
        path.unlink(missing_ok=True)
    assert (injected(ran), search_of(ran)) == ([EARLIER[0]], "fast")


# -- semantic recall from a running server ---------------------------------------------------------


def serve(db: Path, runtime: Path) -> subprocess.Popen[bytes]:
    env = {**BASE_ENV, "MEMLIKEHUMAN_EMBEDDER": "local", "MEMLIKEHUMAN_DB": str(db), "XDG_RUNTIME_DIR": str(runtime)}
    env.update(PATH=os.environ.get("PATH", ""), HOME=str(db.parent / "home"))
    log = (db.parent / "serve.log").open("wb")
    try:
        return subprocess.Popen([str(SCRIPT), "serve"], stdin=subprocess.PIPE, stderr=log, env=env)
    finally:
        log.close()  # the child has its own copy


def ready(db: Path, project: Path, runtime: Path, process: subprocess.Popen[bytes]) -> None:
    """Until the server answers a probe (another persona) semantically and the seeded events have vectors."""
    env = {"XDG_RUNTIME_DIR": str(runtime), "MEMLIKEHUMAN_INJECT_WAIT": "10"}
    deadline = time.monotonic() + 120
    for n in range(1000):
        # Each probe differs from the last (a prompt said again is never injected), and finds it.
        ask = f"ruff check number {n}"
        probe = run_hook("claude-code", prompt(f"p{n}", ask, project), db, project, "--persona", "probe", **env)
        if search_of(probe) == "semantic" and missing_vectors(db, "default") == 0:
            return
        assert process.poll() is None, (db.parent / "serve.log").read_text()
        assert time.monotonic() < deadline, "the server never answered semantically"
        time.sleep(0.2)


@pytest.mark.heavy
def test_with_the_server_running_a_paraphrase_gets_its_memory_and_an_unrelated_prompt_nothing(
    tmp_path: Path, project: Path, runtime: Path
) -> None:
    db, elsewhere = tmp_path / "memory.sqlite3", tmp_path / "other.sqlite3"
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    seed(db, project, **env)
    seed(elsewhere, project, **env)
    process = serve(db, runtime)
    try:
        ready(db, project, runtime, process)
        paraphrase = run_hook("claude-code", prompt("now", PARAPHRASE, project), db, project, **env)
        unrelated = run_hook("claude-code", prompt("now", UNRELATED, project), db, project, **env)
        # Another archive beside it has no server: its hook is not answered by this one.
        other = run_hook("claude-code", prompt("now", "add lodash with npm please", project), elsewhere, project, **env)
    finally:
        assert process.stdin is not None
        process.stdin.close()  # what a host does when it is done with a server
        process.wait(30)
        stopped = warm.stop(socket_dir(runtime))  # serve relayed to the archive's warm process: it outlives serve
    assert (injected(paraphrase), search_of(paraphrase)) == ([EARLIER[2]], "semantic")
    assert injected_records(unrelated) == []
    assert (injected(other), search_of(other)) == ([EARLIER[0]], "fast")
    assert len(stopped) == 1
    assert not list(socket_dir(runtime).iterdir())  # the warm process removed its sockets and lock on the way out
