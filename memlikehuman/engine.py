"""The facade: one open archive wired to its providers, and every operation the edges use.

The edges (server/, cli/, hosts/, ui/) call `Engine` methods, the records and the errors, nothing
else of the core; nothing here knows about any edge. The facade owns the side effects that must
follow an operation whichever edge asked for it: after a record, correct or forget the background
indexer is woken, after a forget the cached vectors of what went are dropped, and what a recall
notices about the vector index (stale cached vectors, items without vectors) is acted on here,
so recall itself only reads.

One `Engine` per process and archive: the query embedder is built once, on first use, and shared
by tool calls, the indexer thread and the extraction worker.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from . import clock, validate
from .admin.operations import diagnose, open_archive
from .archive import alias_evidence, backfills, events, memories
from .archive.db import open_database
from .archive.schema import migrate
from .config import Settings
from .errors import InvalidArgument
from .lifecycle.background import Background
from .records import ReadResult, RecordResult, Scope

if TYPE_CHECKING:
    from .admin.stats import ArchiveStats
    from .archive.fulltext import Progress
    from .clock import Clock
    from .index.indexer import Indexer
    from .index.vectors import VectorCache
    from .lifecycle.extract import Outcome
    from .lifecycle.worker import Worker
    from .providers.base import Embedder, Extractor
    from .records import (
        Checkpoint,
        CorrectionResult,
        ForgetResult,
        HistoryMessage,
        HistoryReport,
        ImportReport,
        InjectedItem,
        Mark,
        Memory,
        PersonaVersion,
        Preview,
        RebuildResult,
        RecallResult,
        Turn,
    )
    from .retrieval.sources import Upkeep
    from .sessions.context import ResumeResult

# The facade's surface (pinned by tests/test_surface.py): the Engine, the functions that need no open
# archive and the result types its methods return. (The JSON shapes every edge shows: shapes.py.)
__all__ = ["Engine", "Extractor", "Outcome", "diagnose", "open_archive"]


def __getattr__(name: str) -> Any:
    # Outcome is imported on first use: the extraction code stays off the hooks' path (bench/hooks.py).
    if name == "Outcome":
        from .lifecycle.extract import Outcome

        return Outcome
    if name == "Extractor":  # what an edge implements to offer a model of its own (server/sampling.py)
        from .providers.base import Extractor

        return Extractor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


Injected = list["InjectedItem"]


class Engine:
    """Owns the open archive and the configured providers; its methods are every operation an edge calls:
    the agent's tools (record, read, correct, forget, recall, checkpoint, resume) and the operator's
    (personas, stats, export and import, reindex, extraction runs)."""

    def __init__(
        self, settings: Settings, *, backfill_seconds: float | None = None, clock: Clock | None = None
    ) -> None:
        """Opens (creating or upgrading) the archive; `backfill_seconds` bounds its backfills (None: all);
        `clock` is the extraction worker's (None: the real one)."""
        self.settings = settings
        self.db = open_database(settings.archive)
        try:
            self.schema_version = migrate(self.db)
            backfills.complete(self.db, backfill_seconds)
        except BaseException:
            self.db.close()  # an archive that cannot be brought up to date is not kept open
            raise
        self._extractor: Extractor | None = None
        self._extractor_built = False
        self._embedder: Embedder | None = None
        self._building = threading.Lock()
        self._notices: list[str] = []  # said once, by the next recall (Engine.notice)
        self.background = Background(self.db, settings, lambda: self.embedder, lambda: self.extractor, clock)

    @property
    def vectors(self) -> VectorCache:
        """This process's cache of the archive's vectors (built on first use, like the two below)."""
        return self.background.vectors

    @property
    def indexer(self) -> Indexer:
        """The background embedding thread's owner (started by its first notify)."""
        return self.background.indexer

    @property
    def worker(self) -> Worker:
        """The background extraction worker (started by start_extraction or a waiting record)."""
        return self.background.worker

    @property
    def embedder(self) -> Embedder | None:
        """The query-side embedder, built on first use; None when MEMLIKEHUMAN_EMBEDDER=none.

        Raises InvalidArgument or Unavailable when the configured one cannot be built.
        """
        with self._building:  # the indexer thread and tool threads share one instance (one model)
            if self._embedder is None and self.settings.embedder != "none":
                from .providers.embedders import build_embedder

                self._embedder = build_embedder(self.settings)
        return self._embedder

    def close(self, *, checkpoint: bool = True) -> None:
        """Stop background extraction and embedding, then release the archive.

        checkpoint=False: a process that lives for one call leaves the WAL to the archive's next
        writer (Database.close).
        """
        self.background.close(self._extractor, self._embedder)
        self.db.close(checkpoint=checkpoint)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def extractor(self) -> Extractor | None:
        """The configured extractor, built on first use; None when MEMLIKEHUMAN_EXTRACTOR=none (and for
        `sampling` until the MCP edge supplies its provider: use_extractor)."""
        if not self._extractor_built:
            if self.settings.extractor != "none":
                from .providers.extractors import build_extractor

                self._extractor = build_extractor(self.settings)
            self._extractor_built = True
        return self._extractor

    def client_seen(self, client: str, protocol: str, sampling: bool, modern: bool) -> None:
        """What the MCP edge learnt of its client under MEMLIKEHUMAN_EXTRACTOR=sampling: kept beside the
        archive for stats and doctor, and when the client's model cannot be asked, said once by the next recall."""
        from .lifecycle import sampling_status

        wait = self.settings.extraction_wait
        sampling_status.write(self.settings.db_path, client, protocol, sampling, modern, wait)
        status = {"client": client, "protocol": protocol, "sampling": sampling, "modern": modern, "wait": wait}
        advice = sampling_status.advice({**status, "at": "now"})
        if advice and advice not in self._notices:
            self._notices.append(advice)

    def use_extractor(self, extractor: Extractor, scopes: Callable[[], list[Scope]] | None = None) -> None:
        """Extract with this provider (the MCP edge's sampling client), only in ``scopes`` when given."""
        self._extractor, self._extractor_built = extractor, True
        self.worker.only = scopes
        self.worker.start()

    # -- memory_record -------------------------------------------------------------------------

    def record(
        self,
        scope: Scope,
        event_id: str,
        text: str,
        role: str,
        source: str,
        category: str = "conversation",
        session_id: str = "default",
        occurred_at: str | None = None,
        cues: Sequence[Any] | None = None,
        memories: Sequence[Any] | None = None,
    ) -> RecordResult:
        """Validate and durably store an event, then derive memories when an extractor is configured.

        ``memories``: what the agent itself says to remember (lifecycle/given.py); each is checked
        against the text, and the configured extractor is not asked for this event.
        Raises InvalidArgument, LimitExceeded (nothing stored) or Conflict (ID taken).
        """
        payload = events.new_event(scope, event_id, text, role, source, category, session_id, occurred_at, cues)
        given = None
        if memories is not None:
            from .lifecycle import given as giving  # a hook never gives memories

            given = giving.validated(memories)
        configured = self.settings.extractor != "none"
        error = events.QUEUED if configured else events.PENDING_UNCONFIGURED
        warnings: tuple[str, ...] = clock.ahead_warning(payload.occurred_at)
        if given is not None:
            # One transaction: no worker can claim the event between its commit and its memories.
            with self.db.write():
                sequence, duplicate = events.insert(self.db, payload, error=error)
                warnings += giving.store(self.db, sequence, given, retry=duplicate).warnings
        else:
            sequence, duplicate = events.insert(self.db, payload, error=error)
            # The event is committed: everything below may fail or time out without losing it.
            warnings += self._after_insert(sequence, duplicate, configured)
        self.background.notify_indexer()  # embeds the event and its memories in the background, after the commit
        event = events.load(self.db, sequence)
        state, memory_ids, failure = event.extraction_state, event.memory_ids, event.extraction_error
        if state == "complete" and failure:  # `error` says why extraction is pending or failed, nothing else
            warnings, failure = (*warnings, failure), None
        return RecordResult(event.event_id, event.sequence, duplicate, state, memory_ids, failure, warnings)

    def _after_insert(self, sequence: int, duplicate: bool, configured: bool) -> tuple[str, ...]:
        if not configured:
            # What extract.run does without an extractor, without loading the extraction code.
            events.leave(self.db, sequence, "pending", events.PENDING_UNCONFIGURED)
            return ()
        # Pending/failed extraction is tried again on a duplicate; a complete one is left alone.
        if duplicate:
            from .archive import claims

            claims.requeue(self.db, [sequence])
        return self._extract_in_background(sequence)

    def start_extraction(self) -> None:
        """Start the background extraction worker (the server does at start: pending events resume)."""
        self.worker.start()

    def _extract_in_background(self, sequence: int) -> tuple[str, ...]:
        """Wake the worker and wait up to MEMLIKEHUMAN_EXTRACTION_WAIT for this event's extraction.

        With a wait of 0 in a process that did not start the worker (a hook, an import), nothing
        starts here: a server or `memlikehuman extract` takes the event up. Returns the warnings of
        an extraction that finished in time.
        """
        wait = self.settings.extraction_wait
        if wait > 0:
            self.worker.start()
        if not self.worker.running:
            return ()
        self.worker.notify()
        outcome = self.worker.wait_for(sequence, wait)
        return outcome.warnings if outcome is not None else ()

    # -- memory_read ---------------------------------------------------------------------------

    def read(self, scope: Scope, record_id: str, offset: int = 0, max_chars: int = 4000) -> ReadResult:
        """An event, or a memory with its original event, and a page of the original text.

        Raises InvalidArgument for bad paging, NotFound when the record is not in this scope.
        """
        scope = Scope(*validate.scope(scope.persona_id, scope.project_id))
        validate.identifier(record_id, "record_id", max_len=256)
        validate.int_range(max_chars, "max_chars", 1, 20_000)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidArgument(
                "offset must be a non-negative integer: use 0, or the source_page.next_offset of the last read"
            )
        with self.db.read():
            if record_id.startswith(memories.MEMORY_PREFIX):
                memory = memories.find(self.db, scope, record_id)
                event = events.load(self.db, memory.event_sequence)
            else:
                memory = None
                event = events.find(self.db, scope, record_id)
            names = alias_evidence.of_event(self.db, scope, event.sequence)
        return ReadResult(
            record_type="memory" if memory else "event",
            event=event,
            page=events.page(event.text, offset, max_chars),
            memory=memory,
            aliases=names,
        )

    # -- memory_correct and memory_forget, for every edge ----------------------------------------

    def correct(
        self, scope: Scope, memory_id: str, content: str, reason: str, valid_at: str | None = None
    ) -> CorrectionResult:
        """Correct a memory (correct.correct), then embed the correction and its replacement in the background.

        Raises what correct.correct raises; nothing is changed then.
        """
        from .lifecycle import correct as correcting  # imported where used: a hook needs neither

        result = correcting.correct(self.db, scope, memory_id, content, reason, valid_at)
        self.background.notify_indexer()
        return result

    def forget(
        self, scope: Scope, record_id: str, expected: Preview | None = None, *, also: bool = False
    ) -> ForgetResult:
        """Forget a record (forget.forget) and drop its vectors from this process's cache.

        ``also``: the records that still say it (``still_said_by``) go too. With ``expected`` (a preview
        shown to a person) nothing is deleted unless the same events and memories would go. Raises what
        forget.forget raises; nothing is changed then.
        """
        from .lifecycle import forget as forgetting

        result = forgetting.forget(
            self.db, scope, record_id, expected=expected, also=also, wait=self.settings.forget_wait
        )
        # Vectors held in memory go as well; the next events of the session get new ones.
        self.vectors.discard("event", scope, result.event_sequences + result.reembed_sequences)
        self.vectors.discard("memory", scope, result.memory_rowids)
        self.background.notify_indexer()
        return result

    # -- memory_recall, session_checkpoint, session_resume ----------------------------------------

    def recall(
        self,
        scope: Scope,
        query: str,
        *,
        limit: int = 10,
        as_of: str | None = None,
        include_history: bool = False,
        detail: str = "auto",
        search_mode: str = "fast",
        cue_key: str | None = None,
        session_id: str | None = None,
        alternatives: Sequence[str] | None = None,
        answering: bool = False,
    ) -> RecallResult:
        """memory_recall (recall.recall); then drops stale cached vectors and wakes the indexer if needed.

        `answering`: called by the agent answering a prompt (the tool): that prompt is left out."""
        from .retrieval.recall import recall

        result = recall(
            self,
            scope,
            query,
            limit=limit,
            as_of=as_of,
            include_history=include_history,
            detail=detail,
            search_mode=search_mode,
            cue_key=cue_key,
            session_id=session_id,
            alternatives=alternatives,
            upkeep=self._upkeep,
            answering=answering,
        )
        if self._notices:
            said, self._notices = self._notices, []
            result = dataclasses.replace(result, warnings=(*result.warnings, *said))
        return result

    def inject(self, scope: Scope, query: str, *, gate: Mapping[str, float] | None = None, **options: Any) -> Injected:
        """The prompt hook's context (injection.choose and its options); `gate` overrides configured values."""
        from .retrieval.injection import choose

        configured = self.settings.gate.with_values(gate or {})
        return choose(self, scope, query, gate=configured, upkeep=self._upkeep, **options)

    def _upkeep(self, upkeep: Upkeep) -> None:
        if upkeep.stale_events:
            self.vectors.discard("event", upkeep.scope, upkeep.stale_events)
        if upkeep.unindexed:
            self.background.notify_indexer()

    def checkpoint(
        self, scope: Scope, state: Mapping[str, Any], covered_event_id: str, session_id: str = "default"
    ) -> Checkpoint:
        """session_checkpoint: save a task state covering events up to covered_event_id (checkpoints.create)."""
        from .archive import checkpoints

        return checkpoints.create(self.db, scope, state, covered_event_id, session_id)

    def latest_checkpoint(self, scope: Scope, session_id: str | None = None) -> Checkpoint | None:
        """The checkpoint session_resume would use (checkpoints.select), or None."""
        from .archive import checkpoints

        return checkpoints.select(self.db, scope, session_id).checkpoint

    def session_turns(self, scope: Scope, session_id: str) -> list[Turn]:
        """The recorded turns (not corrections) of one session, in recording order."""
        with self.db.read():
            return events.session_turns(self.db, scope, session_id)

    def resume(
        self,
        scope: Scope,
        *,
        query: str = "",
        token_budget: int = 4096,
        target_model: str | None = None,
        session_id: str | None = None,
        count_bytes: bool = False,
        since: Mark | None = None,
        outside: str | None = None,
    ) -> ResumeResult:
        """session_resume: the budgeted context string (context.resume).

        With ``count_bytes`` the budget counts UTF-8 bytes, not tokens, and no tokenizer is loaded
        (a host hook, whose limit is in characters); ``since``: only what changed after that mark;
        ``outside``: a session whose own events the recent ones leave out.
        """
        from .sessions import tokens
        from .sessions.context import resume

        counter = tokens.BYTES if count_bytes else None
        return resume(self, scope, query=query, token_budget=token_budget, target_model=target_model,
                      session_id=session_id, upkeep=self._upkeep, counter=counter, since=since,
                      outside=outside)  # fmt: skip

    def scope_of(self, record_id: str) -> Scope | None:
        """The scope of the event or memory with this ID (unique in the archive), None when none holds it."""
        return events.scope_of(self.db, record_id)

    def forget_preview(self, scope: Scope, record_id: str, *, also: bool = False) -> Preview:
        """What forget would delete, without deleting anything (forget.preview)."""
        from .lifecycle import forget as forgetting

        return forgetting.preview(self.db, scope, record_id, also=also)

    # -- extraction by a model the edge asks (MCP 2026-07-28 sampling) --------------------------------

    def extraction_prompt(self, sequence: int) -> tuple[str, str, dict[str, Any], list[int]]:
        """The system and user messages, the answer's JSON schema, and what the model is shown (row IDs,
        for extract_answer), that extracting this event would send (MCP 2026-07-28 sampling)."""
        from .lifecycle import extract, extract_schema

        event = events.load(self.db, sequence)
        prompt = extract.build_prompt(self.db, event)
        return prompt.system, prompt.user, extract_schema.for_event(event.text), prompt.shown

    def extract_answer(self, sequence: int, answer: str, label: str, shown: list[int] | None = None) -> Outcome:
        """Extract the event from a model's answer to extraction_prompt (`shown`: what it returned with it):
        the same checks and states; an answer to a prompt that has changed since is dropped (pending)."""
        from .lifecycle import extract
        from .providers.base import Answered

        outcome = extract.run(self.db, Answered(answer, label), sequence, shown)
        if self.settings.embedder != "none":
            self.indexer.notify()
        return outcome

    # -- personas --------------------------------------------------------------------------------

    def persona(self, persona_id: str) -> PersonaVersion | None:
        """The current core persona, or None when none is set."""
        from .archive import personas

        return personas.current(self.db, persona_id)

    def persona_history(self, persona_id: str) -> list[PersonaVersion]:
        """Every version of the core persona, oldest first."""
        from .archive import personas

        return personas.history(self.db, persona_id)

    def set_persona(self, persona_id: str, text: str) -> tuple[PersonaVersion, bool]:
        """Store a new version of the core persona unless it equals the current one; (version, changed)."""
        from .archive import personas

        return personas.set_text(self.db, persona_id, text)

    def persona_with_memories(self, persona_id: str) -> tuple[PersonaVersion | None, list[Memory]]:
        """The core persona and the persona memories (newest first), read in one snapshot."""
        from .archive import personas

        with self.db.read():
            return personas.current(self.db, persona_id), personas.persona_memories(self.db, persona_id)

    def current_memories(self, scope: Scope) -> list[Memory]:
        """Every current memory of the scope (neither revoked nor superseded), newest first."""
        scope = Scope(*validate.scope(scope.persona_id, scope.project_id))
        with self.db.read():  # a LIMIT that takes every row, on SQLite and PostgreSQL alike
            return memories.current(self.db, scope, limit=2**31 - 1)

    # -- administration: stats, export/import, reindex, extraction ---------------------------------

    def stats(self, persona_id: str | None = None, project_id: str | None = None) -> ArchiveStats:
        """Counts per scope (stats.collect) with the configured embedder's vector count."""
        from .admin import stats as archive_stats

        embedder = self.embedder
        result = archive_stats.collect(
            self.db, vector_model=embedder.model_id if embedder else None, persona_id=persona_id, project_id=project_id
        )
        if self.settings.extractor != "sampling":
            return result
        from .lifecycle import sampling_status

        advice = sampling_status.advice(sampling_status.read(self.settings.db_path))
        return dataclasses.replace(result, warnings=(advice,) if advice else ())

    def count_records(self, persona_id: str | None, project_id: str | None) -> dict[str, int]:
        """How many records of each type an export of this filter would write."""
        from .admin import portability

        return portability.count_records(self.db, persona_id, project_id)

    def export_lines(self, persona_id: str | None, project_id: str | None) -> Iterator[str]:
        """The export, one JSON line at a time (portability.export_lines)."""
        from .admin import portability

        return portability.export_lines(self.db, persona_id, project_id)

    def prepare_import(self) -> None:
        """Load the import code (it stays off the hooks' path until then). The CLI calls this before it
        shows its progress line, so a Ctrl-C after that line lands in reading the file, as before."""
        from .admin import portability  # noqa: F401

    def import_lines(
        self, stream: IO[bytes], *, dry_run: bool = False, progress: Callable[[int], None] | None = None
    ) -> ImportReport:
        """Import an export file in one transaction (portability.import_lines); then embed what came in."""
        from .admin import portability

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
        from .admin import history_store

        return history_store.store(self.db, messages, report, persona, project, dry_run=dry_run, progress=progress)

    def tombstone_count(self) -> int:
        """How many forgotten records the archive keeps out (archive/tombstones.py)."""
        from .archive import tombstones

        return tombstones.count(self.db)

    def drop_tombstones(self) -> int:
        """Delete every tombstone and their key; return how many there were (tombstones.drop)."""
        from .archive import tombstones

        return tombstones.drop(self.db)

    def reindex_fulltext(self, *, missing_only: bool, progress: Progress | None = None) -> RebuildResult:
        """Write the full-text rows again (reindex.rebuild_fulltext)."""
        from .index import reindex

        return reindex.rebuild_fulltext(self.db, missing_only=missing_only, progress=progress)

    def reindex_vectors(self, *, missing_only: bool, progress: Progress | None = None) -> int:
        """Embed again every item (or those lacking a vector of the configured model); return how many."""
        from .index import reindex

        return reindex.rebuild_vectors(self.indexer, missing_only=missing_only, progress=progress)

    def embed_missing(self, progress: Progress | None = None) -> int:
        """Embed, synchronously, every item lacking a vector of the configured model (indexer.index_pending)."""
        from .index import indexer as indexing

        return indexing.index_pending(self.indexer, progress)

    def catch_up(self) -> bool:
        """Embed in the background what other processes recorded since the last call; True when they did."""
        return self.background.catch_up()

    def warm_injection(self) -> None:
        """Ready a server for the prompt hooks' semantic requests (its embedder loaded, backlog embedding)."""
        self.background.warm(self)

    def retry_queue(self, persona_id: str | None = None, project_id: str | None = None) -> list[int]:
        """Sequences of the pending and failed events of a scope (None: all), in recording order."""
        return events.retry_queue(self.db, persona_id, project_id)

    def requeue(self, sequences: Sequence[int]) -> None:
        """Make these events eligible for extraction at once (their backoff and attempts reset)."""
        from .archive import claims

        claims.requeue(self.db, sequences)

    def drain(
        self, scope: Scope | None, report: Callable[[Outcome], bool], *, follow: bool = False, patient: bool = True
    ) -> None:
        """Run the extraction worker over the pending events of a scope (None: all); see Worker.drain."""
        self.worker.drain(scope, report, follow=follow, patient=patient)
