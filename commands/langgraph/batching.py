"""Concurrent ``abatch`` calls run together, as in LangGraph's async stores.

``asyncio.gather`` over many ``aput``, ``aget``, ``asearch`` and ``adelete``
calls would otherwise run one batch each, in turn, and each delete of an
existing item runs memlog's deletion pipeline (a request, a tombstone and a
purge). :class:`Coalescer` keeps one queue per event loop: the calls made
while a batch runs wait, and the next batch takes them all, in the order they
were made; each call gets its own slice of the results. This is what
LangGraph's ``AsyncBatchedBaseStore`` (its sqlite and postgres async stores)
does, with the same meaning: ops of concurrent calls share one batch, whose
reads see the state before its puts. Calls made one after another (each
awaited) never share a batch.

If a shared batch raises (a bad namespace, a value that is not JSON, an
unknown filter operator: the checks that run before anything is written),
each call of it runs again alone, so only the faulty call gets the error.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Sequence

from langgraph.store.base import Op, Result

__all__ = ["Coalescer"]

_Call = tuple[list[Op], "asyncio.Future[list[Result]]"]


class Coalescer:
    """Runs the ops of concurrent calls in shared batches, in a worker thread."""

    def __init__(self, run: Callable[[Sequence[Op]], list[Result]]) -> None:
        self._run = run
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[_Call]] = (
            weakref.WeakKeyDictionary())
        self._tasks: set[asyncio.Task[None]] = set()  # held, so that a running drain is not collected

    async def submit(self, ops: list[Op]) -> list[Result]:
        """The results of ``ops``, run with the ops of the calls made meanwhile."""
        loop = asyncio.get_running_loop()
        queue = self._queues.setdefault(loop, [])
        future: asyncio.Future[list[Result]] = loop.create_future()
        queue.append((ops, future))
        if len(queue) == 1:
            task = loop.create_task(self._drain(queue))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await future

    async def _drain(self, queue: list[_Call]) -> None:
        while queue:
            calls = list(queue)
            try:
                await self._shared(calls)
            except BaseException as exc:  # cancelled: no caller waits forever
                for _, future in calls:
                    _settle(future, error=exc)
                raise
            finally:
                del queue[: len(calls)]

    async def _shared(self, calls: list[_Call]) -> None:
        merged = [op for ops, _ in calls for op in ops]
        try:
            results = await asyncio.to_thread(self._run, merged)
        except Exception as exc:
            if len(calls) == 1:
                _settle(calls[0][1], error=exc)
                return
            for ops, future in calls:
                await self._alone(ops, future)
            return
        start = 0
        for ops, future in calls:
            _settle(future, results[start: start + len(ops)])
            start += len(ops)

    async def _alone(self, ops: list[Op], future: asyncio.Future[list[Result]]) -> None:
        try:
            results = await asyncio.to_thread(self._run, ops)
        except Exception as exc:
            _settle(future, error=exc)
            return
        _settle(future, results)


def _settle(future: asyncio.Future[list[Result]], results: list[Result] | None = None,
            error: BaseException | None = None) -> None:
    """Give a call its results or its error (unless it was cancelled meanwhile)."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(results or [])
