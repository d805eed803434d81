"""Agents and their counts (seed 002), the context's memory-writing
instruction (seed 002), a finding's status and the status and severity
filters (seed 000), and seed 000's two missing error codes: each through the
CLI (``--json``), the library and MCP."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import msgspec
import pytest

import eventstore
from commands import MemoryLog
from commands.aio import AsyncMemoryLog
from commands.app.recall import search as search_app
from eventstore import InvalidInputError
from projections.views.read import ViewReader
from tests.commands.conftest import Run, head_of

pytest.importorskip("mcp")
from mcp import Client

from commands.mcp import ServerScope, build_server


def _call(mem: MemoryLog, user: str, name: str, **args: Any) -> Any:
    """One MCP tool call on a server of ``user`` over ``mem``, in-process: its
    structured result, or its error text."""
    async def scenario() -> Any:
        async with Client(build_server(mem, ServerScope(user))) as client:
            result = await client.call_tool(name, args)
            if result.is_error:
                return "".join(getattr(b, "text", "") for b in result.content)
            return result.structured_content

    return asyncio.run(scenario())


def _team(store: Path) -> dict[str, str]:
    """Alice's session with agents dev and qa (and reviewer, who writes
    nothing); Bob's session with agent ops."""
    with MemoryLog.open(store) as mem:
        a = mem.start_session(user_id="alice", agent_ids=["dev", "qa", "reviewer"])
        b = mem.start_session(user_id="bob", agent_ids=["ops"])
        mem.add_message(a, role="assistant", content="hello", agent_id="dev")
        mem.add_message(a, role="assistant", content="again", agent_id="dev")
        mem.record_decision(a, decision="Use Postgres", made_by="dev")
        mem.record_lesson(a, content="pin versions", agent_id="qa")
        gone = mem.record_lesson(a, content="a lesson deleted later", agent_id="qa")
        mem.add_message(a, role="user", content="no agent here")
        mem.record_finding(b, description="disk filling", severity="high", agent_id="ops")
        mem.delete(ids=[gone], reason="test", requested_by="t")
        return {"alice": a, "bob": b}


def test_agents_lists_each_agent_with_its_counts_by_kind_and_last_activity(
        store: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """`memlog agents` lists every agent of the store (of a user's sessions with
    --user), each with its live entries by kind and its last activity; the
    library and the MCP tool (scoped to the server's user) say the same."""
    ids = _team(store)
    code, out, _ = run("agents")
    assert code == 0
    found = {a["agent_id"]: a for a in out["agents"]}
    assert list(found) == ["dev", "ops", "qa", "reviewer"]
    assert found["dev"]["counts"] == {"decision": 1, "message": 2} and found["dev"]["entries"] == 3
    assert found["qa"]["counts"] == {"lesson": 1}  # the deleted lesson counts for nothing
    assert found["reviewer"]["counts"] == {} and found["reviewer"]["sessions"] == 1
    assert found["ops"]["counts"] == {"finding": 1}
    assert all(a["last_activity"].endswith("Z") for a in found.values())
    code, mine, _ = run("agents", "--user", "alice")
    assert [a["agent_id"] for a in mine["agents"]] == ["dev", "qa", "reviewer"]
    code, text, _ = run("agents", "--user", "alice", as_json=False)
    assert code == 0 and text.startswith("dev: decision 1, message 2; 1 sessions, last activity 20")
    # Counting reads no entry content: the views keep each entry's agent.
    monkeypatch.setattr(ViewReader, "resolve", lambda *a: pytest.fail("read the log"))
    with MemoryLog.open(store) as mem:
        library = mem.agents("alice")
        assert [msgspec.to_builtins(a) for a in library] == mine["agents"]
        assert _call(mem, "alice", "agents") == mine  # Alice's server never shows Bob's ops
        assert ids["bob"] not in str(_call(mem, "alice", "agents"))
    code, _, err = run("agents", "--user", "not a user id")
    assert code == 2 and "E_SCHEMA_INVALID" in err

    async def via_aio() -> list[Any]:
        async with await AsyncMemoryLog.open(store) as amem:
            return [msgspec.to_builtins(a) for a in await amem.agents("alice")]

    assert asyncio.run(via_aio()) == mine["agents"]


def test_agents_of_versions_stored_before_the_views_kept_the_agent(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A version stored without the agent (an older memlog's views) has its
    entry read back from the log: the counts stay the same."""
    _team(store)
    with MemoryLog.open(store) as mem:
        now = [msgspec.to_builtins(a) for a in mem.agents()]
        real = ViewReader.session_stored

        def older(self: ViewReader, session_id: str, kinds: tuple[str, ...] = ()) -> Any:
            return (msgspec.structs.replace(v, agent_id="") for v in real(self, session_id, kinds))

        monkeypatch.setattr(ViewReader, "session_stored", older)
        assert [msgspec.to_builtins(a) for a in mem.agents()] == now


def test_the_context_ends_with_how_to_save_to_memory(store: Path, run: Run) -> None:
    """The block's last section tells the agent how to save to memory: the
    memlog commands with the session's ids, or from the MCP context tool the
    tools remember and record; it is counted in the budget, dropped just
    before the handoff, and the setting memory_instruction turns it off."""
    ids = _team(store)
    sid = ids["alice"]
    code, out, _ = run("context", sid)
    assert code == 0
    last = out["sections"][-1]
    assert last["name"] == "instruction" and last["tokens"] > 0
    tail = out["text"].rpartition("\n\n")[2]
    assert tail.startswith("Saving to memory:\n- ") and "\n" not in tail.partition("\n")[2]
    assert f"memlog add lesson {sid} --content TEXT" in tail
    assert "memlog remember --user alice KEY TEXT" in tail
    code, off, _ = run("context", sid, env={"MEMLOG_MEMORY_INSTRUCTION": "false"})
    assert code == 0 and "instruction" not in [s["name"] for s in off["sections"]]
    assert off["tokens"] + last["tokens"] <= out["tokens"]  # counted in the block's tokens
    with MemoryLog.open(store) as mem:
        served = _call(mem, "alice", "context", session_id=sid)
        assert served["sections"][-1]["name"] == "instruction"
        assert f"record (session_id {sid}, kind lesson" in served["text"]
        assert "remember (a fact" in served["text"]
        assert "memlog add" not in served["text"]
        mem.record_handoff(sid, content="the handoff " * 10)
        tight = mem.context(sid, budget_tokens=40)
        assert tight.dropped[-1] == "instruction" and "Handoff (this session)" in tight.text
    with MemoryLog.open(store, memory_instruction=False) as mem:
        assert "Saving to memory" not in mem.context(sid).text


def test_finding_update_and_the_status_and_severity_filters(store: Path, run: Run) -> None:
    """`memlog finding update ID --status S` changes a finding's status;
    `search --status` and `--severity` keep the findings with one of them
    (the library's statuses= and severities=, MCP's update_finding and recall)."""
    ids = _team(store)
    with MemoryLog.open(store) as mem:
        sid = ids["alice"]
        low = mem.record_finding(sid, description="slow query", severity="low", agent_id="qa")
        high = mem.record_finding(sid, description="slow login", severity="high", agent_id="qa")
    code, out, _ = run("finding", "update", low, "--status", "resolved")
    assert code == 0 and out["id"] == low and out["seq"] == head_of(store)
    code, hits, _ = run("search", "slow", "--status", "resolved")
    assert [h["id"] for h in hits] == [low]
    code, hits, _ = run("search", "slow", "--severity", "high", "--severity", "critical")
    assert [h["id"] for h in hits] == [high]
    code, hits, _ = run("search", "slow", "--status", "resolved", "--severity", "high")
    assert code == 0 and hits == []
    before = head_of(store)
    code, _, err = run("finding", "update", low, "--status", "closed")
    assert code == 2 and "E_USAGE" in err and head_of(store) == before
    code, _, err = run("finding", "update", ids["alice"], "--status", "open")
    assert code != 0 and head_of(store) == before
    with MemoryLog.open(store) as mem:
        assert [h.id for h in mem.search("slow", statuses=["open"])] == [high]
        assert [h.id for h in mem.search("slow", severities=["low"])] == [low]
        with pytest.raises(InvalidInputError, match="status"):
            mem.search("slow", statuses=["closed"])
        written = _call(mem, "alice", "update_finding", finding_id=high, status="in_progress")
        assert written["id"] == high and mem.show(high).details["status"] == "in_progress"
        found = _call(mem, "alice", "recall", query="slow", statuses=["in_progress"], source="entries")
        assert [h["id"] for h in found["results"]] == [high]
        bob_finding = mem.search("disk", kinds=["finding"])[0].id
        refused = _call(mem, "alice", "update_finding", finding_id=bob_finding, status="resolved")
        assert refused.startswith("E_ENTRY_NOT_FOUND: ")  # not Alice's
        assert mem.show(bob_finding).details["status"] == "open"


def test_the_seed_error_codes_session_corrupt_and_query_timeout(
        store: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """E_SESSION_CORRUPT (exit 5): a manifest its stream in the log does not
    vouch for; E_QUERY_TIMEOUT (exit 2): a search past search_deadline_ms,
    which records no access."""
    E_SESSION_CORRUPT, SessionCorruptError = eventstore.E_SESSION_CORRUPT, eventstore.SessionCorruptError
    E_QUERY_TIMEOUT, QueryTimeoutError = eventstore.E_QUERY_TIMEOUT, eventstore.QueryTimeoutError
    assert SessionCorruptError.code == E_SESSION_CORRUPT and SessionCorruptError.exit_code == 5
    assert QueryTimeoutError.code == E_QUERY_TIMEOUT and QueryTimeoutError.exit_code == 2
    ids = _team(store)
    code, _, _ = run("session", "show", ids["alice"])
    assert code == 0
    real = ViewReader.session

    def shifted(self: ViewReader, session_id: str) -> Any:  # views that disagree with the log
        view = real(self, session_id)
        return None if view is None else msgspec.structs.replace(view, started_seq=view.started_seq + 2)

    with monkeypatch.context() as patch:
        patch.setattr(ViewReader, "session", shifted)
        code, _, err = run("session", "show", ids["alice"])
        assert code == 5 and f"[{E_SESSION_CORRUPT}]" in err and "memlog replay" in err
        with MemoryLog.open(store) as mem:
            with pytest.raises(SessionCorruptError):
                mem.transcript(ids["alice"])
            assert _call(mem, "alice", "transcript", session_id=ids["alice"]).startswith(E_SESSION_CORRUPT)
    ticks = itertools.count(0.0, 0.5)  # each reading of the clock half a second later
    monkeypatch.setattr(search_app, "clock", lambda: next(ticks))
    code, hits, _ = run("search", "hello")
    assert code == 0 and hits  # no deadline by default
    before = head_of(store)
    code, _, err = run("search", "hello", env={"MEMLOG_SEARCH_DEADLINE_MS": "100"})
    assert code == 2 and f"[{E_QUERY_TIMEOUT}]" in err
    with MemoryLog.open(store, search_deadline_ms=100) as mem:
        with pytest.raises(QueryTimeoutError):
            mem.search("hello")
        assert _call(mem, "alice", "recall", query="hello").startswith(f"{E_QUERY_TIMEOUT}: ")
    assert head_of(store) == before  # no access was recorded
    code, _, err = run("search", "hello", env={"MEMLOG_SEARCH_DEADLINE_MS": "-1"})
    assert code == 2 and "search_deadline_ms" in err
