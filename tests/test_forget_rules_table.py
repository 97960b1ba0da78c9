"""The table of docs/forget.md ("The rules, case by case"), run row by row: each row records its archive
through the Engine (the extractor a scripted model that answers each event with the memories the row
makes from it), forgets, and checks what went, what stayed and what still_said_by named. A row the code
does not honour fails; a row added to the table is a test added."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from openai_stub import Reply, ScriptedOpenAI, extraction_reply, memory_item
from test_extraction import extractor_settings

from memlikehuman.engine import Engine
from memlikehuman.records import Scope

DOC = Path(__file__).resolve().parents[1] / "docs" / "forget.md"
SECTION = "## The rules, case by case"
EVENT_BLOCK = "EVENT (extract from this text)>>>"
SCOPE = Scope()
_ITEM = re.compile(
    r'(?P<event>\w+): (?P<role>user|assistant) "(?P<text>[^"]*)"'
    r'|(?P<made>\w+) from (?P<source>\w+): "(?P<content>[^"]*)"'
    r'|(?P<given>\w+) given on (?P<carrier>\w+): "(?P<gift>[^"]*)"'
    r'|(?P<fix>\w+): correct (?P<original>\w+) "(?P<replacement>[^"]*)"'
)
_FORGET = re.compile(r"`(\w+)`( with also)?")
_STAY = re.compile(r"(\w+)(?: from (\w+))?")


@dataclass
class Row:
    case: str
    items: list[re.Match[str]]
    forget: str
    also: bool
    goes: list[str]
    stays: list[tuple[str, str | None]]
    named: list[str]


def _labels(cell: str) -> list[str]:
    return [] if cell == "—" else [label.strip() for label in cell.strip("`").split(",")]


def _items(cell: str) -> list[re.Match[str]]:
    """The archive's items, in order; the whole cell must be read (a typo is an error, not a skipped item)."""
    text = cell.strip("`")
    found = list(_ITEM.finditer(text))
    assert "; ".join(match.group(0) for match in found) == text, f"unreadable archive cell: {cell}"
    return found


def rows(doc: Path = DOC) -> list[Row]:
    """The table's rows, parsed from the markdown."""
    section = doc.read_text(encoding="utf-8").split(SECTION, 1)[1]
    lines = [line for line in section.splitlines() if line.startswith("|")][2:]  # header and rule
    parsed = []
    for line in lines:
        case, archive, forget, goes, stays, named = (cell.strip() for cell in line.strip("|").split(" | "))
        target = _FORGET.fullmatch(forget)
        assert target is not None, f"unreadable forget cell: {forget}"
        stayed = [_STAY.fullmatch(label) for label in _labels(stays)]
        assert all(stayed), f"unreadable stays cell: {stays}"
        parsed.append(
            Row(
                case=case,
                items=_items(archive),
                forget=target.group(1),
                also=bool(target.group(2)),
                goes=_labels(goes),
                stays=[(m.group(1), m.group(2)) for m in stayed if m],
                named=_labels(named),
            )
        )
    return parsed


ROWS = rows()


@dataclass
class Archive:
    """A row's archive recorded through the Engine; its labels mapped to record IDs."""

    engine: Engine
    ids: dict[str, list[str]] = field(default_factory=dict)

    def resolve(self, labels: list[str]) -> set[str]:
        return {record_id for label in labels for record_id in self.ids[label]}


def scripted(answers: dict[str, list[dict[str, Any]]]) -> Callable[[dict[str, Any]], Reply]:
    """A model that answers each extraction with the items listed for its EVENT's text (the longest
    text the block holds, so that one event's text inside another's picks the right one)."""

    def answer(body: dict[str, Any]) -> Reply:
        block = body["messages"][1]["content"].rsplit(EVENT_BLOCK, 1)[1]
        text = max((t for t in answers if t in block), key=len, default="")
        return extraction_reply(*answers.get(text, []))

    return answer


@pytest.fixture
def archive_of(db_path: Path | str) -> Iterator[Callable[[Row], Archive]]:
    with ScriptedOpenAI() as api, Engine(extractor_settings(db_path, api.base_url)) as engine:

        def build(row: Row) -> Archive:
            texts = {m["event"]: m["text"] for m in row.items if m["event"]}
            answers: dict[str, list[dict[str, Any]]] = {text: [] for text in texts.values()}
            made: dict[str, list[str]] = {label: [] for label in texts}
            given: dict[str, list[tuple[str, str]]] = {label: [] for label in texts}
            for m in row.items:
                if m["made"]:
                    answers[texts[m["source"]]].append(memory_item(m["content"], texts[m["source"]]))
                    made[m["source"]].append(m["made"])
                elif m["given"]:
                    given[m["carrier"]].append((m["given"], m["gift"]))
            api.default_chat = scripted(answers)
            archive = Archive(engine)
            for m in row.items:
                if m["event"]:
                    _record(archive, m, made[m["event"]], given[m["event"]])
                elif m["fix"]:
                    memory_id = archive.ids[m["original"]][0]
                    fixed = engine.correct(SCOPE, memory_id, m["replacement"], "the table says so")
                    archive.ids[m["fix"]] = [fixed.correction_event_id, fixed.replacement_id]
            return archive

        yield build


def _record(archive: Archive, item: re.Match[str], made: list[str], given: list[tuple[str, str]]) -> None:
    """Record one event (with the memories the agent gives on it); label the memories it made anew."""
    label, text = item["event"], item["text"]
    gifts = [{"content": content, "quote": text} for _, content in given] or None
    result = archive.engine.record(SCOPE, label, text, item["role"], "chat", session_id="s1", memories=gifts)
    archive.ids[label] = [label]
    new = [name for name in [*made, *(name for name, _ in given)] if name not in archive.ids]
    assert len(result.memory_ids) == len(new), f"{label} made {result.memory_ids}, the row says {new}"
    for name, memory_id in zip(new, result.memory_ids, strict=True):
        archive.ids[name] = [memory_id]


def test_the_table_of_forget_rules_has_its_rows():
    assert len(ROWS) >= 10 and len({row.case for row in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[row.case for row in ROWS])
def test_each_row_of_the_forget_rules_table_holds(row: Row, archive_of: Callable[[Row], Archive]) -> None:
    archive = archive_of(row)
    engine = archive.engine
    result = engine.forget(SCOPE, archive.ids[row.forget][0], also=row.also)
    assert {*result.deleted_event_ids, *result.deleted_memory_ids} == archive.resolve(row.goes)
    assert set(result.still_said_by) == archive.resolve(row.named)
    for label, quoted_from in row.stays:
        for record_id in archive.ids[label]:
            kept = engine.read(SCOPE, record_id)
            if kept.memory is not None:
                assert kept.memory.status() == "current", label
                assert quoted_from is None or kept.memory.event_id == quoted_from, label
