"""The async face: :class:`AsyncMemoryLog`, for agent runtimes that are asyncio-first.

Every call runs the synchronous facade on one worker thread owned by the
handle, so calls from many tasks are serialised in the order they were made,
the event loop never blocks on disk, and LMDB's transactions always stay on
the thread that opened them::

    async with await AsyncMemoryLog.open(path) as mem:
        sid = await mem.start_session(user_id="alice")
        await mem.add_message(sid, role="user", content="...")
        chat = await mem.resource("chat", user_id="alice", session_id=sid)
        await chat.append("...")
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

from .app.upkeep.resources import ResourceHandle
from .memory import MemoryLog

__all__ = ["AsyncMemoryLog", "AsyncResourceHandle"]

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class _Worker:
    """One worker thread; ``run`` awaits a call made on it."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlog")

    async def run(self, fn: Callable[[], R]) -> R:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn)

    def shutdown(self) -> None:
        self.pool.shutdown(wait=True)


def _on_worker(method: Callable[Concatenate[T, P], R], target: str
               ) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]:
    """An async method that runs ``method`` on the object's ``target`` attribute, on its worker."""
    async def call(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        obj: T = getattr(self, target)
        worker: _Worker = self._worker
        return await worker.run(functools.partial(method, obj, *args, **kwargs))

    call.__name__ = call.__qualname__ = method.__name__
    call.__doc__ = method.__doc__
    return call


class AsyncResourceHandle:
    """The async face of a :class:`~commands.app.upkeep.resources.ResourceHandle`."""

    def __init__(self, handle: ResourceHandle, worker: _Worker) -> None:
        self.handle = handle
        self._worker = worker

    @property
    def key(self) -> str:
        """The sanitised key of this resource instance."""
        return self.handle.key

    append = _on_worker(ResourceHandle.append, "handle")
    read = _on_worker(ResourceHandle.read, "handle")
    length = _on_worker(ResourceHandle.length, "handle")
    tokens = _on_worker(ResourceHandle.tokens, "handle")
    trim = _on_worker(ResourceHandle.trim, "handle")
    replace = _on_worker(ResourceHandle.replace, "handle")
    expire = _on_worker(ResourceHandle.expire, "handle")
    delete = _on_worker(ResourceHandle.delete, "handle")


class AsyncMemoryLog:
    """``async with await AsyncMemoryLog.open(path) as mem: ...``: the facade's
    calls as coroutines, run on one worker thread."""

    def __init__(self, mem: MemoryLog, worker: _Worker) -> None:
        self.mem = mem
        self._worker = worker

    @classmethod
    async def open(cls, path: str | os.PathLike[str] = ".memlog", **options: Any) -> Self:
        """Open the store on the worker thread (``options`` as :meth:`MemoryLog.open`)."""
        worker = _Worker()
        try:
            mem = await worker.run(lambda: MemoryLog.open(path, **options))
        except BaseException:
            worker.shutdown()
            raise
        return cls(mem, worker)

    async def close(self) -> None:
        """Close the store, then stop the worker."""
        try:
            await self._worker.run(self.mem.close)
        finally:
            self._worker.shutdown()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def resource(self, resource_id: str, **ids: Any) -> AsyncResourceHandle:
        """The async handle of one resource instance (``ids``: ``user_id``,
        ``session_id``, ``agent_id``, ``summariser``)."""
        handle = await self._worker.run(lambda: self.mem.resource(resource_id, **ids))
        return AsyncResourceHandle(handle, self._worker)

    async def declare_resource(self, spec: Any) -> Any:
        """Declare a memory resource (see :meth:`MemoryLog.declare_resource`)."""
        return await self._worker.run(lambda: self.mem.declare_resource(spec))

    start_session = _on_worker(MemoryLog.start_session, "mem")
    session = _on_worker(MemoryLog.session, "mem")
    sessions = _on_worker(MemoryLog.sessions, "mem")
    close_session = _on_worker(MemoryLog.close_session, "mem")
    archive_session = _on_worker(MemoryLog.archive_session, "mem")
    transcript = _on_worker(MemoryLog.transcript, "mem")
    add_message = _on_worker(MemoryLog.add_message, "mem")
    record_decision = _on_worker(MemoryLog.record_decision, "mem")
    record_finding = _on_worker(MemoryLog.record_finding, "mem")
    record_lesson = _on_worker(MemoryLog.record_lesson, "mem")
    record_handoff = _on_worker(MemoryLog.record_handoff, "mem")
    record_summary = _on_worker(MemoryLog.record_summary, "mem")
    add_task = _on_worker(MemoryLog.add_task, "mem")
    complete_task = _on_worker(MemoryLog.complete_task, "mem")
    edit = _on_worker(MemoryLog.edit, "mem")
    set_preference = _on_worker(MemoryLog.set_preference, "mem")
    remember = _on_worker(MemoryLog.remember, "mem")
    forget = _on_worker(MemoryLog.forget, "mem")
    memories = _on_worker(MemoryLog.memories, "mem")
    show = _on_worker(MemoryLog.show, "mem")
    search = _on_worker(MemoryLog.search, "mem")
    context = _on_worker(MemoryLog.context, "mem")
    history = _on_worker(MemoryLog.history, "mem")
    delete = _on_worker(MemoryLog.delete, "mem")
    purge = _on_worker(MemoryLog.purge, "mem")
    stats = _on_worker(MemoryLog.stats, "mem")
    verify = _on_worker(MemoryLog.verify, "mem")
    resources = _on_worker(MemoryLog.resources, "mem")
    agents = _on_worker(MemoryLog.agents, "mem")
    update_finding = _on_worker(MemoryLog.update_finding, "mem")

