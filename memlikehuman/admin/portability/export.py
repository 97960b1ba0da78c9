"""Streaming export: one read snapshot, rows straight from SQL cursors to lines."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from ... import clock, validate
from ...archive.connection import Connection
from .spec import FORMAT, SECTIONS, TYPES, VERSION, Section, line, to_record


def _filter(section: Section, persona_id: str | None, project_id: str | None) -> tuple[str, tuple[str, ...]]:
    clauses: list[str] = []
    params: list[str] = []
    if persona_id is not None:
        clauses.append(f"{section.alias}persona_id = ?")
        params.append(persona_id)
    if project_id is not None:
        if section.kind == "persona_version":
            # The core persona belongs to a persona, not a project: export the personas seen in the project.
            clauses.append("p.persona_id IN (SELECT persona_id FROM events WHERE project_id = ?)")
        else:
            clauses.append(f"{section.alias}project_id = ?")
        params.append(project_id)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), tuple(params)


def _check_filter(persona_id: str | None, project_id: str | None) -> None:
    if persona_id is not None:
        validate.persona_id(persona_id)
    if project_id is not None:
        validate.identifier(project_id, "project_id")


def count_records(db: Connection, persona_id: str | None = None, project_id: str | None = None) -> dict[str, int]:
    """How many records of each type an export with this filter writes."""
    _check_filter(persona_id, project_id)
    counts = {}
    for section in SECTIONS:
        where, params = _filter(section, persona_id, project_id)
        counts[section.kind] = int(db.scalar(f"SELECT count(*) {section.source}{where}", params) or 0)
    return counts


def export_lines(db: Connection, persona_id: str | None = None, project_id: str | None = None) -> Iterator[str]:
    """The archive (or one persona and/or project of it) as export lines, each ending in a newline.

    Everything comes from one read snapshot. Raises InvalidArgument for a malformed filter.
    """
    _check_filter(persona_id, project_id)
    counts: Counter[str] = Counter()
    with db.read() as conn:
        header = {"type": "header", "format": FORMAT, "version": VERSION, "exported_at": clock.now_stamp()}
        yield line({**header, "persona_id": persona_id, "project_id": project_id})
        for section in SECTIONS:
            where, params = _filter(section, persona_id, project_id)
            for row in conn.execute(f"{section.select}{where} {section.order}", params):
                counts[section.kind] += 1
                yield line(to_record(section.kind, row))
        yield line({"type": "end", "records": {kind: counts[kind] for kind in TYPES}})
