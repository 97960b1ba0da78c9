"""Background extraction: pending events -> memories, off the caller's critical path.

``memory_record`` commits the event and wakes the worker; it waits for its own event's extraction
at most ``MEMLIKEHUMAN_EXTRACTION_WAIT`` seconds (0: not at all). The worker's threads (bounded:
``concurrency``) each claim the oldest eligible pending event in the archive (``claims``: one scope
at a time, in recording order, leases shared by every process on the archive), extract it with
``extract.run`` and release the claim. The queue is the archive itself: pending events, however
many, cost no memory, and events recorded by other processes or before a restart are found too.

A transient failure (the provider could not answer in time: timeouts, 429, 5xx, refused
connections) leaves the event pending with a backoff; an unusable answer leaves it failed (as
before). ``close`` stops the threads within a second: a model call still running is abandoned (its
thread is a daemon and can no longer write once the archive is closed) and its claim is released,
so the event is pending for the next worker.

The same ``Worker`` runs in the server, behind ``memlikehuman extract [--follow]`` and ``retry``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..archive import claims
from ..clock import Clock
from ..errors import MemLikeHumanError, NotFound
from ..providers.base import Extractor
from ..records import Scope
from . import extract
from . import extract_batch as batching

if TYPE_CHECKING:
    from ..archive.connection import Connection
    from ..config import Settings

log = logging.getLogger("memlikehuman.worker")

DEFAULT_CONCURRENCY = 2
# How often an idle worker looks for events it was not told about (other processes, backoffs).
POLL_SECONDS = 2.0
STOP_SECONDS = 1.0
REMEMBERED = 4096  # attempts remembered for waiters (sequence -> finished attempts)


class Worker:
    """Threads that extract pending events of one archive; see the module docstring.

    Built from the pieces it needs: the archive, the settings, a function returning the process's
    extractor (None when none is configured) and one to call after memories were written. Its
    leases, backoffs and polls read `clock` (a test's may move time on).
    """

    def __init__(
        self,
        db: Connection,
        settings: Settings,
        extractor: Callable[[], Extractor | None],
        extracted: Callable[[], None],
        concurrency: int = DEFAULT_CONCURRENCY,
        clock: Clock | None = None,
    ) -> None:
        self.db, self.extractor, self.extracted = db, extractor, extracted
        self.clock = clock or Clock()
        self.concurrency = max(1, concurrency)
        #: events per model call (MEMLIKEHUMAN_EXTRACTION_BATCH; 1: no batching)
        self.batch = max(1, settings.extraction_batch)
        self.owner = claims.owner_id()
        # A claim outlives the longest extraction (a call and one repair call, each bounded by the
        # timeout) with room to spare: a live worker never loses its claim to another.
        self.lease = 2 * settings.timeout + 30.0
        self._changed = threading.Condition()
        self._wakeups = 0
        # sequence -> (attempts finished here, the last outcome): what waiters look at
        self._finished: OrderedDict[int, tuple[int, extract.Outcome]] = OrderedDict()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        #: the scopes the threads may extract (None: every scope); an extractor that is one client's
        #: session (MCP sampling) sees only the scopes that client works in
        self.only: Callable[[], list[Scope]] | None = None

    @property
    def running(self) -> bool:
        return bool(self._threads) and not self._stopping.is_set()

    def start(self) -> None:
        """Start the threads (once); a no-op without an extractor or after close."""
        with self._changed:
            if self._threads or self._stopping.is_set() or self.extractor() is None:
                return
            claims.reap_dead(self.db, self.clock.time())
            claims.reset_exhausted(self.db)
            for number in range(self.concurrency):
                thread = threading.Thread(target=self._loop, name=f"memlikehuman-extract-{number}", daemon=True)
                self._threads.append(thread)
                thread.start()

    def notify(self) -> None:
        """Say that a new pending event exists; returns at once."""
        with self._changed:
            self._wakeups += 1
            self._changed.notify_all()

    def wait_for(self, sequence: int, timeout: float) -> extract.Outcome | None:
        """Wait until an attempt on the event finishes here (its outcome), it is done elsewhere, or timeout."""
        if timeout <= 0:
            return None
        deadline = time.monotonic() + timeout
        seen = self._attempts(sequence)
        while not self._stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or self._state(sequence) != "pending":
                break
            with self._changed:
                self._changed.wait_for(
                    lambda: self._attempts(sequence) > seen or self._stopping.is_set(), min(left, POLL_SECONDS)
                )
            if self._attempts(sequence) > seen:
                break
        with self._changed:
            done = self._finished.get(sequence)
        return done[1] if done is not None and done[0] > seen else None

    def close(self) -> None:
        """Stop the threads within STOP_SECONDS and release this worker's claims."""
        self._stopping.set()
        with self._changed:
            self._changed.notify_all()
        deadline = time.monotonic() + STOP_SECONDS
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        busy = [thread.name for thread in self._threads if thread.is_alive()]
        if busy:
            log.info("extraction stopped with a model call still running (%s): the event stays pending", busy)
        try:
            claims.release_all(self.db, self.owner)
        except MemLikeHumanError as exc:
            log.warning("could not release extraction claims (their lease ends them): %s", exc)

    # -- one step, for the threads and the CLI -----------------------------------------------------

    def step(self, scope: Scope | None = None, *, in_order: bool = True) -> list[extract.Outcome]:
        """Claim the next eligible event (of one scope, or any), extract it, release it.

        With batching, the short pending events that directly follow it in its session go along in
        the same model call. Returns the outcomes (one per event), empty when nothing is eligible now.
        """
        db, extractor = self.db, self.extractor()
        if extractor is None:
            return []
        now = self.clock.time()
        sequence = claims.claim_next(db, self.owner, self.lease, scope, in_order=in_order, now=now)
        if sequence is None:
            return []
        group = [sequence]
        if self.batch > 1:
            short = batching.SHORT_CHARS
            group += claims.claim_following(db, self.owner, self.lease, sequence, self.batch - 1, short, now)
        results: dict[int, extract.Outcome] = {}
        finished = False
        try:
            results = self._extract(extractor, group)
            finished = True
        finally:
            if finished or not self._stopping.is_set():
                for member in group:
                    claims.release(db, self.owner, member, _result(results.get(member)), self.clock.time())
        outcomes = [results[member] for member in group if member in results]
        for member, outcome in results.items():
            self._finish(member, outcome)
        if any(outcome.state == "complete" for outcome in outcomes):
            self.extracted()
        return outcomes

    def _extract(self, extractor: Extractor, group: list[int]) -> dict[int, extract.Outcome]:
        db = self.db
        forgotten = extract.Outcome("forgotten", None, ())  # deleted meanwhile; its claim went with it
        try:
            if len(group) == 1:
                return {group[0]: extract.run(db, extractor, group[0])}
            found = batching.run_batch(db, extractor, group)
        except NotFound:
            return {group[0]: forgotten}
        return {member: found.get(member, forgotten) for member in group}

    def drain(
        self,
        scope: Scope | None = None,
        report: Callable[[extract.Outcome], bool] | None = None,
        *,
        follow: bool = False,
        patient: bool = True,
    ) -> None:
        """Extract in the calling thread until nothing is eligible (or, with follow, until close).

        ``report`` sees each outcome; returning False stops. Patient (``extract``): in recording
        order, waiting out backoffs and other workers' claims. Impatient (``retry``): each eligible
        event once, now, and done when none is left.
        """
        claims.reap_dead(self.db, self.clock.time())
        while not self._stopping.is_set():
            outcomes = self.step(scope, in_order=patient)
            if outcomes:
                if report is not None and not all([report(outcome) for outcome in outcomes]):
                    return
                continue
            if not follow and (not patient or not self._backing_off(scope)):
                return
            self._stopping.wait(POLL_SECONDS if follow else 0.5)

    # -- internals ---------------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stopping.is_set():
            with self._changed:
                wakeups = self._wakeups
            try:
                outcomes = self._step_allowed()
            except Exception as exc:  # the thread's top level: log, wait, never crash the server
                if self._stopping.is_set():
                    return
                log.warning("background extraction failed, trying again in %gs: %s", POLL_SECONDS, exc)
                outcomes = []
            if outcomes:
                continue
            try:
                claims.reap_dead(self.db, self.clock.time())  # a killed process's claims need not wait for their lease
            except MemLikeHumanError as exc:
                log.debug("could not look for claims of killed processes: %s", exc)
            with self._changed:
                self.clock.wait(
                    self._changed,
                    lambda: self._wakeups != wakeups or self._stopping.is_set(),  # noqa: B023 (read at once)
                    POLL_SECONDS,
                )

    def _step_allowed(self) -> list[extract.Outcome]:
        if self.only is None:
            return self.step()
        for scope in self.only():
            if outcomes := self.step(scope):
                return outcomes
        return []

    def _attempts(self, sequence: int) -> int:
        with self._changed:
            return self._finished.get(sequence, (0, None))[0]

    def _finish(self, sequence: int, outcome: extract.Outcome) -> None:
        with self._changed:
            count = self._finished.pop(sequence, (0, outcome))[0]
            self._finished[sequence] = (count + 1, outcome)
            while len(self._finished) > REMEMBERED:
                self._finished.popitem(last=False)
            self._changed.notify_all()

    def _state(self, sequence: int) -> str:
        row = self.db.one("SELECT extraction_state FROM events WHERE sequence = ?", (sequence,))
        return "forgotten" if row is None else str(row["extraction_state"])

    def _backing_off(self, scope: Scope | None) -> bool:
        """Whether some pending event (of the scope) waits out a backoff or another worker's claim."""
        sql = (
            "SELECT count(*) FROM extraction_claims c JOIN events e ON e.sequence = c.event_sequence"
            " WHERE e.extraction_state = 'pending' AND c.attempts < ?"
            " AND (c.retry_at > ? OR c.claimed_until >= ?)"
        )
        now = self.clock.time()
        params: tuple[object, ...] = (claims.MAX_ATTEMPTS, now, now)
        if scope is not None:
            sql += " AND c.persona_id = ? AND c.project_id = ?"
            params += (scope.persona_id, scope.project_id)
        return bool(self.db.scalar(sql, params))


def _result(outcome: extract.Outcome | None) -> str:
    """How an attempt ended, for its claim (None: it raised, which counts as a transient failure)."""
    if outcome is None or outcome.transient:
        return "transient"
    return "permanent" if outcome.state == "pending" else "done"
