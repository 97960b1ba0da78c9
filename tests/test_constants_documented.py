"""Every tuned constant is written once in the code, and the documents that give its value give the code's.

docs/decisions/constants.md has a row per tuned constant (the ranking's `Tuning`, the gate's `Gate`, the
module constants of recall, the text rules, forgetting and the session's start, read from the code here)
with its value and the measurement that keeps it. The injection gate's values live in `config.Gate`
only: the README's configuration table and docs/hosts.md name them, and are read here against the code.
"""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import fields
from pathlib import Path

from memlikehuman.config import GATE_KEYS, Gate

ROOT = Path(__file__).resolve().parent.parent
_VARIABLE = re.compile(r"`(MEMLIKEHUMAN_INJECT_\w+)`")
_IN_PROSE = re.compile(r"`(MEMLIKEHUMAN_INJECT_\w+)`\s*\(([\d.,]+)\)")


def gate_values(text: str) -> list[tuple[str, str]]:
    """(variable, value) wherever a document gives a gate variable a value: in a table row whose first
    cell names the variables, the backticked values of its last cell in the same order; in prose, a
    variable followed by its value in parentheses."""
    found = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) > 2 and _VARIABLE.search(cells[0]):
            values = re.findall(r"`([^`]*)`", cells[-1])
            found.extend(zip(_VARIABLE.findall(cells[0]), values, strict=False))
        found.extend((m.group(1), m.group(2)) for m in _IN_PROSE.finditer(line))
    return found


def gate_problems(gate: Gate, documents: dict[str, str], complete: str) -> list[str]:
    """Where a document's value differs from the gate's; a variable of the gate the `complete` document
    (the README's table) gives no value for; a documented variable the gate does not have."""
    variables = {key: name for name, (key, _) in GATE_KEYS.items()}
    found = []
    for document, text in documents.items():
        given = gate_values(text)
        for variable, value in given:
            if variable not in variables:
                if variable in ("MEMLIKEHUMAN_INJECT_SEARCH", "MEMLIKEHUMAN_INJECT_WAIT"):
                    continue  # where and how long the hook searches: settings, not gate values
                found.append(f"{document}: {variable} is no value of the gate")
            elif float(value.replace(",", "").replace("_", "")) != getattr(gate, variables[variable]):
                found.append(f"{document}: {variable} is {value}, the code's is {getattr(gate, variables[variable])}")
        if document == complete:
            named = {variable for variable, _ in given}
            found += [f"{document}: no value for {key}" for key in variables if key not in named]
    return found


def test_the_readme_and_hosts_md_give_the_gate_values_of_the_code() -> None:
    documents = {name: (ROOT / name).read_text(encoding="utf-8") for name in ("README.md", "docs/hosts.md")}
    assert gate_problems(Gate(), documents, "README.md") == []


def test_a_gate_value_the_documents_state_otherwise_or_leave_out_is_reported() -> None:
    readme = (
        "| variable | meaning | default |\n|---|---|---|\n"
        "| `MEMLIKEHUMAN_INJECT_ITEMS`, `MEMLIKEHUMAN_INJECT_CHARS` | caps | `5`, `3000` |\n"
        "| `MEMLIKEHUMAN_INJECT_WAIT` | seconds | `0.5` |\n"
    )
    hosts = "An item passes at coverage >= `MEMLIKEHUMAN_INJECT_COVERAGE` (0.3), best first."
    problems = gate_problems(Gate(), {"README.md": readme, "hosts.md": hosts}, "README.md")
    assert problems == [
        "README.md: MEMLIKEHUMAN_INJECT_CHARS is 3000, the code's is 2000",
        *(f"README.md: no value for {key}" for key, _ in list(GATE_KEYS.values())[2:]),
        "hosts.md: MEMLIKEHUMAN_INJECT_COVERAGE is 0.3, the code's is 0.25",
    ]


def test_the_settings_take_the_gate_values_from_the_gate(tmp_path: Path) -> None:
    from memlikehuman.config import load

    env = {"MEMLIKEHUMAN_CONFIG": str(tmp_path / "none.toml"), "MEMLIKEHUMAN_INJECT_ITEMS": "3"}
    settings = load(tmp_path / "a.sqlite3", env)
    assert settings.gate == Gate(items=3)
    assert [f.name for f in fields(Gate)] == list(GATE_KEYS)


# -- every tuned constant has a row in docs/decisions/constants.md -----------------------------------

CONSTANTS_MD = ROOT / "docs" / "decisions" / "constants.md"
PACKAGE = ROOT / "memlikehuman"
# The modules whose module-level constants are tuned values of recall, the gate, the text rules,
# forgetting and the session's start: every public UPPER_CASE name bound to a literal is one.
MODULES = (
    *sorted(f"retrieval.{p.stem}" for p in (PACKAGE / "retrieval").glob("*.py") if p.stem != "__init__"),
    "text.asking",
    "text.rules",
    "text.changes",
    "text.passages",
    "text.quotes",
    "text.overlap",
    "text.lines",
    "text.aliases",
    "lifecycle.still_said",
    "lifecycle.forget_plan",
    "sessions.context",
)
# Literals that name things rather than tune them: the contract's vocabularies.
NAMES = {
    "recall.MODES": "the search modes of the contract",
    "recall.DETAILS": "the detail levels of the contract",
    "coverage.STANDING": "the names of the standing warnings",
    "context.COMPONENTS": "the component names of the contract",
}


def _literal(node: ast.expr) -> bool:
    """A value written in the code: a literal, arithmetic of literals, frozenset/tuple of one, or "...".split()."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "tuple"):
        return len(node.args) == 1 and _literal(node.args[0])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split":
        return isinstance(node.func.value, ast.Constant)
    if isinstance(node, ast.BinOp):
        return _literal(node.left) and _literal(node.right)
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def _bindings(node: ast.stmt) -> list[tuple[str, ast.expr]]:
    """(name, value) of a module-level assignment: `A = 1`, `A: int = 1`, `A, B = 1, 2`."""
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return [(node.target.id, node.value)]
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return []
    target, value = node.targets[0], node.value
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
        return [(n.id, v) for n, v in zip(target.elts, value.elts, strict=True) if isinstance(n, ast.Name)]
    return [(target.id, value)] if isinstance(target, ast.Name) else []


def module_constants(module: str) -> dict[str, object]:
    """The module's public UPPER_CASE names bound to a literal (strings aside), named `module.NAME` by the
    module's last part, with their values as the code has them."""
    path = PACKAGE / (module.replace(".", "/") + ".py")
    loaded = importlib.import_module(f"memlikehuman.{module}")
    short = module.rsplit(".", 1)[-1]
    return {
        f"{short}.{name}": getattr(loaded, name)
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        for name, value in _bindings(node)
        if name.isupper()
        and not name.startswith("_")
        and _literal(value)
        and not isinstance(getattr(loaded, name), str)
    }


def inventory() -> dict[str, object]:
    """Every tuned constant and its value: Tuning's fields, Gate's fields, the listed modules' constants."""
    from memlikehuman.retrieval.ranking import Tuning

    found: dict[str, object] = {f"Tuning.{f.name}": f.default for f in fields(Tuning)}
    found |= {f"Gate.{f.name}": f.default for f in fields(Gate)}
    for module in MODULES:
        for name, value in module_constants(module).items():
            assert name not in found, f"{name} is named twice: name it by a longer module path"
            if name not in NAMES:
                found[name] = value
    return found


def rows(text: str) -> dict[str, list[str]]:
    """The cells of each row of the document's tables whose first cell is a backticked name."""
    out = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        match = re.fullmatch(r"`([\w.]+)`", cells[0]) if line.startswith("| `") else None
        if match:
            out[match.group(1)] = cells[1:]
    return out


def same_value(shown: str, value: object) -> bool:
    """Whether a row's value cell shows the code's value: the literal ("0.25", "2,000", "1/3", "(1.0, 0.3)",
    "{'user', 'assistant'}"), or for a collection of words, their count ("170 words")."""
    text = shown.strip("`").replace("`", "")
    if isinstance(value, frozenset | tuple) and value and all(isinstance(v, str) for v in value):
        counted = re.fullmatch(r"(\d+) \w+", text)
        if counted:
            return int(counted.group(1)) == len(value)
    if isinstance(value, bool | str):
        return text.strip("'\"") == str(value)
    if isinstance(value, int | float):
        if re.fullmatch(r"\d+/\d+", text):
            top, bottom = text.split("/")
            return abs(int(top) / int(bottom) - value) < 1e-12
        text = text.replace(",", "").replace("_", "")
    try:
        written = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return False
    if isinstance(value, frozenset):
        return isinstance(written, set | frozenset) and frozenset(written) == value
    return bool(written == value)


def table_problems(constants: dict[str, object], text: str) -> list[str]:
    """A constant without a row, a row whose value is not the code's or that names no measurement, a row
    for a constant the code does not have."""
    table = rows(text)
    found = []
    for name, value in constants.items():
        cells = table.get(name)
        if cells is None:
            found.append(f"{name} ({value!r}) has no row")
        elif not same_value(cells[0], value):
            found.append(f"{name}: the row says {cells[0]}, the code has {value!r}")
        elif len(cells) < 4 or not cells[-1].strip(" -"):
            found.append(f"{name}: the row names no measurement")
    found += [f"{name}: a row for a constant the code does not have" for name in table if name not in constants]
    return found


def test_every_tuned_constant_has_a_row_with_the_codes_value_and_its_measurement() -> None:
    assert table_problems(inventory(), CONSTANTS_MD.read_text(encoding="utf-8")) == []


def test_a_constant_without_a_row_a_wrong_value_and_a_stale_row_are_reported() -> None:
    constants = {"Tuning.dense": 1.5, "search.SCORED_ROWS": 2000, "search.STOPWORDS": frozenset({"a", "the"})}
    text = (
        "| constant | value | kind | what it does | measured |\n|---|---|---|---|---|\n"
        "| `Tuning.dense` | `1.0` | weight | the dense share | ranking-ablation.md |\n"
        "| `search.STOPWORDS` | 2 words | rule | dropped | |\n"
        "| `Tuning.lexical` | `1.0` | weight | the lexical share | none |\n"
    )
    assert table_problems(constants, text) == [
        "Tuning.dense: the row says `1.0`, the code has 1.5",
        "search.SCORED_ROWS (2000) has no row",
        "search.STOPWORDS: the row names no measurement",
        "Tuning.lexical: a row for a constant the code does not have",
    ]


def test_a_module_constant_bound_to_a_literal_joins_the_inventory() -> None:
    assert "search.SCORED_ROWS" in inventory()
    assert "still_said.SHARE" in inventory()  # 1 / 3: arithmetic of literals
    assert "excerpts.PASSAGE_CHARS" not in inventory()  # passages.PASSAGE_CHARS, named where it is written


def test_every_name_left_out_as_a_vocabulary_is_still_in_the_code() -> None:
    found = {name for module in MODULES for name in module_constants(module)}
    assert set(NAMES) - found == set()
