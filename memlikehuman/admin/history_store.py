"""Storing the messages of a host's chat history as events (the readers live in hosts/history.py), and
the items of a host's memory file (hosts/memory_import.py), which are messages of category reference.

The whole batch is checked first and written in one transaction: a message with a problem stores
nothing. Event IDs are the readers' stable ones, so importing a file twice adds nothing, and a
message whose event was forgotten (memory_forget's tombstone) is skipped and counted.

A memory file's items replace the file's earlier ones (`HistoryReport.replacing`): after the batch is
written, each stored item that is no longer among them is withdrawn, one at a time: forgotten as
memory_forget forgets (what was made of it goes too; the scope's checkpoints are invalidated), then
its own tombstone is lifted, so the item comes back if the file states it again. An item forgotten
with memory_forget is not stored in the first place, and stays out.
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
                events.new_event(scope, m.event_id, m.text, m.role, m.source, m.category, m.session_id, m.occurred_at)
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
    if report.replacing and project is not None:
        _withdraw(db, messages, report, Scope(persona, project), dry_run=dry_run)
    return report


def _withdraw(
    db: Connection, messages: list[HistoryMessage], report: HistoryReport, scope: Scope, *, dry_run: bool
) -> None:
    """Withdraw the stored items of each replaced file that are not among `messages` (see the module docstring)."""
    from ..lifecycle import forget

    current = {m.event_id for m in messages}
    for session, prefix in report.replacing.items():
        turns = events.session_turns(db, scope, session)
        gone = [t.event_id for t in turns if t.event_id.startswith(prefix) and t.event_id not in current]
        report.withdrawn += len(gone)
        for event_id in [] if dry_run else gone:
            forget.forget(db, scope, event_id)
            with db.write() as conn:
                tombstones.lift(conn, [event_id])
