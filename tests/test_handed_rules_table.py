"""The table of docs/handed.md, run row by row: each row records its earlier turns (and the memories the
agent attached to them) in an archive of its own, records the prompt in session `now` as the hook does,
asks the gate in fast mode, and checks what was handed, in order, and what was not. A row the code does
not honour fails; a row added to the table is a test added."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import make_settings

from memlikehuman.engine import Engine
from memlikehuman.records import Scope

DOC = Path(__file__).resolve().parents[1] / "docs" / "handed.md"
SCOPE = Scope("default", "table")
_TURN = re.compile(
    r"(?P<session>\w+)(?:@(?P<day>\d{4}-\d{2}-\d{2}))? (?P<role>user|assistant): (?P<text>.*?)"
    r"(?: \[memory: (?P<content>[^|\]]+?) \\\| (?P<quote>[^\]]+)\])?"
)


@dataclass(frozen=True)
class Row:
    case: str
    earlier: list[re.Match[str]]
    prompt: str
    handed: list[str]
    not_handed: list[str]


def _texts(cell: str) -> list[str]:
    return [] if cell == "—" else [text.strip() for text in cell.split("<br>")]


def _turns(cell: str) -> list[re.Match[str]]:
    """The earlier turns; every one must be read whole (a typo is an error, not a skipped turn)."""
    found = [_TURN.fullmatch(turn) for turn in _texts(cell)]
    assert all(found), f"unreadable earlier cell: {cell}"
    return [match for match in found if match]


def rows(doc: Path = DOC) -> list[Row]:
    """The table's rows, parsed from the markdown."""
    lines = [line for line in doc.read_text(encoding="utf-8").splitlines() if line.startswith("| ")][2:]
    parsed = []
    for line in lines:
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        case, earlier, prompt, handed, not_handed = cells
        parsed.append(Row(case, _turns(earlier), prompt, _texts(handed), _texts(not_handed)))
    return parsed


def _record(engine: Engine, n: int, turn: re.Match[str]) -> None:
    day = turn["day"] or "2026-03-02"
    at = f"{day}T09:{n:02d}:00Z"
    event_id, text = f"t{n}", turn["text"]
    memories = [{"content": turn["content"], "quote": turn["quote"]}] if turn["content"] else None
    result = engine.record(SCOPE, event_id, text, turn["role"], "claude-code", session_id=turn["session"],
                           occurred_at=at, memories=memories)  # fmt: skip
    assert not memories or result.memory_ids, result.warnings


@pytest.mark.parametrize("row", rows(), ids=lambda row: row.case)
def test_the_prompt_is_handed_what_the_table_says(row: Row, tmp_path: Path) -> None:
    with Engine(make_settings(tmp_path / "a.sqlite3")) as engine:
        for n, turn in enumerate(row.earlier):
            _record(engine, n, turn)
        engine.record(SCOPE, "prompt", row.prompt, "user", "claude-code", session_id="now",
                      occurred_at="2026-06-01T09:00:00Z")  # fmt: skip
        items = engine.inject(SCOPE, row.prompt, session_id="now", query_stored=True)
    shown = [json.loads(item.line) for item in items]
    texts = [record.get("content") or record.get("text") for record in shown]
    assert texts == row.handed, row.case
    for text in row.not_handed:
        assert all(text not in line for line in (item.line for item in items)), (row.case, text)
    said = [record.get("said", 1) for record in shown]
    assert said == [sum(turn["text"] == text for turn in row.earlier) or 1 for text in texts], row.case


def test_the_table_reads_every_row_and_covers_both_outcomes() -> None:
    found = rows()
    assert len(found) >= 10
    assert any(row.handed for row in found) and any(not row.handed for row in found)
