"""Background CPU priority for threads (Linux: the nice value is per thread and inherited by the
threads a thread starts)."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

log = logging.getLogger(__name__)

# The nice value added for background work. Embedding then takes only CPU that nothing else wants:
# at the same priority, memory_record over stdio took 13 ms p50 instead of 5 while the indexer
# embedded on 2 shared cores.
BACKGROUND_NICE = 10

T = TypeVar("T")


def lower_thread_priority(step: int = BACKGROUND_NICE) -> None:
    """Raise the calling thread's nice value by `step` (Linux only: elsewhere the call would address
    a process, not a thread); a refusal only costs latency, so it is logged and ignored."""
    if sys.platform != "linux":
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + step))
    except OSError as exc:
        log.info("could not lower a thread's priority: %s", exc)


def in_background_thread(build: Callable[[], T]) -> T:
    """`build()` run in a new thread at background priority, so the worker threads it starts inherit
    that priority (the caller's own thread keeps its own); its result, or its exception raised here."""
    with ThreadPoolExecutor(1, "memlikehuman-load", initializer=lower_thread_priority) as pool:
        return pool.submit(build).result()
