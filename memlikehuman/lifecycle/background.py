"""The engine's background parts, each built on first use: the vector cache, the indexer, the worker.

A hook records and recalls without an embedder or an extractor: built lazily, none of these
modules is imported on its path (tests/test_hook_startup.py, bench/hooks.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import Unavailable

if TYPE_CHECKING:
    from ..archive.connection import Connection
    from ..clock import Clock
    from ..config import Settings
    from ..index.indexer import Indexer
    from ..index.vectors import VectorCache
    from ..providers.base import Embedder, Extractor
    from ..retrieval.sources import Sources
    from .worker import Worker


class Background:
    """Builds the vector cache, the indexer and the extraction worker of one engine when first asked."""

    def __init__(
        self,
        db: Connection,
        settings: Settings,
        embedder: Callable[[], Embedder | None],
        extractor: Callable[[], Extractor | None],
        clock: Clock | None = None,
    ) -> None:
        self.db, self.settings, self.embedder, self.extractor = db, settings, embedder, extractor
        self.clock = clock  # the worker's (None: the real one)
        self.closed = False
        self._parts: dict[str, Any] = {}
        self._newest: tuple[int, int] | None = None  # catch_up's last look
        self._lock = threading.Lock()  # tool threads share the engine: each part is built once

    @property
    def vectors(self) -> VectorCache:
        return self._part("vectors")

    @property
    def indexer(self) -> Indexer:
        return self._part("indexer")

    @property
    def worker(self) -> Worker:
        return self._part("worker")

    def warm(self, sources: Sources) -> None:
        """Build the embedder and load its model (one call), then wake the indexer; a close under it (which
        stops the embedder) cuts it short, quietly."""
        from ..retrieval import injection

        try:
            injection.warm(sources)
            self.notify_indexer()
        except Unavailable:
            if not self.closed:
                raise

    def catch_up(self) -> bool:
        """Wake the indexer when the archive holds an event or a memory newer than at the last call (another
        process recorded it: a hook, the command line), or at the first call anything at all; True when it
        did. Without an embedder, only says so."""
        from ..index.indexer import newest

        now = newest(self.db)
        seen, self._newest = self._newest, now
        if now == (seen or (0, 0)):
            return False
        self.notify_indexer()
        return True

    def notify_indexer(self) -> None:
        """Indexer.notify, which does nothing without an embedder: then nothing is built either."""
        if self.settings.embedder != "none":
            self.indexer.notify()

    def close(self, *providers: Embedder | Extractor | None) -> None:
        """Stop the providers' calls still running, then the worker and the indexer, where they were built.

        So the close waits for neither: an extraction command still running is killed (its event stays
        pending), the local embedder ends the indexer's batch in progress, unwritten (embedded later).
        """
        self.closed = True
        for provider in providers:
            if provider is not None:
                provider.close()
        for name in ("worker", "indexer"):
            if name in self._parts:
                self._parts[name].close()

    def _part(self, name: str) -> Any:
        with self._lock:
            return self._built(name)

    def _built(self, name: str) -> Any:
        if name not in self._parts:
            self._parts[name] = self._build(name)
        return self._parts[name]

    def _build(self, name: str) -> Any:
        if name == "vectors":
            from ..index.vectors import VectorCache

            return VectorCache()
        if name == "indexer":
            from ..index.indexer import Indexer

            return Indexer(self.db, self._built("vectors"), self.settings, self.embedder)
        from .worker import Worker

        return Worker(self.db, self.settings, self.extractor, self._built("indexer").notify, clock=self.clock)
