"""Storing the messages of a host's chat history as events (the readers live in hosts/history.py).

The whole batch is checked first and written in one transaction: a message with a problem stores
nothing. Event IDs are the readers' stable ones, so importing a file twice adds nothing, and a
message whose event was forgotten (memory_forget's tombstone) is skipped and counted.
"""

from __future__ import annotations

from collections.abc import Callable

from ..archive import events, tombstones
from ..archive.connection import Connection
from ..errors import InvalidArgument, MemLikeHumanError
from ..records import HistoryMessage, HistoryReport, Scope

FORGOTTEN = "forgotten (memory_forget)"


def store(
    db: Connection,
    messages: list[HistoryMessage],
    report: HistoryReport,
    persona: str,
    project: str | None,
    *,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> HistoryReport:
    """Write the messages in one transaction (none on any failure); project None: each message's own."""
    staged = []
    for m in messages:
        scope = Scope(persona, project or m.project or "default")
        where = f"message {m.event_id}"
        try:
            staged.append(
                events.new_event(
                    scope, m.event_id, m.text, m.role, m.source, "conversation", m.session_id, m.occurred_at
                )
            )
        except MemLikeHumanError as exc:
            raise InvalidArgument(f"{where}: {exc.message}") from None
    report.dry_run = dry_run
    with db.write() as conn:
        forgotten = tombstones.forgotten(conn, [event.event_id for event in staged])
        for event in staged:
            if event.event_id in forgotten:
                report.skipped[FORGOTTEN] += 1  # memory_forget took it: never stored again
            elif db.scalar("SELECT 1 FROM events WHERE event_id = ?", (event.event_id,)):
                report.unchanged += 1
            elif not dry_run:
                events.insert(db, event)
                report.added += 1
            else:
                report.added += 1
            if progress:
                progress(1)
    return report
