"""The public surface of the core, pinned: what the edges (and outside callers) may use.

The facade (memlikehuman.engine), the records, the errors and the JSON shapes each list their public
names in ``__all__``. Changing one of these lists changes what every edge may rely on: update it here on
purpose, and the map in docs/architecture.md with it.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memlikehuman"
EDGES = ("server", "cli", "hosts", "ui")

PINNED = {
    "memlikehuman.engine": [
        "Engine", "Extractor", "Outcome", "diagnose", "open_archive",
    ],
    "memlikehuman.shapes": ["data_line", "memory_shape", "recall_shape"],
    "memlikehuman.records": [
        "BASES", "CATEGORIES", "CUE_KINDS", "MEMORY_KINDS", "NOT_SCRUBBED", "ROLES", "Candidate", "Check",
        "CorrectionResult", "Coverage", "Cue", "Event", "ForgetResult", "HistoryMessage", "HistoryReport",
        "ImportReport", "InjectedItem", "Kind", "Memory", "MemoryHit", "Page", "PersonaVersion", "Preview", "RawHit",
        "ReadResult", "RebuildResult", "RecallResult", "RecordResult", "Scope", "SpeakerAlias", "Turn", "memory_status",
    ],
    "memlikehuman.errors": [
        "CODES", "Conflict", "Forbidden", "Forgotten", "ImportConflicts", "Internal", "InvalidArgument",
        "LimitExceeded", "MemLikeHumanError", "NotFound", "OtherScope", "Transient", "Unavailable", "unreadable",
    ],
}  # fmt: skip

# The facade's operations, as the edges call them: a rename or removal is an interface change.
ENGINE_METHODS = [
    "checkpoint", "client_seen", "close", "correct", "count_records", "drain", "drop_tombstones", "embed_missing",
    "export_lines",
    "extract_answer", "extraction_prompt", "forget",
    "forget_preview", "import_history", "import_lines", "inject", "latest_checkpoint", "persona", "persona_history",
    "persona_with_memories", "prepare_import", "read", "recall", "record", "reindex_fulltext", "reindex_vectors",
    "requeue", "resume", "retry_queue", "session_turns", "set_persona", "start_extraction", "stats", "tombstone_count",
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
