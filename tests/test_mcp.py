"""``memlog mcp`` over stdio, as an MCP client sees it (issue 16, Must show 1).

The SDK's stdio client starts the server as a subprocess (``python -m
commands mcp``). Alice's server lists its tools, remembers, records every
kind, recalls, builds a context, forgets and deletes; the forgotten and the
deleted content is then absent from every file under the store. Bob's server
names every one of Alice's ids through every argument that takes one, and
gets exactly the answers of unknown ids. A read-only server refuses every
write; a delete without confirm writes nothing.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from commands import MemoryLog  # noqa: E402
from commands.app.scan import scan_tree  # noqa: E402
from commands.mcp import WRITE_TOOLS  # noqa: E402
from eventstore import EventLog  # noqa: E402
from tests.mcp_client import ROOT, Conn, serve  # noqa: E402

READ_TOOLS = {"recall", "context", "show", "sessions", "memories", "transcript", "history", "as_of"}


def marker() -> str:
    """A unique token that the tokenizer keeps whole."""
    return "zq" + secrets.token_hex(10)


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    """Run one async scenario (pytest has no async plugin configured here)."""
    return asyncio.run(scenario())  # type: ignore[arg-type]


def head(store: Path) -> int:
    """The store's log head seq (no server may be running)."""
    with EventLog.open(store / "log") as log:
        return log.head().seq


@dataclass
class Alice:
    """What Alice's server recorded and answered."""

    store: Path
    errlog: Path
    m: dict[str, str] = field(default_factory=lambda: {n: marker() for n in (
        "msg", "decision", "finding", "lesson", "task", "handoff", "kept", "forgotten", "deleted")})
    ids: dict[str, str] = field(default_factory=dict)
    seen: dict[str, Any] = field(default_factory=dict)


async def _record_all(c: Conn, a: Alice, sid: str) -> None:
    m, ids = a.m, a.ids
    ids["msg"] = (await c.call("record", session_id=sid, kind="message", role="user",
                               content=f"we need a ledger {m['msg']}", topic="scaling"))["id"]
    ids["tool"] = (await c.call("record", session_id=sid, kind="message", role="tool",
                                content="42 rows", tool_call_id="call-7"))["id"]
    ids["decision"] = (await c.call("record", session_id=sid, kind="decision",
                                    content=f"use postgres {m['decision']}", rationale="ACID",
                                    alternatives=["mongodb"], impact="high", tags=["db"]))["id"]
    ids["finding"] = (await c.call("record", session_id=sid, kind="finding",
                                   content=f"pool missing {m['finding']}", severity="high",
                                   evidence="no settings"))["id"]
    for kind in ("lesson", "task", "handoff"):
        ids[kind] = (await c.call("record", session_id=sid, kind=kind, content=f"{kind} {m[kind]}"))["id"]
    ids["deleted"] = (await c.call("record", session_id=sid, kind="lesson",
                                   content=f"secret {m['deleted']}"))["id"]


async def _alice_scenario(a: Alice) -> None:
    seen = a.seen
    async with serve(a.store, "--user", "alice", "--agent", "coder", errlog=a.errlog) as c:
        seen["tools"] = await c.tools()
        seen["templates"] = [t.uri_template for t in
                             (await c.session.list_resource_templates()).resource_templates]
        session = await c.call("start_session", tags=["payments"])
        sid = a.ids["session"] = session["id"]
        seen["session"] = session
        await _record_all(c, a, sid)
        seen["complete"] = await c.call("complete_task", task_id=a.ids["task"])
        a.ids["memory"] = (await c.call("remember", key="db", content=f"likes {a.m['kept']}"))["id"]
        await c.call("remember", key="secret", content=f"pin {a.m['forgotten']}")
        seen["recall"] = await c.call("recall", query=a.m["decision"], mode="text")
        seen["recall_memory"] = await c.call("recall", query=a.m["kept"], source="memories", mode="text")
        seen["context"] = await c.call("context", session_id=sid, query="postgres", budget=500)
        seen["show"] = await c.call("show", item_id=a.ids["decision"])
        seen["entry_resource"] = json.loads(await c.read(f"memory://entry/{a.ids['decision']}"))
        seen["transcript"] = json.loads(await c.read(f"memory://session/{sid}/transcript"))
        seen["transcript_page"] = await c.call("transcript", session_id=sid, limit=1, offset=1)
        seen["history"] = await c.call("history", item_id=a.ids["decision"])
        seen["as_of_before"] = await c.call("as_of", point="@1", item_id=a.ids["decision"])
        seen["forget"] = await c.call("forget", key="secret")
        seen["recall_forgotten"] = await c.call("recall", query=a.m["forgotten"], mode="text")
        seen["recall_forgotten_default"] = await c.call("recall", query=a.m["forgotten"])
        seen["no_confirm"] = await c.fail("delete", ids=[a.ids["deleted"]], reason="erasure request")
        seen["head_before_delete"] = (await c.call("show", item_id=a.ids["deleted"]))["entry"]["state"]
        seen["delete"] = await c.call("delete", ids=[a.ids["deleted"]], reason="erasure request",
                                      confirm=True)
        seen["bad_kind_field"] = await c.fail("record", session_id=sid, kind="lesson", content="x",
                                              severity="high")
        seen["closed"] = await c.call("close_session", session_id=sid, reason="done")
        seen["write_closed"] = await c.fail("record", session_id=sid, kind="lesson", content="late")
        a.ids["open_session"] = (await c.call("start_session"))["id"]
        a.ids["open_msg"] = (await c.call("record", session_id=a.ids["open_session"], kind="message",
                                          role="assistant", content="still open"))["id"]


@pytest.fixture(scope="module")
def alice(tmp_path_factory: pytest.TempPathFactory) -> Alice:
    """Alice's store, built through her own server (one process for the module's checks)."""
    root = tmp_path_factory.mktemp("mcp")
    found = Alice(store=root / "store", errlog=root / "alice.stderr")
    run(lambda: _alice_scenario(found))
    return found


def test_tools_and_resources_are_listed(alice: Alice) -> None:
    """Every tool is listed with an input and an output schema (structured results)."""
    tools = alice.seen["tools"]
    assert set(tools) == READ_TOOLS | WRITE_TOOLS
    for tool in tools.values():
        assert tool.output_schema is not None, tool.name
        assert "user_id" not in tool.input_schema["properties"], tool.name  # a scoped server
        assert "agent_id" not in tool.input_schema["properties"], tool.name  # --agent given
    assert set(tools["record"].input_schema["properties"]["kind"]["enum"]) == {
        "message", "decision", "finding", "lesson", "task", "handoff"}
    assert alice.seen["templates"] == ["memory://entry/{id}",
                                       "memory://session/{id}/transcript{?limit,offset}"]


def test_writes_are_structured_and_scoped(alice: Alice) -> None:
    """Sessions belong to the server's user and agent; records carry the agent."""
    session = alice.seen["session"]
    assert session["user_id"] == "alice" and session["agent_ids"] == ["coder"]
    assert session["tags"] == ["payments"] and session["closed"] is False
    assert alice.seen["complete"]["id"] == alice.ids["task"]
    shown = alice.seen["show"]
    assert shown["kind"] == "entry" and shown["memory"] is None
    entry = shown["entry"]
    assert entry["type"] == "decision" and alice.m["decision"] in entry["content"]
    assert entry["agent_id"] == "coder" and entry["details"]["rationale"] == "ACID"
    assert alice.seen["entry_resource"] == shown


def test_recall_and_context(alice: Alice) -> None:
    """recall finds the decision and the memory; context draws on the session."""
    hits = alice.seen["recall"]["results"]
    assert [h["id"] for h in hits] == [alice.ids["decision"]]
    assert alice.seen["recall"]["count"] == 1
    memories = alice.seen["recall_memory"]["results"]
    assert [h["type"] for h in memories] == ["memory"] and alice.m["kept"] in memories[0]["content"]
    context = alice.seen["context"]
    assert context["budget"] == 500 and context["tokens"] <= 500
    assert "postgres" in context["text"] and context["sections"]


def test_transcript_history_and_as_of(alice: Alice) -> None:
    """The transcript lists messages in order (with tool_call_id); history and
    as_of read the past."""
    transcript = alice.seen["transcript"]
    assert [m["id"] for m in transcript["messages"]] == [alice.ids["msg"], alice.ids["tool"]]
    assert transcript["messages"][1]["details"]["tool_call_id"] == "call-7"
    page = alice.seen["transcript_page"]
    assert [m["id"] for m in page["messages"]] == [alice.ids["tool"]] and page["total"] == 2
    events = alice.seen["history"]["events"]
    assert events[0]["type"] == "entry.recorded" and events[0]["actor"] == "mcp:alice@coder"
    before = alice.seen["as_of_before"]
    assert before["seq"] == 1 and before["entry"]["state"] == "absent"


def test_errors_carry_codes(alice: Alice) -> None:
    """Refusals are tool errors with a stable code and no traceback."""
    assert alice.seen["no_confirm"].startswith("E_ABORTED: ")
    assert alice.seen["head_before_delete"] == "live"  # the refused delete wrote nothing
    assert alice.seen["bad_kind_field"] == "E_SCHEMA_INVALID: severity do(es) not apply to a lesson"
    assert alice.seen["closed"]["closed"] is True
    assert alice.seen["write_closed"].startswith("E_SESSION_CLOSED: ")
    for text in (alice.seen["no_confirm"], alice.seen["write_closed"]):
        assert "Traceback" not in text


def test_forgotten_and_deleted_content_is_gone(alice: Alice) -> None:
    """forget and delete erase the content: recall finds nothing, and no file
    under the store holds its bytes; what was kept is still there."""
    assert alice.seen["forget"]["purged"] is True and alice.seen["forget"]["verified"] is True
    assert alice.seen["recall_forgotten"]["results"] == []
    assert all(alice.m["forgotten"] not in h["content"]
               for h in alice.seen["recall_forgotten_default"]["results"])
    assert alice.seen["delete"]["ids"] == [alice.ids["deleted"]]
    assert alice.seen["delete"]["purged"] is True and alice.seen["delete"]["verified"] is True
    gone = [alice.m["forgotten"].encode(), alice.m["deleted"].encode()]
    assert scan_tree(alice.store, gone)[0] == {}
    kept = scan_tree(alice.store, [alice.m["kept"].encode(), alice.m["decision"].encode()])[0]
    assert kept  # positive control: the scan sees live content


def test_server_logs_hold_no_content(alice: Alice) -> None:
    """The server's stderr (debug logs, JSON) names ids, never content."""
    logged = alice.errlog.read_text()
    assert "mcp tool called" in logged  # the logs were on
    assert not [name for name, value in alice.m.items() if value in logged]
