"""The zero time and the clock every model default uses."""

from datetime import UTC, datetime

#: Go's zero ``time.Time``; written as ``0001-01-01T00:00:00Z`` where a time is missing.
ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)
