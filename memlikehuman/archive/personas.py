"""The core persona (versioned, edited with the CLI only) and the persona memories of a persona.

The core persona belongs to the persona, not to a project: every project of the persona sees it.
No MCP tool writes here; ``set_text`` is called by ``memlikehuman persona set|edit``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import clock, validate
from ..records import Memory
from . import memories
from .connection import Connection, Row, Transaction

if TYPE_CHECKING:
    from ..records import PersonaVersion

MAX_PERSONA_CHARS = validate.MAX_PERSONA_CHARS


def _version(row: Row) -> PersonaVersion:
    from ..records import PersonaVersion  # reports.py: loaded where a persona was set

    return PersonaVersion(row["persona_id"], row["version"], row["text"], row["created_at"])


def current(db: Connection, persona_id: str) -> PersonaVersion | None:
    """The newest version of the core persona, or None when none was ever set."""
    validate.persona_id(persona_id)
    row = db.one(
        "SELECT persona_id, version, text, created_at FROM persona_versions WHERE persona_id = ?"
        " ORDER BY version DESC LIMIT 1",
        (persona_id,),
    )
    return _version(row) if row else None


def history(db: Connection, persona_id: str) -> list[PersonaVersion]:
    """Every version of the core persona, newest first."""
    validate.persona_id(persona_id)
    rows = db.query(
        "SELECT persona_id, version, text, created_at FROM persona_versions WHERE persona_id = ? ORDER BY version DESC",
        (persona_id,),
    )
    return [_version(row) for row in rows]


def set_text(db: Connection, persona_id: str, text: str) -> tuple[PersonaVersion, bool]:
    """Store ``text`` (surrounding whitespace removed) as a new version; return it and whether it changed.

    An edit identical to the current version stores nothing. Raises InvalidArgument for an empty
    text or bad persona_id, LimitExceeded over 20,000 characters.
    """
    from ..records import PersonaVersion

    cleaned = validate.persona_text(persona_id, text)
    with db.write() as conn:
        latest = current(db, persona_id)
        if latest is not None and latest.text == cleaned:
            return latest, False
        version = PersonaVersion(persona_id, (latest.version if latest else 0) + 1, cleaned, clock.now_stamp())
        write_version(conn, version)
    return version, True


def write_version(conn: Transaction, version: PersonaVersion) -> None:
    """The one INSERT of a core persona version (persona set, import)."""
    conn.execute(
        "INSERT INTO persona_versions (persona_id, version, text, created_at) VALUES (?, ?, ?, ?)",
        (version.persona_id, version.version, version.text, version.created_at),
    )


def persona_memories(db: Connection, persona_id: str, limit: int = 100) -> list[Memory]:
    """Current memories recorded with category 'persona' for this persona (any project), newest first."""
    validate.persona_id(persona_id)
    rows = db.query(
        memories.MEMORY_SELECT + " WHERE m.persona_id = ? AND m.category = 'persona' AND m.revoked_at IS NULL"
        " AND m.valid_to IS NULL ORDER BY m.id DESC LIMIT ?",
        (persona_id, limit),
    )
    return [memories.from_row(row) for row in rows]
