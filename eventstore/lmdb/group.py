"""Group commit: concurrent appends of one process share one durable commit.

LMDB lets one write transaction run at a time, and with sync on each commit
waits for the disk (two ``fdatasync``). Threads that append one event each
would queue on LMDB's writer lock and pay one commit each. Here the first
thread to arrive appends alone, as before; the threads that arrive while it
writes queue their requests, and when it is done the first of them leads:
it writes every queued request in one transaction (each request in a nested
transaction, so that a request refused on its own, by a version or an event
id, is left out while the others commit), commits once, and hands each
thread its own results or its own error. A thread returns only after the
commit that holds its events, so what it was told is durable is durable.

Threads woken together by a group's commit come back together, and the
first one back would write alone while the others queue behind it. So after
a write that had threads queued behind it, the next thread to find the log
idle queues too and yields the interpreter once (``time.sleep(0)``) before
it leads: the threads that are back queue meanwhile and share its commit
(4 threads: groups of 1 and 3 in turn became groups of mostly 3 and 4, and
2,170 appends/s became 3,773; ``tools/bench_log.py`` (d)). A leader that
finds itself alone clears the mark, so a process that appends from one
thread pays one lock round trip and never waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from ..backend import PreparedAppend
from ..envelope import AppendResult

__all__ = ["GroupCommit", "Outcome", "Ticket"]

Outcome = list[AppendResult] | BaseException  # a request's results, or the error it gets


class Ticket:
    """One thread's queued request, until a leader writes it."""

    __slots__ = ("batch", "done", "lead", "outcome")

    def __init__(self, batch: Sequence[PreparedAppend]) -> None:
        self.batch = batch
        self.done = threading.Event()
        self.lead = False  # woken to lead the next group, not with an outcome
        self.outcome: Outcome | None = None


class GroupCommit:
    """The queue of one process's appends to one log.

    ``solo(batch)`` appends one thread's request in its own transaction;
    ``group(batches)`` appends several in one transaction and returns each
    one's outcome, once committed (it raises when the whole transaction fails).
    """

    def __init__(self, solo: Callable[[Sequence[PreparedAppend]], list[AppendResult]],
                 group: Callable[[list[Sequence[PreparedAppend]]], list[Outcome]]) -> None:
        self._solo = solo
        self._group = group
        self._lock = threading.Lock()
        self._queue: list[Ticket] = []
        self._busy = False  # a thread is appending (alone or for a group)
        self._contended = False  # the last write had threads queued behind it

    def append(self, batch: Sequence[PreparedAppend]) -> list[AppendResult]:
        """Append ``batch``, alone when no other thread is appending, else in
        the next group; its results once committed, or its error."""
        with self._lock:
            ticket = None
            if self._busy or self._contended:
                ticket = Ticket(batch)
                self._queue.append(ticket)
            lead = not self._busy
            self._busy = True
        if ticket is None:
            try:
                return self._solo(batch)
            finally:
                self._hand_over()
        if lead:  # others appended lately: let the threads that are back queue first
            time.sleep(0)
        else:
            ticket.done.wait()
        if lead or ticket.lead:
            try:
                self._lead()
            finally:
                self._hand_over()
        outcome = ticket.outcome
        if isinstance(outcome, BaseException):
            raise outcome
        assert outcome is not None
        return outcome

    def _lead(self) -> None:
        """Write every queued request (this thread's among them) and wake their threads."""
        with self._lock:
            tickets, self._queue = self._queue, []
            self._contended = len(tickets) > 1
        try:
            if len(tickets) == 1:
                outcomes: list[Outcome] = [self._solo(tickets[0].batch)]
            else:
                outcomes = self._group([t.batch for t in tickets])
        except BaseException as exc:  # the transaction failed: every request with it
            outcomes = [exc] * len(tickets)
        for ticket, outcome in zip(tickets, outcomes, strict=True):
            ticket.outcome = outcome
            ticket.lead = False
            ticket.done.set()

    def _hand_over(self) -> None:
        """Wake the first queued thread to lead the next group, or go idle."""
        with self._lock:
            if self._queue:
                self._contended = True
                first = self._queue[0]
                first.lead = True
                first.done.set()
            else:
                self._busy = False
