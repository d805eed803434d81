"""MCP ``delete`` over stdio: criteria narrow within the server's user, a dry
run writes nothing, and consent is a JSON boolean (``"yes"``, ``"true"`` and
``1`` are refused with ``E_SCHEMA_INVALID``, writing nothing)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from commands import MemoryLog
from eventstore import EventLog
from tests.mcp_client import serve


def _head(store: Path) -> int:
    with EventLog.open(store / "log") as log:
        return log.head().seq


def _live(store: Path) -> set[str]:
    with MemoryLog.open(store) as mem, mem.store.read() as views:
        return {v.entry_id for v in views.latest_entries() if v.state != "deleted"}


def _seed(store: Path) -> dict[str, list[str]]:
    with MemoryLog.open(store) as mem:
        a, b = mem.start_session(user_id="alice"), mem.start_session(user_id="bob")
        return {"session": [a, b],
                "a_msgs": [mem.add_message(a, role="user", content=f"alice {i}") for i in range(2)],
                "a_dec": [mem.record_decision(a, decision="alice picks postgres")],
                "b_msg": [mem.add_message(b, role="user", content="bob hello")]}


def test_consent_criteria_and_dry_run(tmp_path: Path) -> None:
    store = tmp_path / "store"
    ids = _seed(store)
    a, b = ids["session"]
    seq = _head(store)

    async def refused() -> dict[str, str]:
        seen: dict[str, str] = {}
        async with serve(store, "--user", "alice", errlog=tmp_path / "err.log") as c:
            for value in ("yes", "true", 1):
                seen[f"consent {value!r}"] = await c.fail("delete", session_id=a, kinds=["message"],
                                                          reason="r", confirm=value)
            seen["dry_run 'true'"] = await c.fail("delete", session_id=a, reason="r", dry_run="true")
            seen["no consent"] = await c.fail("delete", session_id=a, reason="r")
            seen["bob's session"] = await c.fail("delete", session_id=b, reason="r", confirm=True)
        return seen

    async def granted() -> dict[str, dict[str, object]]:
        async with serve(store, "--user", "alice", errlog=tmp_path / "err.log") as c:
            return {
                "by_kind": await c.call("delete", kinds=["message"], reason="r", dry_run=True),
                "preview": await c.call("delete", session_id=a, kinds=["message"], reason="r",
                                        dry_run=True),
                "deleted": await c.call("delete", session_id=a, kinds=["message"], reason="r",
                                        confirm=True)}

    seen = asyncio.run(refused())
    for what, text in seen.items():
        code = "E_SESSION_NOT_FOUND" if what == "bob's session" else \
            "E_ABORTED" if what == "no consent" else "E_SCHEMA_INVALID"
        assert text.startswith(code), (what, text)
    assert _head(store) == seq  # nothing written
    out = asyncio.run(granted())
    assert out["by_kind"]["dry_run"] is True
    assert set(out["by_kind"]["ids"]) == set(ids["a_msgs"])  # alice's server: never bob's message
    assert out["preview"]["dry_run"] is True and set(out["preview"]["ids"]) == set(ids["a_msgs"])
    assert set(out["deleted"]["ids"]) == set(ids["a_msgs"]) and out["deleted"]["verified"] is True
    live = _live(store)
    assert set(ids["a_dec"]) | set(ids["b_msg"]) <= live
    assert not set(ids["a_msgs"]) & live
