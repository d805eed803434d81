"""``memlog mcp`` over stdio, as an MCP client sees it.

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
import re
import secrets
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from commands import MemoryLog
from commands.app.forgetting.scan import scan_tree
from commands.mcp import WRITE_TOOLS
from eventstore import EventLog
from tests.mcp_client import ROOT, Conn, serve

READ_TOOLS = {"recall", "context", "show", "sessions", "memories", "transcript", "history", "as_of",
              "recover", "agents"}


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
        seen["tools"], seen["server"] = await c.tools(), c.server
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
        seen["transcript_query"] = json.loads(await c.read(f"memory://session/{sid}/transcript?limit=1"))
        seen["transcript_bad"] = await c.read_error(f"memory://session/{sid}/transcript?limit=abc")
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
        seen["checkpoint"] = await c.call("checkpoint", session_id=sid, model_id="m1", chat_id="chat-1")
        seen["closed"] = await c.call("close_session", session_id=sid, reason="done")
        seen["recover"] = await c.call("recover")
        seen["write_closed"] = await c.fail("record", session_id=sid, kind="lesson", content="late")
        a.ids["open_session"] = (await c.call("start_session"))["id"]
        seen["next_context"] = await c.call("context", session_id=a.ids["open_session"])
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
        assert tool.annotations.read_only_hint is (tool.name in READ_TOOLS), tool.name
        assert tool.annotations.destructive_hint is (tool.name in {"forget", "delete"}), tool.name
        assert "user_id" not in tool.input_schema["properties"], tool.name  # a scoped server
        assert "agent_id" not in tool.input_schema["properties"], tool.name  # --agent given
    assert set(tools["record"].input_schema["properties"]["kind"]["enum"]) == {
        "message", "decision", "finding", "lesson", "task", "handoff"}
    assert alice.seen["templates"] == ["memory://entry/{id}",
                                       "memory://session/{id}/transcript{?limit,offset}"]
    server = alice.seen["server"]
    assert (server.name, server.version) == ("memlog", metadata.version("memlog"))


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
    query = alice.seen["transcript_query"]
    assert [m["id"] for m in query["messages"]] == [alice.ids["msg"]] and query["next_offset"] == 1
    assert alice.seen["transcript_bad"] == "E_SCHEMA_INVALID: limit must be a whole number (got 'abc')"
    events = alice.seen["history"]["events"]
    assert events[0]["type"] == "entry.recorded"
    assert re.fullmatch(r"mcp:uh-[0-9a-f]{32}@coder", events[0]["actor"])  # the user as its pseudonym
    before = alice.seen["as_of_before"]
    assert before["seq"] == 1 and before["entry"]["state"] == "absent"


def test_checkpoint_recover_and_the_handoff_on_close(alice: Alice) -> None:
    """A checkpoint marked over MCP is recovered with the context as of it; the
    close wrote a handoff that the user's next session opens with."""
    assert alice.seen["checkpoint"]["id"].startswith("ckpt-")
    found = alice.seen["recover"]
    assert found["recovered"] is True and found["checkpoint_id"] == alice.seen["checkpoint"]["id"]
    assert found["chat_id"] == "chat-1" and found["model_id"] == "m1"
    assert found["context"]["text"] and alice.ids["msg"] in [m["id"] for m in found["messages"]]
    assert "Last session:" in alice.seen["next_context"]["text"]


def test_errors_carry_codes(alice: Alice) -> None:
    """Refusals are tool errors with a stable code and no traceback."""
    assert alice.seen["no_confirm"].startswith("E_ABORTED: ")
    assert alice.seen["head_before_delete"] == "live"  # the refused delete wrote nothing
    assert alice.seen["bad_kind_field"] == "E_SCHEMA_INVALID: a lesson takes no severity"
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
    assert "Traceback" not in logged
    assert not [name for name, value in alice.m.items() if value in logged]


def unknown(item_id: str) -> str:
    """An id of the same shape that names nothing."""
    prefix, _, rest = item_id.rpartition("-")
    return f"{prefix}-{'f' * len(rest)}" if prefix else "f" * len(item_id)


NOW = "2100-01-01T00:00:00Z"  # after everything: as of the log's head

# Every tool argument and resource that names a session id, then an entry or memory id.
SESSION_PROBES: list[tuple[str, Callable[[str], dict[str, Any]]]] = [
    ("context", lambda x: {"session_id": x}),
    ("transcript", lambda x: {"session_id": x}),
    ("record", lambda x: {"session_id": x, "kind": "lesson", "content": "bob was here"}),
    ("close_session", lambda x: {"session_id": x}),
    ("recall", lambda x: {"session_id": x}),
    ("as_of", lambda x: {"point": NOW, "session_id": x}),
    ("as_of", lambda x: {"point": NOW, "session_id": x, "query": ""}),
    ("history", lambda x: {"item_id": x}),
]
ITEM_PROBES: list[tuple[str, Callable[[str], dict[str, Any]]]] = [
    ("show", lambda x: {"item_id": x}),
    ("history", lambda x: {"item_id": x}),
    ("as_of", lambda x: {"point": NOW, "item_id": x}),
    ("complete_task", lambda x: {"task_id": x}),
    ("edit", lambda x: {"entry_id": x, "content": "bob was here"}),
    ("delete", lambda x: {"ids": [x], "reason": "bob wants it gone", "confirm": True}),
]
USER_TOOLS = ["recall", "sessions", "memories", "as_of", "remember", "forget", "start_session"]


async def _same_as_unknown(c: Conn, name: str, args: Callable[[str], dict[str, Any]], item_id: str) -> str:
    """Call ``name`` naming ``item_id``, then an unknown id: the answers match."""
    text = await c.fail(name, **args(item_id))
    fake = unknown(item_id)
    assert text.replace(item_id, fake) == await c.fail(name, **args(fake)), (name, item_id)
    return text


async def _bob_scenario(a: Alice, errlog: Path) -> list[str]:
    texts = []
    ids = a.ids
    async with serve(a.store, "--user", "bob", errlog=errlog) as c:
        for sid in (ids["session"], ids["open_session"]):
            for name, args in SESSION_PROBES:
                texts.append(await _same_as_unknown(c, name, args, sid))
            texts.append(await c.read_error(f"memory://session/{sid}/transcript"))
            assert texts[-1].replace(sid, unknown(sid)) == \
                await c.read_error(f"memory://session/{unknown(sid)}/transcript")
        for key in ("decision", "task", "open_msg", "memory", "deleted"):
            for name, args in ITEM_PROBES:
                texts.append(await _same_as_unknown(c, name, args, ids[key]))
            texts.append(await c.read_error(f"memory://entry/{ids[key]}"))
            assert texts[-1].replace(ids[key], unknown(ids[key])) == \
                await c.read_error(f"memory://entry/{unknown(ids[key])}")
        texts.append(await c.fail("forget", key="db"))
        assert texts[-1].replace("key db", "key nokey") == await c.fail("forget", key="nokey")
        for name in USER_TOOLS:  # no tool takes a user: the scope cannot be widened
            texts.append(await c.fail(name, user_id="alice"))
            assert texts[-1] == f"E_SCHEMA_INVALID: {name} takes no argument user_id"
        for query in (a.m["decision"], a.m["kept"], ""):
            assert (await c.call("recall", query=query, mode="text"))["results"] == []
            assert (await c.call("as_of", point="@3", query=query))["results"] == []
        assert (await c.call("memories"))["total"] == 0
        assert (await c.call("as_of", point=NOW))["memories"] == []
        assert (await c.call("sessions", include_archived=True))["sessions"] == []
    return texts


def test_another_user_cannot_see_or_touch_it(alice: Alice, tmp_path: Path) -> None:
    """Bob's server names Alice's sessions, entries, memory, key and user
    through every argument: each answer is the unknown id's, nothing is
    written, and Alice's data is intact."""
    before = head(alice.store)
    texts = run(lambda: _bob_scenario(alice, tmp_path / "bob.stderr"))
    assert all(t.startswith(("E_SESSION_NOT_FOUND: ", "E_ENTRY_NOT_FOUND: ", "E_MEMORY_NOT_FOUND: ",
                             "E_SCHEMA_INVALID: ")) for t in texts), texts
    assert head(alice.store) == before
    with MemoryLog.open(alice.store, create=False) as mem:
        assert mem.show(alice.ids["decision"]).state == "live"
        task = mem.show(alice.ids["task"])
        assert task.state == "live"
        assert [m.key for m in mem.memories("alice")] == ["db"]
        assert mem.session(alice.ids["open_session"]).closed is False
    assert not [v for v in alice.m.values() if v in (tmp_path / "bob.stderr").read_text()]


async def _read_only_scenario(a: Alice, errlog: Path, how: str) -> None:
    flags, env = (["--read-only"], {}) if how == "flag" else ([], {"MEMLOG_READ_ONLY": "1"})
    async with serve(a.store, "--user", "alice", *flags, errlog=errlog, env=env) as c:
        assert set(await c.tools()) == READ_TOOLS  # write tools are hidden
        calls = {"remember": {"key": "k", "content": "x"}, "forget": {"key": "db"},
                 "record": {"session_id": a.ids["open_session"], "kind": "lesson", "content": "x"},
                 "complete_task": {"task_id": a.ids["task"], "done": False}, "start_session": {},
                 "close_session": {"session_id": a.ids["open_session"]},
                 "checkpoint": {"session_id": a.ids["open_session"]},
                 "delete": {"ids": [a.ids["decision"]], "reason": "r", "confirm": True},
                 "update_finding": {"finding_id": a.ids["decision"], "status": "resolved"},
                 "edit": {"entry_id": a.ids["decision"], "content": "x"}}
        assert set(calls) == WRITE_TOOLS
        for name, args in calls.items():
            assert (await c.fail(name, **args)).startswith("E_READ_ONLY: "), name
        hits = await c.call("recall", query=a.m["decision"], mode="text")
        assert [h["id"] for h in hits["results"]] == [a.ids["decision"]]
        assert json.loads(await c.read(f"memory://entry/{a.ids['memory']}"))["memory"]["key"] == "db"
        assert a.m["msg"] in (await c.call("context", session_id=a.ids["session"], query="ledger"))["text"]
        assert (await c.call("transcript", session_id=a.ids["open_session"]))["total"] == 1
        assert (await c.call("history", item_id=a.ids["task"]))["events"]
        assert (await c.call("as_of", point=NOW, item_id=a.ids["decision"]))["entry"]["state"] == "live"


@pytest.mark.parametrize("how", ["flag", "global"])
def test_read_only_refuses_every_write(alice: Alice, tmp_path: Path, how: str) -> None:
    """mcp --read-only (or memlog --read-only, here as MEMLOG_READ_ONLY): every
    write tool is refused with E_READ_ONLY; reads (which record no access)
    work; the log does not move."""
    before = head(alice.store)
    run(lambda: _read_only_scenario(alice, tmp_path / "ro.stderr", how))
    assert head(alice.store) == before


async def _admin_scenario(store: Path, errlog: Path) -> None:
    async with serve(store, errlog=errlog) as c:
        tools = await c.tools()
        assert "user_id" in tools["remember"].input_schema["properties"]
        assert (await c.fail("remember", key="k", content="x")).startswith("E_SCHEMA_INVALID: user_id")
        sid = (await c.call("start_session", user_id="carol"))["id"]
        await c.call("record", session_id=sid, kind="lesson", content="carol learns", agent_id="a1")
        await c.call("remember", user_id="carol", key="k", content="carol fact")
        assert (await c.call("recall", query="carol", user_id="carol", mode="text"))["count"] == 2
        assert (await c.call("recall", query="carol", user_id="dave", mode="text"))["count"] == 0
        history = await c.call("history", item_id=sid)
        assert history["events"][0]["actor"] == "mcp"


def test_unscoped_admin_mode(tmp_path: Path) -> None:
    """Without --user the server serves every user: tools take user_id, and
    the ones that act for a user need it."""
    run(lambda: _admin_scenario(tmp_path / "store", tmp_path / "admin.stderr"))


def test_without_the_sdk_the_command_says_what_to_install(tmp_path: Path) -> None:
    """The core install has no MCP SDK: memlog mcp names the extra (E_USAGE, exit 2)."""
    code = ("import sys; sys.modules['mcp'] = None; from commands.cli import main; "
            f"sys.argv = ['memlog', '--dir', {str(tmp_path)!r}, 'mcp']; main()")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stderr
    assert "pip install 'memlog[mcp]'" in done.stderr and "[E_USAGE]" in done.stderr
    assert done.stdout == ""


def test_an_unexpected_failure_is_e_internal_without_its_message(tmp_path: Path) -> None:
    """A bug in a tool answers E_INTERNAL with the exception's type alone, in-process."""
    from mcp import Client

    from commands.mcp import ServerScope, build_server

    secret = marker()

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"leaked {secret}")

    async def scenario(mem: MemoryLog) -> list[str]:
        async with Client(build_server(mem, ServerScope("alice"))) as client:
            texts = []
            for name, args in (("recall", {"query": "x"}), ("recall", {"limit": "many"}),
                               ("record", {"session_id": "s"}), ("no_such_tool", {})):
                result = await client.call_tool(name, args)
                assert result.is_error and result.structured_content is None
                texts.append("".join(getattr(b, "text", "") for b in result.content))
            return texts

    with MemoryLog.open(tmp_path / "store") as mem:
        mem.search = broken  # type: ignore[method-assign]
        texts = asyncio.run(scenario(mem))
    assert texts[0] == "E_INTERNAL: internal error (RuntimeError)"
    assert texts[1].startswith("E_SCHEMA_INVALID: invalid arguments: limit: ") and "many" not in texts[1]
    assert texts[2].startswith("E_SCHEMA_INVALID: invalid arguments: kind: Field required")
    assert texts[3] == "E_USAGE: unknown tool 'no_such_tool'"
    assert not [t for t in texts if secret in t or "Traceback" in t]
