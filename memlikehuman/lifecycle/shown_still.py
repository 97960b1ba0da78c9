"""Whether an extraction answer uses what its model was shown and is gone now.

A memory forgotten or corrected away, or an event forgotten, while the model was answering may be
restated in its answer: stored, it would bring back what the user took out. An answer that does not
use it (most of them, in a busy archive) is stored as usual.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..archive import terms
from ..archive.connection import Connection
from ..archive.db import placeholders
from ..archive.memories import normalized
from ..records import Candidate, Memory


def uses_gone(
    db: Connection,
    answer: Sequence[tuple[Candidate, int | None]],
    aliases: dict[int, Memory],
    events: Sequence[tuple[int, str]],
    own: Sequence[str],
) -> bool:
    """Whether the answer's items (with their alias targets) use a shown memory or event that is gone.

    Uses: updates a gone memory (its alias), restates one, or holds a word only what went said: the
    rule a forget takes memories by (archive/terms.py: a word of a gone text, as the full-text index
    cuts it, that no kept text holds). Call it inside the write transaction that would store the
    answer. `events`: the shown events (sequence, text); `own`: the texts extracted from.
    """
    live = _present(db, "memories", "id", [m.rowid for m in aliases.values()], " AND revoked_at IS NULL")
    kept_events = _present(db, "events", "sequence", [sequence for sequence, _ in events], "")
    gone_memories = [m for m in aliases.values() if m.rowid not in live]
    gone = [m.content for m in gone_memories] + [text for sequence, text in events if sequence not in kept_events]
    if not gone:
        return False
    if any(target in {m.rowid for m in gone_memories} for _, target in answer):
        return True
    kept = [*own, *(m.content for m in aliases.values() if m.rowid in live)]
    kept += [text for sequence, text in events if sequence in kept_events]
    only_gone = terms.terms(gone) - terms.all_terms(kept)
    restated = [normalized(m.content) for m in gone_memories]
    for candidate, _ in answer:
        said = normalized(candidate.content)
        written = [candidate.content, candidate.gist or "", candidate.subject or ""]
        if any(old in said for old in restated) or only_gone & terms.terms(written):
            return True
    return False


def _present(db: Connection, table: str, key: str, ids: Sequence[int], rule: str) -> set[int]:
    if not ids:
        return set()
    sql = f"SELECT {key} FROM {table} WHERE {key} IN ({placeholders(ids)}){rule}"
    return {row[key] for row in db.query(sql, tuple(ids))}
