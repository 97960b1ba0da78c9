"""The one error tree of MemLikeHuman.

Every failure the core anticipates is a ``MemLikeHumanError`` subclass whose ``code`` is one of the
codes fixed in tools.md. The edges (MCP server, CLI) turn them into ``code: message`` texts::

    MemLikeHumanError            code
     +-- InvalidArgument         invalid_argument  bad input; nothing was changed
     +-- NotFound                not_found         no such record in this scope
     +-- Conflict                conflict          an ID is taken by a different payload or scope
          +-- OtherScope         conflict          ... by an event of another scope
          +-- Forgotten          conflict          ... by an event memory_forget deleted (its tombstone)
          +-- ImportConflicts    conflict          records of an import file contradict the archive
     +-- LimitExceeded           limit_exceeded    input over a documented limit
     +-- Forbidden               forbidden         the operation is not allowed on this record
     +-- Unavailable             unavailable       a provider or the database is out of reach
          +-- Transient          unavailable       ... for now: trying again later may work
     +-- Internal                internal          a bug or corrupted state; see the stderr log

Messages say what was wrong and what to do, in one sentence.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .records import ImportReport

__all__ = [
    "CODES",
    "Conflict",
    "Forbidden",
    "Forgotten",
    "ImportConflicts",
    "Internal",
    "InvalidArgument",
    "LimitExceeded",
    "MemLikeHumanError",
    "NotFound",
    "OtherScope",
    "Transient",
    "Unavailable",
    "unreadable",
]


class MemLikeHumanError(Exception):
    """Base of every anticipated failure; ``code`` names it for hosts."""

    code = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class InvalidArgument(MemLikeHumanError):
    code = "invalid_argument"


class NotFound(MemLikeHumanError):
    code = "not_found"


class Conflict(MemLikeHumanError):
    code = "conflict"


class OtherScope(Conflict):
    """The event ID is taken by an event of another scope (a hook tells this from a changed payload)."""


class Forgotten(Conflict):
    """The event ID was forgotten with memory_forget: it is never stored again (archive/tombstones.py)."""


class LimitExceeded(MemLikeHumanError):
    code = "limit_exceeded"


class Forbidden(MemLikeHumanError):
    code = "forbidden"


class Unavailable(MemLikeHumanError):
    code = "unavailable"


class Transient(Unavailable):
    """A provider did not answer in time or said "later" (timeout, 429, 5xx, refused connection)."""


class Internal(MemLikeHumanError):
    code = "internal"


CODES = (
    "invalid_argument",
    "not_found",
    "conflict",
    "limit_exceeded",
    "forbidden",
    "unavailable",
    "internal",
)


class ImportConflicts(Conflict):
    """Records of the file contradict the archive; nothing was written. ``report`` lists them."""

    def __init__(self, report: ImportReport) -> None:
        listed = "; ".join(report.conflicts[:3])
        more = f" (and {report.conflict_count - 3} more)" if report.conflict_count > 3 else ""
        super().__init__(
            f"{report.conflict_count} record(s) of the file conflict with the archive, so nothing was imported:"
            f" {listed}{more}. Import into another archive, or forget the conflicting records first"
        )
        self.report = report


def unreadable(path: Path | None, exc: BaseException) -> str:
    """The message for an archive file SQLite cannot read (not a database, or damaged)."""
    where = "the archive" if path is None else f"the archive {path}"
    return (
        f"cannot read {where} ({type(exc).__name__}: {exc}): check --db or MEMLIKEHUMAN_DB;"
        " if it is the right file, `memlikehuman doctor` checks it and a backup can replace it"
    )
