"""The operator half of the facade: personas, stats, export/import, reindex and extraction runs.

`Engine` (engine.py) inherits these methods, so every edge still calls one object; they live here
to keep each module short. `open_archive` and `diagnose` need no open Engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..archive import events
from ..archive.db import Database, open_database
from ..archive.schema import migrate
from ..config import Settings

if TYPE_CHECKING:
    from ..archive.fulltext import Progress
    from ..index.indexer import Indexer
    from ..lifecycle.extract import Outcome
    from ..lifecycle.worker import Worker
    from ..providers.base import Embedder
    from ..records import (
        Check,
        HistoryMessage,
        HistoryReport,
        ImportReport,
        Memory,
        PersonaVersion,
        RebuildResult,
        Scope,
    )
    from . import stats as archive_stats


class Operations:
    """Operator functions over the open archive (mixed into Engine)."""

    db: Database
    settings: Settings

    @property
    def indexer(self) -> Indexer:
        raise NotImplementedError

    @property
    def worker(self) -> Worker:
        raise NotImplementedError

    @property
    def embedder(self) -> Embedder | None:
        raise NotImplementedError

    # -- extraction by a model the edge asks (MCP 2026-07-28 sampling) --------------------------------

    def extraction_prompt(self, sequence: int) -> tuple[str, str, dict[str, Any], list[int]]:
        """The system and user messages, the answer's JSON schema, and what the model is shown (row IDs,
        for extract_answer), that extracting this event would send (MCP 2026-07-28 sampling)."""
        from ..lifecycle import extract, extract_schema

        event = events.load(self.db, sequence)
        prompt = extract.build_prompt(self.db, event)
        return prompt.system, prompt.user, extract_schema.for_event(event.text), prompt.shown

    def extract_answer(self, sequence: int, answer: str, label: str, shown: list[int] | None = None) -> Outcome:
        """Extract the event from a model's answer to extraction_prompt (`shown`: what it returned with it):
        the same checks and states; an answer to a prompt that has changed since is dropped (pending)."""
        from ..lifecycle import extract
        from ..providers.base import Answered

        outcome = extract.run(self.db, Answered(answer, label), sequence, shown)
        if self.settings.embedder != "none":
            self.indexer.notify()
        return outcome

    # -- personas --------------------------------------------------------------------------------

    def persona(self, persona_id: str) -> PersonaVersion | None:
        """The current core persona, or None when none is set."""
        from ..archive import personas

        return personas.current(self.db, persona_id)

    def persona_history(self, persona_id: str) -> list[PersonaVersion]:
        """Every version of the core persona, oldest first."""
        from ..archive import personas

        return personas.history(self.db, persona_id)

    def set_persona(self, persona_id: str, text: str) -> tuple[PersonaVersion, bool]:
        """Store a new version of the core persona unless it equals the current one; (version, changed)."""
        from ..archive import personas

        return personas.set_text(self.db, persona_id, text)

    def persona_with_memories(self, persona_id: str) -> tuple[PersonaVersion | None, list[Memory]]:
        """The core persona and the persona memories (newest first), read in one snapshot."""
        from ..archive import personas

        with self.db.read():
            return personas.current(self.db, persona_id), personas.persona_memories(self.db, persona_id)

    # -- administration: stats, export/import, reindex, extraction --------------------------------

    def stats(self, persona_id: str | None = None, project_id: str | None = None) -> archive_stats.ArchiveStats:
        """Counts per scope (stats.collect) with the configured embedder's vector count."""
        from . import stats as archive_stats

        embedder = self.embedder
        result = archive_stats.collect(
            self.db, vector_model=embedder.model_id if embedder else None, persona_id=persona_id, project_id=project_id
        )
        if self.settings.extractor != "sampling":
            return result
        from ..lifecycle import sampling_status

        advice = sampling_status.advice(sampling_status.read(self.settings.db_path))
        return dataclasses.replace(result, warnings=(advice,) if advice else ())

    def count_records(self, persona_id: str | None, project_id: str | None) -> dict[str, int]:
        """How many records of each type an export of this filter would write."""
        from . import portability

        return portability.count_records(self.db, persona_id, project_id)

    def export_lines(self, persona_id: str | None, project_id: str | None) -> Iterator[str]:
        """The export, one JSON line at a time (portability.export_lines)."""
        from . import portability

        return portability.export_lines(self.db, persona_id, project_id)

    def prepare_import(self) -> None:
        """Load the import code (it stays off the hooks' path until then). The CLI calls this before it
        shows its progress line, so a Ctrl-C after that line lands in reading the file, as before."""
        from . import portability  # noqa: F401

    def import_lines(
        self, stream: IO[bytes], *, dry_run: bool = False, progress: Callable[[int], None] | None = None
    ) -> ImportReport:
        """Import an export file in one transaction (portability.import_lines); then embed what came in."""
        from . import portability

        report = portability.import_lines(self.db, stream, dry_run=dry_run, progress=progress)
        self.indexer.notify()
        return report

    def import_history(
        self,
        messages: list[HistoryMessage],
        report: HistoryReport,
        persona: str,
        project: str | None,
        *,
        dry_run: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> HistoryReport:
        """Store messages read from a host's history in one transaction (history_store.store)."""
        from . import history_store

        return history_store.store(self.db, messages, report, persona, project, dry_run=dry_run, progress=progress)

    def tombstone_count(self) -> int:
        """How many forgotten records the archive keeps out (archive/tombstones.py)."""
        from ..archive import tombstones

        return tombstones.count(self.db)

    def drop_tombstones(self) -> int:
        """Delete every tombstone and their key; return how many there were (tombstones.drop)."""
        from ..archive import tombstones

        return tombstones.drop(self.db)

    def reindex_fulltext(self, *, missing_only: bool, progress: Progress | None = None) -> RebuildResult:
        """Write the full-text rows again (reindex.rebuild_fulltext)."""
        from ..index import reindex

        return reindex.rebuild_fulltext(self.db, missing_only=missing_only, progress=progress)

    def reindex_vectors(self, *, missing_only: bool, progress: Progress | None = None) -> int:
        """Embed again every item (or those lacking a vector of the configured model); return how many."""
        from ..index import reindex

        return reindex.rebuild_vectors(self.indexer, missing_only=missing_only, progress=progress)

    def embed_missing(self, progress: Progress | None = None) -> int:
        """Embed, synchronously, every item lacking a vector of the configured model (indexer.index_pending)."""
        from ..index import indexer as indexing

        return indexing.index_pending(self.indexer, progress)

    def warm_injection(self) -> None:
        """Ready a server for the prompt hooks' semantic requests: the embedder and the injection anchors
        built, unembedded events (hooks record without vectors) embedded in the background."""
        from ..retrieval import injection

        injection.warm(self)  # type: ignore[arg-type]  # Engine is the Sources
        self.indexer.notify()

    def retry_queue(self, persona_id: str | None = None, project_id: str | None = None) -> list[int]:
        """Sequences of the pending and failed events of a scope (None: all), in recording order."""
        return events.retry_queue(self.db, persona_id, project_id)

    def requeue(self, sequences: Sequence[int]) -> None:
        """Make these events eligible for extraction at once (their backoff and attempts reset)."""
        from ..archive import claims

        claims.requeue(self.db, sequences)

    def drain(
        self,
        scope: Scope | None,
        report: Callable[[Outcome], bool],
        *,
        follow: bool = False,
        patient: bool = True,
    ) -> None:
        """Run the extraction worker over the pending events of a scope (None: all); see Worker.drain."""
        self.worker.drain(scope, report, follow=follow, patient=patient)


def open_archive(settings: Settings) -> int:
    """Create or upgrade the archive settings name and close it again; return its schema version."""
    db = open_database(settings.archive)
    try:
        return migrate(db)
    finally:
        db.close()


def diagnose(
    db: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    more: Callable[[Settings], list[Check]] | None = None,
) -> list[Check]:
    """The doctor's checks (doctor.diagnose), then `more` (an edge's, e.g. the wired hosts), given the
    settings. Nothing is written and no archive is created."""
    from .doctor import diagnose as checks

    return checks(db, env, more)
