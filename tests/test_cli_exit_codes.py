"""Every command's exit status as README's "Command line" says: 0 success, 1 error, 2 wrong usage, 3 a problem.

Wrong usage (2) is a command line that is refused as typed: click's own checks, and a value of an option
or argument that the core refuses (a query, a time, a scope, a record ID, a --db that is empty). An error
(1) is a command line that is right for work that cannot be done: no archive, no such record, a file
that cannot be read or written, a text read from a file or standard input that is refused. Ctrl-C (130)
is tested where a command waits: test_cli_forget.py, test_background_extraction_cli.py.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import BASE_ENV, make_settings

from memlikehuman.cli import main
from memlikehuman.engine import Engine
from memlikehuman.records import Scope

OK, ERROR, USAGE, PROBLEM = 0, 1, 2, 3
EXTRACTOR = {"MEMLIKEHUMAN_EXTRACTOR": "openai", "MEMLIKEHUMAN_EXTRACTOR_BASE_URL": "http://127.0.0.1:9/v1"}

# (arguments after `--db ARCHIVE` ("{missing}": an archive that does not exist, "{notes}": a file that is
# no database, "{dir}": the test's directory), extra environment, exit status, what stderr says)
TABLE = [
    (["recall", "boiler"], {}, OK, ""),
    (["recall"], {}, USAGE, "invalid_argument: query is empty"),
    (["recall", "   "], {}, USAGE, "invalid_argument: query is empty"),
    (["recall", "x", "--as-of", "2026-01-01T00:00:00"], {}, USAGE, "as_of has no timezone offset"),
    (["recall", "x", "--as-of", "yesterday"], {}, USAGE, "invalid_argument: as_of"),
    (["recall", "x" * 4001], {}, USAGE, "limit_exceeded: query"),
    (["recall", "x", *["--also", "y"] * 9], {}, USAGE, "limit_exceeded: alternatives"),
    (["recall", "x", "--also", " "], {}, USAGE, "invalid_argument: alternatives"),
    (["recall", "x", "--persona", "bad persona!"], {}, USAGE, "invalid_argument: persona_id"),
    (["recall", "x", "--project", "a\x01b"], {}, USAGE, "project_id contains control characters"),
    (["recall", "x", "-n", "0"], {}, USAGE, "Invalid value for '-n'"),
    (["recall", "x", "--bogus"], {}, USAGE, "No such option"),
    (["stats"], {}, OK, ""),
    (["stats", "--persona", "bad/x"], {}, USAGE, "invalid_argument: persona_id"),
    (["stats", "--all", "--persona", "default"], {}, USAGE, "either --all or --persona/--project"),
    (["export", "--all", "--project", "default"], {}, USAGE, "either --all or --persona/--project"),
    (["export", "-o", "{dir}/no/such/folder/out.jsonl"], {}, ERROR, "cannot write the export"),
    (["retry", "--all", "--project", "x"], EXTRACTOR, USAGE, "either --all or --persona/--project"),
    (["retry", "--persona", "bad persona!"], EXTRACTOR, USAGE, "invalid_argument: persona_id"),
    (["retry"], {}, PROBLEM, "no extractor is configured"),
    (["extract", "--persona", "default"], EXTRACTOR, USAGE, "give --persona and --project together"),
    (["forget", "e1", "--yes"], {}, OK, ""),
    (["forget"], {}, USAGE, "Missing argument 'RECORD_ID'"),
    (["forget", "e1"], {}, USAGE, "pass --yes"),
    (["forget", "x" * 300, "--yes"], {}, USAGE, "record_id is 300 characters long"),
    (["forget", "nope", "--yes"], {}, ERROR, "not_found: no record 'nope' in the archive"),
    (["forget", "e1", "--yes", "--project", "other"], {}, ERROR, "not_found: 'e1' is in persona 'default'"),
    (["forget", "e1", "--yes", "--persona", "bad persona!"], {}, USAGE, "invalid_argument: persona_id"),
    (["tombstones", "--drop"], {}, USAGE, "pass --yes"),
    (["persona", "show", "--persona", "no spaces"], {}, USAGE, "invalid_argument: persona_id"),
    (["persona", "set", "--persona", "no spaces", "-"], {}, USAGE, "invalid_argument: persona_id"),
    (["persona", "set", "-"], {}, ERROR, "invalid_argument: persona text"),  # standard input: empty
    (["install", "claude-code", "--persona", "bad/x", "--dry-run"], {}, USAGE, "--persona: persona_id"),
    (["install", "cursor", "--extract-with", "host", "--dry-run"], {}, USAGE, "has no headless CLI"),
    (["install", "claude-code", "--record", "everything", "--dry-run"], {}, USAGE, "--record"),
    (["import", "{dir}/missing.jsonl"], {}, ERROR, "cannot read"),
    (["no-such-command"], {}, USAGE, "No such command"),
    (["stats"], {"--db": "{missing}"}, ERROR, "not_found: no archive at"),
    (["forget", "e1", "--yes"], {"--db": "{missing}"}, ERROR, "not_found: no archive at"),
    (["recall", "x"], {"--db": "{notes}"}, ERROR, "unavailable: cannot read the archive"),
    (["stats"], {"--db": ""}, USAGE, "the archive (--db) is empty"),
    (["doctor"], {"--db": "{notes}"}, PROBLEM, "check(s) failed"),
]


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    db = tmp_path / "a.sqlite3"
    with Engine(make_settings(db)) as engine:
        engine.record(Scope(), "e1", "The boiler is serviced in May", "user", "chat")
    (tmp_path / "notes.txt").write_bytes(b"these are my notes, not a database\n" * 200)
    (tmp_path / "home").mkdir()
    return db


def run(tmp_path: Path, db: Path, args: list[str], env: dict[str, str]) -> Result:
    places = {"missing": str(tmp_path / "missing.sqlite3"), "notes": str(tmp_path / "notes.txt"), "dir": str(tmp_path)}
    chosen = env.pop("--db", str(db)).format(**places)
    environment = {**BASE_ENV, "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": "", "XDG_DATA_HOME": "", **env}
    with contextlib.chdir("/"):  # no project folder: the default scope
        return CliRunner().invoke(main, ["--db", chosen, *(a.format(**places) for a in args)], env=environment)


@pytest.mark.parametrize(("args", "env", "status", "says"), TABLE, ids=[" ".join(row[0])[:60] for row in TABLE])
def test_each_command_exits_with_the_status_readme_names(
    tmp_path: Path, archive: Path, args: list[str], env: dict[str, str], status: int, says: str
) -> None:
    done = run(tmp_path, archive, args, dict(env))
    assert done.exit_code == status, (done.stdout, done.stderr)
    assert says in done.stderr
    assert "Traceback" not in done.stderr
