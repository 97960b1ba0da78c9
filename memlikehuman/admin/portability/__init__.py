"""Export and import of an archive as JSON Lines (format ``memlikehuman-export``, version 1).

One JSON object per line, each with a ``type``::

    header            format, version, exported_at, and the persona_id/project_id filter (null: all)
    persona_version   every version of the core persona of the exported personas
    event             the original events with their cues, in recording order
    memory            derived memories: validity, status, revocation, supersession links by memory_id
    correction        which memory each correction event revoked, and why
    checkpoint        task checkpoints, valid and invalidated
    end               how many records of each type came before: a truncated file is refused

Sequences are not exported: imported events get new local sequences, in the order of the file
(the original recording order), and checkpoints point at their covered event's new sequence.
Vectors are not exported either; ``reindex`` (or a running server) computes them again.

Export streams rows from SQL cursors inside one read transaction, so memory stays flat however
large the archive is. Import streams the file inside one write transaction: a record whose ID
exists with identical content is skipped, a new one is written (with its full-text row), and if
any record conflicts with the archive, or ``dry_run`` is set, everything is rolled back. Runs of
events and of memories are compared and written in batches (batches.py), with the outcome of a
record-by-record import.
"""

from .export import count_records, export_lines
from .importer import ImportConflicts, ImportReport, import_lines
from .spec import FORMAT, TYPES, VERSION

__all__ = [
    "FORMAT",
    "TYPES",
    "VERSION",
    "ImportConflicts",
    "ImportReport",
    "count_records",
    "export_lines",
    "import_lines",
]
