"""Timestamps: parsing with a required offset, and the one UTC output format; the extraction worker's clock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from .errors import InvalidArgument


class Clock:
    """Unix seconds, and timed waits: what the extraction worker's leases, backoffs and polls read.

    An engine is given another clock only by a test that moves time on instead of sleeping out a
    backoff (tests/test_background_extraction.py).
    """

    def time(self) -> float:
        return time.time()

    def wait(self, condition: threading.Condition, until: Callable[[], bool], seconds: float) -> None:
        """Wait on `condition` (held by the caller) until `until()` holds or `seconds` have passed."""
        condition.wait_for(until, seconds)


def now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def parse(value: str, field: str) -> datetime:
    """Parse ISO 8601 with an explicit offset; raise InvalidArgument otherwise."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"{field} must be an ISO 8601 timestamp with an offset, e.g. 2026-11-30T09:15:00Z")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidArgument(
            f"{field} is not an ISO 8601 timestamp: use e.g. 2026-11-30T09:15:00+01:00 or ...Z"
        ) from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise InvalidArgument(
            f"{field} has no timezone offset: add one (e.g. 'Z' or '+01:00'); local time is never assumed"
        )
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise InvalidArgument(f"{field} is out of range once converted to UTC: use a year within 1-9999") from None


def parse_optional(value: str | None, field: str) -> datetime | None:
    """Like parse(), but None stays None."""
    return None if value is None else parse(value, field)


def format_utc(moment: datetime) -> str:
    """The stored and returned form: UTC, fixed width (sortable as text), ``Z`` suffix."""
    m = moment.astimezone(UTC)
    # Built by hand: strftime's %Y does not zero-pad years below 1000 on every platform.
    return f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}.{m.microsecond:06d}Z"


def stamp(value: str, field: str) -> str:
    """Parse an input timestamp and return its stored form."""
    return format_utc(parse(value, field))


def now_stamp() -> str:
    """The current time in stored form."""
    return format_utc(now())


# An occurred_at further ahead of this server's clock is reported: recall (as of now) cannot see it yet.
CLOCK_SKEW = timedelta(minutes=5)


def ahead_warning(occurred_at: str | None) -> tuple[str, ...]:
    """The warning for an occurred_at that recall (as of now) cannot see yet, if it is one."""
    if occurred_at is None:
        return ()
    ahead = parse(occurred_at, "occurred_at") - now()
    if ahead <= CLOCK_SKEW:
        return ()
    return (
        f"occurred_at {occurred_at} is {_duration(ahead)} ahead of this server's clock: memory_recall (as of now)"
        " will not find the event until then; if that is a mistake (clock skew, a wrong UTC offset), forget it"
        " with memory_forget and record it again with the right occurred_at",
    )


def _duration(span: timedelta) -> str:
    minutes = int(span.total_seconds() // 60)
    if minutes < 120:
        return f"{minutes} minutes"
    hours = minutes // 60
    return f"{hours} hours" if hours < 48 else f"{hours // 24} days"
