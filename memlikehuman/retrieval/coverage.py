"""What a recall could see: exact counts of the scope's events, and the warnings they call for."""

from __future__ import annotations

from ..archive import claims
from ..archive.connection import Connection
from ..records import Coverage, Scope


def count(db: Connection, scope: Scope, model: str | None, as_of: str) -> Coverage:
    """Events in scope, pending/failed/in flight, without a vector of `model`, after `as_of`.

    Exact counts kept by triggers (migration m003): two primary-key reads, and one index range.
    """
    row = db.one(
        "SELECT events, pending, failed FROM scope_counts WHERE persona_id = ? AND project_id = ?",
        (scope.persona_id, scope.project_id),
    )
    total, pending, failed = (row["events"], row["pending"], row["failed"]) if row else (0, 0, 0)
    with_vectors = 0
    if model is not None:
        with_vectors = (
            db.scalar(
                "SELECT events FROM scope_vector_counts WHERE persona_id = ? AND project_id = ? AND model = ?",
                (scope.persona_id, scope.project_id, model),
            )
            or 0
        )
    later = db.scalar(
        "SELECT count(*) FROM events WHERE persona_id = ? AND project_id = ? AND occurred_at > ?",
        (scope.persona_id, scope.project_id, as_of),
    )
    in_flight = claims.in_flight(db, scope) if pending else 0
    return Coverage(int(total), int(pending), int(failed), int(total) - int(with_vectors), int(later or 0), in_flight)


def warnings(coverage: Coverage, mode: str, model: str | None, *, as_of_given: bool) -> list[tuple[str, str]]:
    """What the counts mean for the results, as (kind, warning): `pending`, `failed`, `future` (events dated
    after now) and `without_vectors` describe the scope whatever was asked (STANDING); `after_as_of`
    (events after a given as_of) this query."""
    out: list[tuple[str, str]] = []
    if coverage.events_pending:
        out.append((
            "pending",
            f"{_events(coverage.events_pending)} pending extraction: results may be incomplete"
            " (their original text is searched and shown in raw_fallback"
            + (f"; {coverage.events_in_flight} being extracted now)" if coverage.events_in_flight else ")"),
        ))  # fmt: skip
    if coverage.events_failed:
        out.append((
            "failed",
            f"{_events(coverage.events_failed, 'has', 'have')} failed extraction: results may be incomplete"
            " (their original text is searched and shown in raw_fallback; `memlikehuman retry` tries again)",
        ))  # fmt: skip
    if coverage.events_after_as_of:
        later = _events(coverage.events_after_as_of, "occurred", "occurred")
        if as_of_given:
            out.append(("after_as_of", f"{later} after as_of and were not searched: use a later as_of to include them"))
        else:
            out.append((
                "future",
                f"{later} after now (dated in the future) and were not searched: check the clock and the UTC"
                " offset of the host that recorded them; they are found once their time has come",
            ))  # fmt: skip
    if mode != "fast" and coverage.events_without_vectors:
        out.append((
            "without_vectors",
            f"{_events(coverage.events_without_vectors, 'has', 'have')} no vector of {model} yet:"
            " semantic matching misses them (lexical matching still finds them); new events are embedded"
            " in the background, `memlikehuman reindex` embeds all",
        ))  # fmt: skip
    return out


STANDING = frozenset({"pending", "failed", "future", "without_vectors"})


def _events(number: int, singular: str = "is", plural: str = "are") -> str:
    """'1 event in scope is', '3 events in scope are': a count of events with its verb in the right number."""
    return f"{number} event in scope {singular}" if number == 1 else f"{number} events in scope {plural}"
