"""Times in memlog: integer microseconds since the Unix epoch, UTC.

Inputs are ISO 8601 strings *with* a zone (``2026-01-11T10:00:00Z``), aware
datetimes, or integers (already microseconds). Naive times are refused: an
audit trail cannot guess a zone.

The supported range is the Unix epoch (0) to the last microsecond of year
9999 UTC (:data:`MAX_MICROS`): what a datetime and an ISO 8601 time can name,
so every stored time can be formatted back. Times outside it are refused
here, at the boundary, and by the event catalogue's ``Micros`` type.
"""

from __future__ import annotations

import functools
import time
from datetime import UTC, datetime
from typing import Final, NamedTuple

from .errors import InvalidInputError, shown

__all__ = [
    "MAX_MICROS",
    "Point",
    "format_micros",
    "now_micros",
    "parse_point",
    "parse_time",
    "to_micros",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_MICROS: Final = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z
_RANGE = "1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z"


def now_micros() -> int:
    """The wall clock, in microseconds (for the write side only)."""
    return time.time_ns() // 1000


def parse_time(text: str) -> int:
    """Parse an ISO 8601 time with a zone into microseconds."""
    raw = text.strip()
    try:
        value = datetime.fromisoformat(raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw)
    except ValueError:
        raise InvalidInputError(
            f"invalid time {shown(text)}: use ISO 8601 with a zone, e.g. 2026-01-11T10:00:00Z"
        ) from None
    return to_micros(value)


class Point(NamedTuple):
    """A point in the log as the user named it: a seq, or a time to map to one."""

    seq: int | None
    time: int | None


def parse_point(value: datetime | str | int) -> Point:
    """Parse ``@N`` (log seq N), an int seq, or a time (ISO 8601 with a zone, an
    aware datetime). The one parser of points, for the CLI and the library;
    :meth:`eventstore.EventLog.resolve_point` maps a point to a seq."""
    if isinstance(value, str) and value.strip().startswith("@"):
        raw = value.strip()[1:]
        if not raw.isdigit() or not raw.isascii():
            raise InvalidInputError(f"invalid seq {shown(value)}: use @N with N >= 0, e.g. @120")
        return Point(int(raw), None)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise InvalidInputError(f"a seq cannot be negative (got {value})")
        return Point(value, None)
    if isinstance(value, str | datetime):
        return Point(None, to_micros(value))
    raise InvalidInputError(
        f"a point is @SEQ, an int seq, an ISO 8601 time or a datetime, not {type(value).__name__}")


def to_micros(value: datetime | str | int) -> int:
    """Normalise a time given as a datetime, an ISO string or microseconds;
    :class:`InvalidInputError` outside the supported range."""
    if isinstance(value, bool):
        raise InvalidInputError("a time cannot be a boolean")
    if isinstance(value, int):
        return _in_range(value)
    if isinstance(value, str):
        return parse_time(value)
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidInputError("a time must carry a zone (e.g. 2026-01-11T10:00:00Z)")
        delta = value - _EPOCH
        return _in_range((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds)
    raise InvalidInputError(f"a time must be an ISO string, a datetime or an int, not {type(value).__name__}")


def _in_range(micros: int) -> int:
    if not 0 <= micros <= MAX_MICROS:
        raise _out_of_range(f"{micros} (microseconds)")
    return micros


def _out_of_range(what: str) -> InvalidInputError:
    return InvalidInputError(f"time {what} is outside the supported range ({_RANGE})")


def format_micros(micros: int) -> str:
    """Format microseconds as ISO 8601 UTC with a ``Z``."""
    seconds, rest = divmod(micros, 1_000_000)
    stamp = _second_stamp(seconds)
    return f"{stamp}.{rest:06d}Z" if rest else f"{stamp}Z"


@functools.lru_cache(maxsize=4096)
def _second_stamp(seconds: int) -> str:
    # Results often share a second (one transaction records many entries).
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
