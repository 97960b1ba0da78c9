"""What the code's comments cite in docs/ is there: the section a comment names in quotes after a page.

docs/design.md is a page saying where the former design log went: the code cites the page that holds
a measurement now (a decision record, architecture.md), never that one.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("memlikehuman", "bench")
# "docs/x.md", "x.md", optionally followed by a section in quotes: ("Section") or , "Section"
_CITED = re.compile(r'((?:docs/)?[\w./-]*\w\.md)(?:(?:\s*\(|,\s*)"([^"\n]+)")?')
# What a section is: a heading, or a paragraph or list item that opens with its name in bold ("**Deletion.**")
_SECTION = re.compile(r"^(?:#+\s+|(?:[-*]\s+)?\*\*)(.*?)\s*$", re.MULTILINE)


def citations(text: str) -> list[tuple[str, str | None]]:
    """(file, section or None) of each docs/ page a text names."""
    return [(m.group(1), m.group(2)) for m in _CITED.finditer(text)]


def problems(cited: list[tuple[str, str, str | None]], root: Path) -> list[str]:
    """What is wrong with the citations (where, file, section): a section the page lacks, or design.md."""
    found = []
    for where, name, section in cited:
        # a bare name is a page of docs/ or the README; others (the contract's tools.md, a host's CLAUDE.md,
        # a decision record still being written on another branch) are not read here
        path = next((p for p in (root / name, root / "docs" / name) if p.is_file()), None)
        if path is None:
            continue
        if path == root / "docs" / "design.md":
            found.append(f"{where}: cites docs/design.md, which only says where its sections went")
        elif section is not None and not _has_section(path.read_text(encoding="utf-8"), section):
            found.append(f'{where}: {name} has no section "{section}"')
    return found


def _has_section(text: str, section: str) -> bool:
    """Whether a heading or a bold paragraph lead of the page starts with the section's name."""
    return any(found.startswith(section) for found in _SECTION.findall(text))


def _cited_in_code() -> list[tuple[str, str, str | None]]:
    out = []
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for name, section in citations(path.read_text(encoding="utf-8")):
                out.append((str(path.relative_to(ROOT)), name, section))
    return out


def test_every_section_of_a_docs_page_the_code_cites_exists_and_nothing_cites_design_md() -> None:
    assert problems(_cited_in_code(), ROOT) == []


def test_a_missing_section_and_a_citation_of_design_md_are_reported(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "design.md").write_text("# Where they went\n")
    (tmp_path / "docs" / "forget.md").write_text("# Forget\n\n## What goes\n")
    text = 'docs/forget.md ("What goes") and docs/forget.md, "What stays"; the log (design.md, "Budgets")'
    cited = [("x.py", name, section) for name, section in citations(text)]
    assert problems(cited, tmp_path) == [
        'x.py: docs/forget.md has no section "What stays"',
        "x.py: cites docs/design.md, which only says where its sections went",
    ]
