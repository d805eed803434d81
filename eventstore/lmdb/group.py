"""Group commit: concurrent appends of one process share one durable commit.

LMDB lets one write transaction run at a time, and with sync on each commit
waits for the disk (two ``fdatasync``). Threads that append one event each
would queue on LMDB's writer lock and pay one commit each. Here the first
thread to arrive appends alone; the threads that arrive while it
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
(4 threads: groups of 1 and 3 in turn became groups of mostly 3 and 4). A
leader that finds itself alone clears the mark, so a process that appends
from one thread pays one lock round trip and never waits. Figures:
``tools/bench/bench_log.py --threads N`` (d), and docs/benchmarks.md.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Sequence

from ..backend import PreparedAppend
from ..envelope import AppendResult
from ..errors import StorageError

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
        the next group; its results once committed, or its error. A thread
        interrupted while it waits (``KeyboardInterrupt``) withdraws its request
        if no leader took it yet, and never leaves the log held."""
        ticket: Ticket | None = None
        holds = False  # this thread holds the log and must hand it over
        try:
            with self._lock:
                if self._busy or self._contended:
                    ticket = Ticket(batch)
                    self._queue.append(ticket)
                holds = not self._busy
                self._busy = True
            if ticket is None:
                return self._solo(batch)
            if holds:  # others appended lately: let the threads that are back queue first
                time.sleep(0)
            else:
                ticket.done.wait()
                holds = ticket.lead
            if holds:
                self._lead()
        except BaseException:
            if ticket is not None:
                self._withdraw(ticket, holds)
            raise
        finally:
            if holds:
                self._hand_over()
        return _outcome(ticket)

    def _lead(self) -> None:
        """Write every queued request (this thread's among them) and answer
        their threads, whatever happens."""
        with self._lock:
            tickets, self._queue = self._queue, []
            self._contended = len(tickets) > 1
        outcomes: list[Outcome] = []
        try:
            if len(tickets) == 1:
                outcomes = [self._solo(tickets[0].batch)]
            else:
                outcomes = self._group([t.batch for t in tickets])
        except Exception as exc:  # the transaction failed: every request with it
            outcomes = [exc] * len(tickets)
        finally:
            for n, ticket in enumerate(tickets):
                ticket.outcome = outcomes[n] if n < len(outcomes) else StorageError(
                    "the thread writing this append was interrupted; it may or may not be in the log")
                ticket.lead = False
                ticket.done.set()

    def _withdraw(self, ticket: Ticket, holds: bool) -> None:
        """An interrupted thread: its request leaves the queue unless a leader
        took it; woken to lead (and not yet holding the log), it hands the log
        over instead (a thread that holds it hands it over on its way out)."""
        with self._lock:
            if ticket in self._queue:
                self._queue.remove(ticket)
            chosen = ticket.lead and not holds
            ticket.lead = False
        if chosen:
            self._hand_over()

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


def _outcome(ticket: Ticket | None) -> list[AppendResult]:
    """A ticket's results, or its error raised (a copy: each thread raises its own)."""
    assert ticket is not None
    outcome = ticket.outcome
    if isinstance(outcome, BaseException):
        try:
            error = copy.copy(outcome)
        except Exception:
            error = outcome
        raise error
    assert outcome is not None
    return outcome
