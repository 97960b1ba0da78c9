"""The layout's rules, executed: which part of the package may import or write what.

The core is everything but the edges (server/, cli/, hosts/, ui/). Data flows one way: the edges
call the facade (engine.py), the facade calls the core's folders, and only archive/ and index/
write tables. docs/architecture.md ("What each part may import") states the rules these tests hold.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "memlikehuman"
EDGES = ("server", "cli", "hosts", "ui")
FRAMEWORKS = {"mcp", "click", "starlette", "uvicorn"}
# What an edge may import from the core: the facade, the records, the errors, the settings, the JSON
# shapes of results, three small rule modules edges need to read their input (validate, clock, projects),
# the SHA-256 helper that keeps hashlib (OpenSSL) off the hooks' path (digest), the one-line quote the
# hooks share with the injection gate (lines), how deep a JSON text nests, read before it is parsed
# (nesting), the owner-only file helpers every writer uses (files), and what the agent is told to do
# with memory, one text for every edge (instructions).
EDGE_MAY_IMPORT = {
    "engine", "records", "errors", "config", "shapes", "validate", "clock", "text.projects", "text.digest",
    "text.lines", "text.nesting", "files", "instructions", "",
}  # fmt: skip
# The browser UI still reads the archive for its list pages (timeline, checkpoints, counts): read-only
# SQL through these modules. Tables are written only through the facade (tests below).
UI_READS = {
    "archive.connection", "archive.memories", "archive.checkpoints", "admin.stats", "sessions.context",
    "retrieval.recall",
}  # fmt: skip
WRITERS = ("archive", "index")
MAX_LINES = 600  # a guard against monsters; the house report shows modules over 400 (scripts/house-report)
# The schema history is append-only: it grows with every new migration and is never split.
LONG_BY_DESIGN = {"archive/migrations.py"}
_WRITE_SQL = re.compile(
    r"\b(INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|REPLACE\s+INTO|DROP\s+TABLE|CREATE\s+(TABLE|INDEX|TRIGGER|VIRTUAL))\b",
    re.IGNORECASE,
)
# Scratch objects of one connection (temp.*) are no tables of the archive.
_TEMP = re.compile(r"\btemp\.|CREATE\s+TEMP", re.IGNORECASE)


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


@contextmanager
def _scratch(name: str, tmp_path: Path, text: str) -> Iterator[str]:
    """A module of the package, for the length of a test, holding `text`: the rules must be able to fail."""
    MODULES[name] = tmp_path / "scratch.py"
    try:
        MODULES[name].write_text(text)
        yield name
    finally:
        del MODULES[name]


def _imports(name: str) -> set[str]:
    """Every module `name` imports (also inside functions and TYPE_CHECKING), as package-relative names,
    plus third-party top-level names prefixed with '!'."""
    path = MODULES[name]
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")
                out.add(".".join(top[1:]) if top[0] == "memlikehuman" else "!" + top[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = [*base, *(node.module.split(".") if node.module else [])]
            elif node.module and node.module.split(".")[0] == "memlikehuman":
                target = node.module.split(".")[1:]
            else:
                out.add("!" + (node.module or "").split(".")[0])
                continue
            for alias in node.names:
                sub = ".".join([*target, alias.name])
                out.add(sub if sub in MODULES else ".".join(target))
    out.discard(name)
    return out


def _part(name: str) -> str:
    return name.split(".")[0]


def _core() -> list[str]:
    # __main__ is `python -m memlikehuman`: it only starts the CLI edge.
    return [name for name in MODULES if name and name != "__main__" and _part(name) not in EDGES]


def test_the_core_imports_no_edge_and_no_protocol_or_cli_framework():
    offenders = {
        name: sorted(i for i in _imports(name) if _part(i) in EDGES or i.lstrip("!") in FRAMEWORKS and i[0] == "!")
        for name in _core()
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_edges_call_only_the_facade_records_errors_and_settings():
    offenders = {}
    for name in MODULES:
        if _part(name) not in EDGES:
            continue
        allowed = EDGE_MAY_IMPORT | (UI_READS if _part(name) == "ui" else set())
        core = {i for i in _imports(name) if not i.startswith("!") and i and _part(i) not in EDGES}
        if bad := sorted(core - allowed):
            offenders[name] = bad
    assert offenders == {}


# The floors below the facade: text/ holds the pure rules used at record time and imports
# nothing of ours but itself; archive/ imports only itself, text/ and the foundation modules.
FOUNDATION = {"errors", "clock", "validate", "records", "records.reports", "files"}
FLOORS = {"text": {"text"}, "archive": {"archive", "text"}}


def _upward(name: str) -> list[str]:
    allowed = FLOORS[_part(name)]
    ours = [i for i in _imports(name) if i and not i.startswith("!")]
    return sorted(i for i in ours if _part(i) not in allowed and (_part(name) == "text" or i not in FOUNDATION))


def test_the_text_rules_and_the_archive_import_nothing_above_them():
    offenders = {name: _upward(name) for name in MODULES if _part(name) in FLOORS}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_floor_rule_sees_an_upward_import(tmp_path: Path):
    # The rule must be able to fail: an archive module that imports retrieval/ is caught.
    with _scratch("archive.scratch", tmp_path, "from ..retrieval import recall\nfrom ..text import dates\n") as scratch:
        assert _upward(scratch) == ["retrieval.recall"]


# The backend seam: only archive/backend.py, archive/sqlite/ and archive/postgres/ know which
# engine an archive lives in; everything else calls the backend it is given.
BACKENDS = ("archive.backend", "archive.sqlite", "archive.postgres")
_ENGINE_SWITCH = re.compile(
    r"\bdialect\(|\.dialect\b|\.name\s*[!=]=\s*[\"'](?:postgres|sqlite)[\"']|isinstance\([^)]*Pg(?:Database|Connection)"
)


def _switches(name: str) -> list[str]:
    lines = MODULES[name].read_text(encoding="utf-8").splitlines()
    return [line.strip()[:80] for line in lines if _ENGINE_SWITCH.search(line) and not line.lstrip().startswith("#")]


def test_no_module_outside_the_backends_asks_which_engine_it_runs_on():
    outside = [name for name in MODULES if name and not name.startswith(BACKENDS)]
    assert {name: found for name in outside if (found := _switches(name))} == {}


def test_the_engine_rule_sees_a_dialect_switch(tmp_path: Path):
    with _scratch("retrieval.scratch", tmp_path, 'if dialect(db) == "postgres":\n    pass\n') as scratch:
        assert _switches(scratch) == ['if dialect(db) == "postgres":']


def test_the_cli_imports_the_server_only_to_serve():
    offenders = {
        name: sorted(i for i in _imports(name) if _part(i) == "server")
        for name in MODULES
        if _part(name) == "cli" and name != "cli.serve"
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def _sql_strings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_only_the_archive_and_the_index_write_tables():
    offenders = {}
    for name, path in MODULES.items():
        if not name or _part(name) in WRITERS:
            continue
        writes = [s.strip()[:60] for s in _sql_strings(path) if _WRITE_SQL.search(s) and not _TEMP.search(s)]
        if writes:
            offenders[name] = writes
    assert offenders == {}


def test_there_are_no_import_cycles():
    # Imports inside functions count too: they hide a cycle from the import machinery, not from readers.
    graph = {name: {i for i in _imports(name) if i in MODULES and i} for name in MODULES if name}
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert cycles == []


def test_no_module_grows_into_a_monster():
    # Modules are split by responsibility, never to meet a count: scripts/house-report lists the long
    # ones (over 400 lines) for a reader to judge. Only a module past MAX_LINES fails here.
    long = {
        str(path.relative_to(PACKAGE)): n
        for path in MODULES.values()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
        and str(path.relative_to(PACKAGE)) not in LONG_BY_DESIGN
    }
    assert long == {}


def test_the_write_rule_sees_a_write_outside_the_archive():
    # The checks above must be able to fail: the SQL pattern catches each kind of write.
    for sql in ("INSERT INTO events VALUES (1)", "UPDATE memories SET x = 1", "DELETE FROM checkpoints"):
        assert _WRITE_SQL.search(sql)
    assert not _WRITE_SQL.search("SELECT sequence FROM events WHERE kind = 'record'")
    assert _TEMP.search("CREATE VIRTUAL TABLE IF NOT EXISTS temp.x USING fts5vocab(main, y, row)")


# The connection seam: archive/ implements the archive connection (archive.db.Database,
# archive.postgres.pg.PgDatabase); every other module names it by its protocol, archive.connection.
CONCRETE = {"Database", "PgDatabase", "PgConnection"}
# What marks a class as an archive connection: the protocol's reads and its two transactions.
CONNECTION_METHODS = {"query", "read", "write"}
# An open archive or a transaction typed Any: only where a hash pins the code (released migrations,
# tests/test_migrations_frozen.py) or the object is psycopg's own connection.
ANY_CONNECTION = re.compile(r"\b(?:conn|db): Any\b")
ANY_ALLOWED = {"archive.migrations", "archive.migrations_frozen", "archive.postgres.pg_schema", "archive.postgres.pg"}


def _connection_classes(name: str) -> list[str]:
    """The classes of a module that implement an archive connection, or subclass its protocol."""
    found = []
    for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ClassDef):
            continue
        methods = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
        bases = {ast.unparse(base).split(".")[-1] for base in node.bases}
        if methods >= CONNECTION_METHODS or "Connection" in bases:
            found.append(node.name)
    return found


def _concrete_imports(name: str) -> list[str]:
    """The concrete connection classes a module imports by name."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    return sorted(
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name in CONCRETE
    )


def _any_connections(name: str) -> list[str]:
    lines = MODULES[name].read_text(encoding="utf-8").splitlines()
    return [line.strip()[:80] for line in lines if ANY_CONNECTION.search(line)]


def _outside_archive() -> list[str]:
    return [name for name in MODULES if name and _part(name) != "archive"]


def test_only_the_archive_implements_an_archive_connection():
    assert {name: found for name in _outside_archive() if (found := _connection_classes(name))} == {}


def test_the_connection_rule_sees_a_connection_outside_the_archive(tmp_path: Path):
    source = "class Cached:\n    def query(self): ...\n    def read(self): ...\n    def write(self): ...\n"
    source += "class Named(archive.Connection):\n    pass\n"
    with _scratch("retrieval.scratch", tmp_path, source) as scratch:
        assert _connection_classes(scratch) == ["Cached", "Named"]


def test_callers_name_the_connection_by_its_protocol():
    assert {name: found for name in _outside_archive() if (found := _concrete_imports(name))} == {}


def test_the_protocol_rule_sees_a_concrete_connection_imported(tmp_path: Path):
    with _scratch("lifecycle.scratch", tmp_path, "from ..archive.db import Database, placeholders\n") as scratch:
        assert _concrete_imports(scratch) == ["Database"]


def test_no_signature_types_an_archive_connection_as_any():
    outside = [name for name in MODULES if name and name not in ANY_ALLOWED]
    assert {name: found for name in outside if (found := _any_connections(name))} == {}


def test_the_any_rule_sees_a_connection_typed_any(tmp_path: Path):
    with _scratch("archive.scratch", tmp_path, "def f(conn: Any, db: Any) -> None: ...\n") as scratch:
        assert _any_connections(scratch) == ["def f(conn: Any, db: Any) -> None: ..."]
