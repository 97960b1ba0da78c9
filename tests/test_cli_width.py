"""The default output of recall, stats and doctor fits 100 columns on a realistic archive; --wide does not cut."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from cli_support import LARGE_TEXT, candidate, cli, populate
from conftest import make_settings
from test_alias_evidence import record_chat

from memlikehuman.archive import events, memories
from memlikehuman.engine import Engine
from memlikehuman.hosts.hook import event_id
from memlikehuman.records import Scope
from memlikehuman.text.projects import project_name

SESSION = "4f1c2a9e-7b3d-4e8a-9c21-5d6e7f8a9b0c"  # a Claude Code session ID
TURNS = [
    ("user", "We deploy the billing service with `make release` from the release branch, never from main"),
    ("assistant", "Understood: releases of the billing service go out with make release from the release branch."),
    ("user", "請記住：帳單服務的資料庫是 PostgreSQL 16，備份每天凌晨三點執行，保留三十天。" * 3),
    ("user", "The staging URL is https://staging.billing.example.internal:8443/api/v2/health-check-endpoint"),
    ("user", LARGE_TEXT[:5000]),
]


def columns(line: str) -> int:
    """Terminal columns of a line: East Asian wide and full-width characters take two, combining marks none."""
    return sum(
        0 if unicodedata.combining(ch) or unicodedata.category(ch) == "Cf" else
        2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
        for ch in line
    )  # fmt: skip


def realistic(tmp_path: Path) -> tuple[Path, Scope]:
    """populate()'s archive, plus a project as the hooks record it: their event IDs, a long project name,
    wide characters, a URL, a long message, memories, and speaker aliases."""
    db = tmp_path / "a.sqlite3"
    populate(db)
    folder = tmp_path / "billing-service-monorepo-with-a-rather-long-folder-name"
    folder.mkdir()
    scope = Scope("default", project_name(folder))
    with Engine(make_settings(db)) as engine:
        for role, text in TURNS:
            engine.record(
                scope, event_id("claude-code", SESSION, role, text), text, role, "claude-code", session_id=SESSION
            )
        first = events.find(engine.db, scope, event_id("claude-code", SESSION, "user", TURNS[0][1]))
        memories.store(engine.db, first, [candidate(
            "The billing service is released with `make release` from the release branch, never from main",
            "We deploy the billing service with `make release` from the release branch",
        )], first.recorded_at)  # fmt: skip
        record_chat(engine, scope)  # a speaker alias, with its first evidence
    return db, scope


def wide_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if columns(line) > 100]


def test_every_line_of_recall_stats_and_doctor_fits_100_columns(tmp_path: Path) -> None:
    db, scope = realistic(tmp_path)
    runs = [
        ("recall", "billing release staging 帳單 backup", "--project", scope.project_id),
        ("recall", "Lisbon Porto emoji Ünïcödé Lorem", "--persona", "alice", "--project", "garden", "--history"),
        ("recall", "billing", "--project", scope.project_id, "--mode", "semantic"),  # a degraded-search warning
        ("stats",),
        ("doctor",),
    ]
    for args in runs:
        done = cli(db, *args)
        assert done.exit_code in (0, 3), done.output
        assert wide_lines(done.stdout) == [], args
        assert wide_lines(done.stderr) == [], args
    shown = cli(db, "recall", "billing release", "--project", scope.project_id).stdout
    assert event_id("claude-code", SESSION, *TURNS[1]) in shown.split()  # an ID stays whole
    assert "…" in cli(db, "recall", "Lorem", "--persona", "alice", "--project", "garden").stdout


def test_wide_keeps_the_tables_on_long_lines(tmp_path: Path) -> None:
    db, scope = realistic(tmp_path)
    for args in (("recall", "billing release", "--project", scope.project_id), ("stats",), ("doctor",)):
        done = cli(db, *args, "--wide")
        assert done.exit_code in (0, 3), done.output
        assert wide_lines(done.stdout), args


def test_control_characters_of_stored_text_reach_the_terminal_as_escapes(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    with Engine(make_settings(db)) as engine:
        engine.record(Scope(), "e1", "harmless \x1b[2J\x1b]0;owned\x07 boiler text \u202e", "user", "chat")
    for wide in ((), ("--wide",)):
        shown = cli(db, "recall", "boiler", *wide).stdout
        assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
        assert "\\u001b[2J" in shown and "\\u202e" in shown
