"""What recall reads (Sources) and what it hands back for its caller to act on (Upkeep)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..records import Kind, Scope

if TYPE_CHECKING:
    from ..archive.connection import Connection
    from ..config import Settings
    from ..index.vectors import VectorCache
    from ..providers.base import Embedder


class Sources(Protocol):
    """What recall reads: the archive, the vector cache, the settings and the query embedder."""

    @property
    def db(self) -> Connection: ...
    @property
    def vectors(self) -> VectorCache: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def embedder(self) -> Embedder | None: ...


@dataclass(frozen=True)
class Upkeep:
    """What a recall noticed for its caller to act on; recall itself writes nothing.

    `stale_events`: cached vectors (in `scope`) of events deleted since the cache loaded them;
    `unindexed`: events in scope lack a vector of the query's model.
    """

    scope: Scope
    stale_events: tuple[int, ...] = ()
    unindexed: bool = False


@dataclass
class Dense:
    """What a recall's dense step saw: each candidate's best cosine by (kind, ID)."""

    cosines: dict[tuple[Kind, int], float] = field(default_factory=dict)
