"""Every tuned constant is written once in the code, and the documents that give its value give the code's.

The injection gate's values live in `config.Gate` only: the README's configuration table and
docs/hosts.md name them, and are read here against the code.
"""

from __future__ import annotations

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
