"""The async face: AsyncMemoryLog runs the facade on one worker thread (asyncio.run, no plugin)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from commands.aio import AsyncMemoryLog
from eventstore import InvalidInputError, SessionNotFoundError


def test_async_calls_and_resource_handle(tmp_path: Path) -> None:
    async def main() -> None:
        async with await AsyncMemoryLog.open(tmp_path / "store") as mem:
            sid = await mem.start_session(user_id="alice")
            mid = await mem.add_message(sid, role="user", content="async postgres question")
            assert (await mem.show(mid)).content == "async postgres question"
            assert [h.id for h in await mem.search("postgres", user_id="alice")] == [mid]
            await mem.declare_resource({"id": "chat", "key": "{user_id}:{session_id}",
                                        "token_limit": 1000})
            chat = await mem.resource("chat", user_id="alice", session_id=sid)
            ids = await asyncio.gather(*(chat.append(f"turn {i} about caching") for i in range(8)))
            assert [m.id for m in await chat.read()] == list(ids)  # serialised in call order
            assert await chat.length() == 8 and await chat.tokens() > 0
            assert await chat.trim(items=3) == 5
            assert (await mem.context(sid, budget_tokens=500)).tokens <= 500
            assert (await mem.stats())["events"] > 0

    asyncio.run(main())


def test_one_worker_thread_and_errors_propagate(tmp_path: Path) -> None:
    seen: set[str] = set()

    async def main() -> None:
        mem = await AsyncMemoryLog.open(tmp_path / "store")
        try:
            with pytest.raises(SessionNotFoundError):
                await mem.add_message("nope", role="user", content="x")
            with pytest.raises(InvalidInputError):
                await mem.resource("undeclared", user_id="a")
            for _ in range(3):
                seen.add(await mem._worker.run(lambda: threading.current_thread().name))
        finally:
            await mem.close()

    asyncio.run(main())
    assert len(seen) == 1 and next(iter(seen)) != threading.main_thread().name
