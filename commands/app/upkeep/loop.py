"""Maintenance on a schedule: :func:`run_every` runs ``maintain`` every interval
until it is told to stop (``memlog maintain --every 1h``; a server runs the
same loop in a thread).

**Each run opens the store and closes it.** Between runs the loop holds
nothing: no environment, no lock, no descriptor. So every run reads the
settings in force then (``config.toml`` edited between runs counts from the
next one), sees a store another process replayed or refitted meanwhile, and
leaves the directory free for anything that wants it alone. Opening costs
little next to the shortest interval, one second (about 6 ms for a store of
100k entries).

**The schedule.** Runs start one interval apart (start to start); a run that
takes longer than the interval is followed by the next at once. Runs never
overlap, and a run of ``memlog maintain`` elsewhere at the same time makes this
run fail with ``E_LOCK_TIMEOUT`` (see :mod:`commands.app.upkeep.maintain`) and the
loop goes on.

**Failures.** A run that raises is one :class:`Run` with ``error`` (its code
and message; memlog's messages hold ids and figures, never content), logged
with the code, and the loop goes on to the next interval.

**Stopping.** ``stop`` (a :class:`threading.Event`) is checked between runs
and wakes the wait at once: a run in progress finishes first.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

import msgspec

from eventstore import E_INTERNAL, E_STORAGE_IO, InvalidInputError, MemlogError, now_micros

from .. import log as _log
from .maintain import MaintainReport

__all__ = ["MAX_INTERVAL", "MIN_INTERVAL", "Maintainer", "Opener", "Run", "check_interval", "parse_interval",
           "run_every", "run_once"]

MIN_INTERVAL = 1.0  # seconds
MAX_INTERVAL = 366 * 86_400.0  # a year and a day: a weekly or monthly purge fits
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_DURATION = re.compile(r"([0-9]{1,9}(?:\.[0-9]{1,6})?)([smhd]?)")


class Maintainer(Protocol):
    """What a run needs of an open store: :class:`~commands.memory.MemoryLog` is one."""

    def maintain(self, *, dry_run: bool = False) -> MaintainReport:
        """One run of every step."""
        ...


# Opens the store for one run, closing it when the block ends (``lambda: MemoryLog.open(path)``).
Opener = Callable[[], AbstractContextManager[Maintainer]]


class Run(msgspec.Struct, frozen=True):
    """One run of the schedule: its number (1, 2, ...), when it started
    (microseconds since the epoch, UTC), and its report or its error
    (``{"code", "message"}``)."""

    run: int
    at: int
    report: MaintainReport | None = None
    error: dict[str, str] | None = None

    @property
    def ok(self) -> bool:
        """Whether the run ended and no item of it failed."""
        return self.error is None and self.report is not None and not self.report.failed

    def to_dict(self) -> dict[str, Any]:
        """One JSON-ready line: ``run``, ``error`` (null) and the report's fields
        (``at`` its clock, ``due``, ``failed``, ...), or ``run``, ``at`` and
        ``error`` alone when the run raised."""
        data: dict[str, Any] = {"run": self.run, "at": self.at, "error": self.error}
        if self.report is not None:
            data.update({**msgspec.to_builtins(self.report), "due": self.report.due,
                         "failed": self.report.failed})
        return data


def parse_interval(text: str) -> float:
    """Seconds of a duration such as ``90s``, ``15m``, ``1h``, ``1.5h``, ``7d``
    (a bare number is seconds), from 1 s to 366 days; anything else raises
    :class:`~eventstore.InvalidInputError` (``E_SCHEMA_INVALID``)."""
    found = _DURATION.fullmatch(text.strip().lower()) if isinstance(text, str) else None
    if found is None:
        raise InvalidInputError("an interval is a number and a unit: s, m, h or d (such as 30s, 15m, 1h, 7d)")
    return check_interval(float(found[1]) * _UNITS[found[2] or "s"])


def check_interval(seconds: object) -> float:
    """``seconds`` as a float, refused outside 1 s to 366 days."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) \
            or not MIN_INTERVAL <= seconds <= MAX_INTERVAL:
        got = f" (got {seconds} s)" if isinstance(seconds, int | float) else ""
        raise InvalidInputError(f"the interval must be from {MIN_INTERVAL:.0f} s to "
                                f"{MAX_INTERVAL / 86_400:.0f} days{got}")
    return float(seconds)


def run_once(opener: Opener, number: int, *, dry_run: bool = False) -> Run:
    """Open the store, run ``maintain`` once, close it; an error is the run's result."""
    at = now_micros()
    try:
        with opener() as store:
            report = store.maintain(dry_run=dry_run)
    except MemlogError as exc:
        return _failed(number, at, exc.code, exc.message)
    except OSError as exc:  # the machine's answer (a full disk, permissions)
        return _failed(number, at, E_STORAGE_IO, f"{type(exc).__name__} (errno {exc.errno})")
    except Exception as exc:  # a bug: named by its type only (its message might quote content)
        return _failed(number, at, E_INTERNAL, f"internal error ({type(exc).__name__})")
    _log.info("maintain run", run=number, due=report.due, failed=report.failed, seconds=report.seconds)
    return Run(number, at, report)


def _failed(number: int, at: int, code: str, message: str) -> Run:
    _log.warning("maintain run failed", run=number, code=code)
    return Run(number, at, error={"code": code, "message": message})


def run_every(opener: Opener, interval: float, stop: threading.Event, *,
              on_run: Callable[[Run], None] | None = None, dry_run: bool = False) -> int:
    """Run ``maintain`` through ``opener`` every ``interval`` seconds until
    ``stop`` is set; ``on_run`` is given each :class:`Run` as it ends (an
    exception it raises ends the loop). Returns how many runs there were."""
    seconds = check_interval(interval)
    _log.info("maintain schedule started", interval=seconds, dry_run=dry_run)
    runs = 0
    due_at = time.monotonic()
    while not stop.is_set():
        runs += 1
        result = run_once(opener, runs, dry_run=dry_run)
        if on_run is not None:
            on_run(result)
        due_at = max(due_at + seconds, time.monotonic())
        if stop.wait(due_at - time.monotonic()):
            break
    _log.info("maintain schedule stopped", runs=runs)
    return runs
