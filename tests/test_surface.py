"""The public surface of the core, pinned: what the edges (and outside callers) may use.

The facade (memlikehuman.engine), the records, the errors and the JSON shapes each list their public
names in ``__all__``. Changing one of these lists changes what every edge may rely on: update it here on
purpose, and the map in docs/architecture.md with it.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import textwrap
from pathlib import Path

import pytest

from memlikehuman.archive.backend import Backend
from memlikehuman.archive.connection import Connection, Transaction
from memlikehuman.archive.db import Database, open_database
from memlikehuman.archive.postgres.backend import POSTGRES
from memlikehuman.archive.postgres.pg import PgDatabase
from memlikehuman.archive.sqlite.backend import SQLITE

PACKAGE = Path(__file__).resolve().parent.parent / "memlikehuman"
EDGES = ("server", "cli", "hosts", "ui")

PINNED = {
    "memlikehuman.engine": [
        "Engine", "Extractor", "Outcome", "diagnose", "open_archive",
    ],
    "memlikehuman.shapes": ["data_line", "forget_shape", "memory_shape", "recall_shape", "visible"],
    "memlikehuman.records": [
        "BASES", "CATEGORIES", "CUE_KINDS", "MEMORY_KINDS", "NOT_SCRUBBED", "ROLES", "Candidate", "Check", "Checkpoint",
        "CorrectionResult", "Coverage", "Cue", "Event", "ForgetResult", "HistoryMessage", "HistoryReport",
        "ImportReport", "InjectedItem", "Kind", "Mark", "Memory", "MemoryHit", "Page", "PersonaVersion", "Preview",
        "RawHit", "ReadResult", "RebuildResult", "RecallResult", "RecordResult", "Scope", "SpeakerAlias", "TaskState",
        "Turn", "memory_status",
    ],
    "memlikehuman.errors": [
        "CODES", "Conflict", "Forbidden", "Forgotten", "ImportConflicts", "Internal", "InvalidArgument",
        "LimitExceeded", "MemLikeHumanError", "NotFound", "OtherScope", "Transient", "Unavailable", "unreadable",
    ],
}  # fmt: skip

# The facade's operations, as the edges call them: a rename or removal is an interface change.
ENGINE_METHODS = [
    "catch_up", "checkpoint", "client_seen", "close", "correct", "count_records", "current_memories", "drain",
    "drop_tombstones", "embed_missing", "export_lines",
    "extract_answer", "extraction_prompt", "forget",
    "forget_preview", "import_history", "import_lines", "inject", "latest_checkpoint", "persona", "persona_history",
    "persona_with_memories", "prepare_import", "read", "recall", "record", "reindex_fulltext", "reindex_vectors",
    "requeue", "resume", "retry_queue", "scope_of", "session_turns", "set_persona", "start_extraction", "stats",
    "tombstone_count",
    "use_extractor", "warm_injection",
]  # fmt: skip


@pytest.mark.parametrize("module", sorted(PINNED))
def test_the_public_names_of_the_core_are_pinned(module):
    assert sorted(importlib.import_module(module).__all__) == sorted(PINNED[module]), (
        f"{module}.__all__ changed: if that is intended, update PINNED here and the map in docs/architecture.md"
    )


@pytest.mark.parametrize("module", sorted(PINNED))
def test_every_public_name_exists(module):
    loaded = importlib.import_module(module)
    assert [name for name in loaded.__all__ if not hasattr(loaded, name)] == []


def test_the_facade_offers_the_operations_the_edges_call():
    from memlikehuman.engine import Engine

    public = sorted(name for name in dir(Engine) if not name.startswith("_") and callable(getattr(Engine, name)))
    assert public == sorted(ENGINE_METHODS)


def test_the_facade_is_one_class_without_a_base():
    from memlikehuman.engine import Engine

    assert Engine.__bases__ == (object,)  # every operation is its own method, none inherited from a mixin


def _members(protocol: type) -> set[str]:
    """What a protocol declares: its methods, properties and attributes (dunders left out)."""
    return {name for name in (*vars(protocol), *vars(protocol).get("__annotations__", {})) if name[0] != "_"}


def _set_in_init(cls: type) -> set[str]:
    """The attributes an __init__ assigns (self.x = ...)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__)))
    return {
        t.attr for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Attribute)
    }


@pytest.mark.parametrize("cls", [Database, PgDatabase], ids=["sqlite", "postgres"])
def test_each_archive_class_offers_every_member_of_the_connection_protocol(cls):
    assert sorted(_members(Connection) - set(dir(cls)) - _set_in_init(cls)) == []


def test_an_open_archive_and_its_transactions_offer_the_protocols(archive_target):
    db = open_database(archive_target)
    try:
        assert sorted(_members(Connection) - set(dir(db))) == []
        with db.read() as conn:
            assert sorted(_members(Transaction) - set(dir(conn))) == []
    finally:
        db.close()


@pytest.mark.parametrize("backend", [SQLITE, POSTGRES], ids=["sqlite", "postgres"])
def test_each_backend_offers_every_member_of_the_backend_seam(backend):
    assert sorted(_members(Backend) - set(dir(backend))) == []


def _dataclasses(module: str) -> list[type]:
    loaded = importlib.import_module(module)
    return [v for v in vars(loaded).values() if dataclasses.is_dataclass(v) and v.__module__ == module]


# The one mutable record: the history importers count into it as they read (hosts/history.py).
ACCUMULATORS = {"HistoryReport"}
ROW_MODULES = ["memlikehuman.records", "memlikehuman.records.reports"] + sorted(
    f"memlikehuman.archive.{p.stem}" for p in (PACKAGE / "archive").glob("*.py") if p.stem != "__init__"
)


@pytest.mark.parametrize("module", ROW_MODULES)
def test_the_records_and_rows_that_cross_modules_are_frozen(module):
    classes = [cls for cls in _dataclasses(module) if cls.__name__ not in ACCUMULATORS]
    assert [cls.__name__ for cls in classes if not cls.__dataclass_params__.frozen] == []


def test_the_row_records_are_dataclasses():
    # The frozen check above sees them: the event, memory and checkpoint rows are records.
    names = {cls.__name__ for cls in _dataclasses("memlikehuman.records")}
    assert {"Event", "Memory", "Checkpoint", "TaskState", "Cue", "Scope"} <= names


def _edge_imports() -> list[tuple[str, str, str]]:
    """(edge file, core module, name) for every `from <core module> import name` in the edges."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] not in EDGES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            core = isinstance(node, ast.ImportFrom) and node.module in ("engine", "records", "errors", "shapes")
            if core and node.level == 2:
                edge = str(path.relative_to(PACKAGE))
                found += [(edge, f"memlikehuman.{node.module}", a.name) for a in node.names]
    return found


def test_the_edges_use_only_public_names_of_the_facade_the_records_and_the_errors():
    imports = _edge_imports()
    assert imports  # the check sees the edges' imports at all
    private = [(edge, module, name) for edge, module, name in imports if name not in PINNED[module]]
    assert private == []
