"""No input can lock the store: every time is inside the supported range and every
float is finite, at the boundary (EventLog.append, to_micros, parse_time)."""

from __future__ import annotations

import math
import re
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from eventstore import (
    DecayApplied,
    DeletionCriteria,
    DeletionRequested,
    EntriesAccessed,
    EntryRecorded,
    EventLog,
    InvalidEventError,
    InvalidInputError,
    PurgeCompleted,
    RetentionApplied,
    format_micros,
    parse_time,
    to_micros,
)
from eventstore.timeutil import MAX_MICROS

LAST = "9999-12-31T23:59:59.999999Z"


def recorded(occurred_at: int) -> EntryRecorded:
    """An entry that happened at ``occurred_at``."""
    return EntryRecorded(entry_id="e1", kind="message", content="x", occurred_at=occurred_at)


def test_the_supported_range_ends_with_year_9999() -> None:
    """MAX_MICROS is the last microsecond of 9999 UTC, and it formats back."""
    assert to_micros(LAST) == MAX_MICROS and format_micros(MAX_MICROS) == LAST
    assert to_micros(datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)) == MAX_MICROS


@pytest.mark.parametrize("value", [0, MAX_MICROS, "1970-01-01T00:00:00Z", LAST,
                                   "9999-12-31T23:59:59.999999+00:00"])
def test_the_boundaries_are_accepted(value: int | str) -> None:
    """Both ends of the range, as ints and as ISO times."""
    assert to_micros(value) in (0, MAX_MICROS)


@pytest.mark.parametrize("value", [
    -1, MAX_MICROS + 1, 2**63 + 5, 2**70,
    "1969-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999-00:01",
    datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
    datetime(9999, 12, 31, 23, 59, tzinfo=timezone(-timedelta(hours=1))),
])
def test_one_past_either_end_is_refused(value: Any) -> None:
    """One microsecond (or one zone) past the range is refused, naming the range."""
    with pytest.raises(InvalidInputError, match="outside the supported range"):
        to_micros(value)
    if isinstance(value, str):
        with pytest.raises(InvalidInputError, match=re.escape(LAST)):
            parse_time(value)


def test_the_log_accepts_the_last_supported_time(log: EventLog) -> None:
    """An entry at MAX_MICROS is appended and reads back."""
    seq = log.append("s:a", [recorded(MAX_MICROS), recorded(0)], actor="t").first_seq
    assert log.get(seq).event == recorded(MAX_MICROS) and log.verify().ok


@pytest.mark.parametrize("event", [
    recorded(MAX_MICROS + 1),
    recorded(2**63 + 5),
    recorded(-1),
    EntriesAccessed(entry_ids=("e1",), at=MAX_MICROS + 1),
    RetentionApplied(as_of=MAX_MICROS + 1, policy={}),
    RetentionApplied(as_of=0, policy={"message": 10**9}),
    DeletionRequested(request_id="r1", criteria=DeletionCriteria(before=MAX_MICROS + 1),
                      reason="x", requested_by="u1"),
], ids=["occurred_at", "occurred_at-2**63", "negative", "accessed-at", "retention-as_of",
        "retention-days", "criteria-before"])
def test_the_log_refuses_times_past_the_range(log: EventLog, event: Any) -> None:
    """Every time field of the catalogue is checked when appended; nothing is written."""
    with pytest.raises(InvalidEventError):
        log.append("s:a", [event], actor="t")
    assert log.head().seq == 0


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
@pytest.mark.parametrize("field", ["rate", "access_boost", "importance_boost", "seconds", "importance"])
def test_the_log_refuses_floats_that_are_not_finite(log: EventLog, bad: float, field: str) -> None:
    """inf and nan are refused in every float field (decay rates and boosts, a purge's
    seconds, an importance); the largest finite float is accepted where no tighter
    bound applies."""
    def event(value: float) -> Any:
        if field == "rate":
            return DecayApplied(as_of=0, rates={"message": value})
        if field in ("access_boost", "importance_boost"):
            return DecayApplied(as_of=0, rates={}, **{field: value})
        if field == "seconds":
            return PurgeCompleted(request_ids=(), files_rewritten=(), bytes_scanned=0, verified=True,
                                  seconds=value)
        return EntryRecorded(entry_id="e1", kind="message", content="x", occurred_at=0, importance=value)

    with pytest.raises(InvalidEventError):
        log.append("system", [event(bad)], actor="t")
    if field != "importance":
        log.append("system", [event(sys.float_info.max)], actor="t")
        assert log.verify().ok


def test_a_store_with_an_out_of_range_time_cannot_be_made(tmp_path: Path) -> None:
    """The reported lock-up (occurred_at=2**63+5 accepted, then every read failing) no
    longer happens: the append is refused and the log stays readable."""
    with EventLog.open(tmp_path / "log") as log:
        log.append("s:a", [recorded(1)], actor="t")
        with pytest.raises(InvalidEventError, match="occurred_at"):
            log.append("s:a", [recorded(2**63 + 5)], actor="t")
        assert [r.event for r in log.read()] == [recorded(1)]
