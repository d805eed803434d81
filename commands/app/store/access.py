"""Accesses recorded off the read path, in batches.

A search hands the ids it returned to the store's :class:`AccessRecorder`,
which keeps them in memory and returns at once; a background thread appends
them as one ``entries.accessed`` event every ``interval`` seconds, and
:meth:`AccessRecorder.close` (the store's close) appends what is left. So no
search waits for a durable write, and a burst of searches costs one append.

Each id is counted once per batch (a batch says "read since the last one"),
and the event's time is that of the batch's last access. Accesses are
feedback for the decay factor only: they never outrank a better text match
(see :mod:`projections.search.rank`). An access not yet flushed when the
process dies is lost, which costs nothing but a little decay boost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from eventstore import EntriesAccessed, EventLog, now_micros
from eventstore.logs import logger

__all__ = ["AccessRecorder"]



def _warning(event: str, **ids: Any) -> None:
    """Log at warning level when logging is configured (:mod:`eventstore.logs`)."""
    found = logger("memlog.access", logging.WARNING)
    if found is not None:
        found.warning(event, **ids)


_STREAM = "access"
_MAX_IDS = 4096  # ids per event; a larger batch is split


class AccessRecorder:
    """An in-process buffer of accessed entry ids, flushed in the background."""

    def __init__(self, log: EventLog, actor: str, interval: float = 1.0, enabled: bool = True) -> None:
        """``enabled=False`` (a read-only store): accesses are not recorded."""
        self._log = log
        self.actor = actor
        self._interval = interval
        self._pending: dict[str, None] = {}
        self._at = 0
        self._lock = threading.Lock()  # guards _pending and _at
        self._flushing = threading.Lock()  # one append at a time
        self._wake = threading.Event()
        self._closed = not enabled
        self._thread: threading.Thread | None = None

    def record(self, entry_ids: Iterable[str]) -> None:
        """Note an access to ``entry_ids`` now; returns without writing."""
        with self._lock:
            if self._closed:
                return
            self._pending.update(dict.fromkeys(entry_ids))
            self._at = now_micros()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="memlog-access", daemon=True)
                self._thread.start()

    @property
    def pending(self) -> int:
        """How many ids wait for the next flush."""
        return len(self._pending)

    def flush(self) -> int:
        """Append what is pending as ``entries.accessed`` events; returns the ids written."""
        with self._flushing:
            with self._lock:
                ids, at = tuple(self._pending), self._at
                self._pending = {}
            written = 0
            try:
                while ids:
                    chunk = ids[:_MAX_IDS]
                    self._log.append(_STREAM, [EntriesAccessed(entry_ids=chunk, at=at)], actor=self.actor)
                    written += len(chunk)
                    ids = ids[len(chunk):]
            except BaseException:
                with self._lock:  # keep what was not written for the next flush
                    self._pending = dict.fromkeys(ids) | self._pending
                    self._at = max(self._at, at)
                raise
            return written

    def close(self) -> None:
        """Stop the thread and flush what is left (before the log closes)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join()
        try:
            self.flush()
        except Exception as exc:  # feedback only: a close does not fail for it
            _warning("access flush failed at close", error=type(exc).__name__, lost=self.pending)

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self._interval)
            if self._closed:
                return
            try:
                self.flush()
            except Exception as exc:  # the next flush or the close tries again
                _warning("access flush failed", error=type(exc).__name__, pending=self.pending)
