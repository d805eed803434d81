"""The small fields of seeds 000, 001 and 002, each through the CLI (``--json``),
the library and the MCP tools: hashtags as tags, a message's parent, a
decision's rejected alternatives, writers joining a session's agents, ``+`` in
ids, ``remember --session`` and the ``--topic`` filter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from commands import MemoryLog
from commands.app.forgetting.scan import scan_tree
from commands.mcp.reads import ReadTools
from commands.mcp.scope import ServerScope
from commands.mcp.writes import WriteTools
from eventstore import EntryNotFoundError

from .conftest import Run, views_dump

WHATSAPP = "whatsapp:+15551234567@s.whatsapp.net"  # seed 001's user id strategy


def _session(run: Run, *args: str) -> str:
    code, out, err = run("session", "start", *args)
    assert code == 0, err
    return str(out["id"])


def _tools(mem: MemoryLog, user: str | None = None, agent: str | None = None) -> tuple[ReadTools, WriteTools]:
    scope = ServerScope(user, agent)
    return ReadTools(mem, scope), WriteTools(mem, scope)


def _ok(result: tuple[int, Any, str]) -> Any:
    code, out, err = result
    assert code == 0, err
    return out


def test_plus_is_allowed_in_ids(run: Run, store: Path) -> None:
    """Seed 001's WhatsApp user id is taken as a user, session and agent id everywhere."""
    sid = _session(run, "--user", WHATSAPP, "--agent", "bot+1")
    mid = _ok(run("add", "message", sid, "--role", "user", "--content", "hello from the phone",
                  "--agent", "bot+1"))["id"]
    assert _ok(run("show", mid))["agent_id"] == "bot+1"
    _ok(run("remember", "--user", WHATSAPP, "favourite_colour", "teal"))
    assert _ok(run("memories", "--user", WHATSAPP))["memories"][0]["content"] == "teal"
    hits = _ok(run("search", "phone", "--user", WHATSAPP))
    assert [h["id"] for h in hits] == [mid]
    with MemoryLog.open(store) as mem:
        own = mem.start_session(user_id=WHATSAPP, session_id="chat:+15551234567")
        mem.add_message(own, role="user", content="a second chat")
        assert mem.session(own).user_id == WHATSAPP
        reads, writes = _tools(mem, WHATSAPP)
        writes.remember("city", "Lisbon")
        assert {m["key"] for m in reads.memories()["memories"]} == {"favourite_colour", "city"}
        report = mem.delete(user_id=WHATSAPP, reason="asked", requested_by=WHATSAPP)
        assert report.verified


def test_remember_records_its_session(run: Run, store: Path) -> None:
    """``remember --session`` keeps the memory's source session, shown with it;
    another user's session is refused and writes nothing."""
    sid = _session(run, "--user", "alice")
    bobs = _session(run, "--user", "bob")
    mid = _ok(run("remember", "--user", "alice", "--session", sid, "favourite_db", "PostgreSQL"))["id"]
    assert _ok(run("show", mid))["session_id"] == sid
    code, _, err = run("remember", "--user", "alice", "--session", bobs, "pet", "cat")
    assert code != 0 and "E_SCHEMA_INVALID" in err
    with MemoryLog.open(store) as mem:
        lib = mem.remember("alice", "editor", "vim", session_id=sid)
        assert mem.show(lib).session_id == sid  # type: ignore[union-attr]
        reads, writes = _tools(mem, "alice")
        tool = writes.remember("shell", "zsh", session_id=sid)["id"]
        assert reads.show(tool)["memory"]["session_id"] == sid  # type: ignore[index]
        with pytest.raises(Exception, match="not found"):
            writes.remember("pet", "cat", session_id=bobs)  # not alice's: an unknown session
        assert "pet" not in {m.key for m in mem.memories("alice")}
        before = views_dump(mem)
        mem.replay()
        assert views_dump(mem) == before


def test_search_filters_by_topic(run: Run, store: Path) -> None:
    """``--topic`` keeps the messages of that topic (the word is not needed in the text)."""
    sid = _session(run, "--user", "alice")
    db = _ok(run("add", "message", sid, "--role", "user", "--content", "which store for payments",
                 "--topic", "database_selection"))["id"]
    cache = _ok(run("add", "message", sid, "--role", "user", "--content", "which store for the cache",
                    "--topic", "caching"))["id"]
    _ok(run("add", "lesson", sid, "--content", "a store for payments needs ACID"))
    assert [h["id"] for h in _ok(run("search", "store", "--topic", "database_selection"))] == [db]
    assert [h["id"] for h in _ok(run("search", "--topic", "database_selection"))] == [db]
    assert _ok(run("search", "store", "--topic", "nothing_like_it")) == []
    with MemoryLog.open(store) as mem:
        assert [h.id for h in mem.search("store", topic="database_selection")] == [db]
        reads, _ = _tools(mem, "alice")
        assert [h["id"] for h in reads.recall("store", topic="database_selection")["results"]] == [db]
        mem.replay(["search"])
        assert [h.id for h in mem.search("store", topic="database_selection")] == [db]
        assert [h.id for h in mem.as_of(mem.log.head().seq).search("store", topic="caching")] == [cache]


def test_hashtags_become_tags(run: Run, store: Path) -> None:
    """``#tags`` of any entry's content join its tags, lower case and once each;
    a hashtag inside a span the ingest redactor removed yields no tag."""
    sid = _session(run, "--user", "alice")
    lesson = _ok(run("add", "lesson", sid, "--content", "Use #React with #typescript and #react"))["id"]
    assert _ok(run("show", lesson))["tags"] == ["react", "typescript"]
    given = _ok(run("add", "message", sid, "--role", "user", "--content", "ship it #Release #infra",
                    "--tag", "infra"))["id"]
    assert _ok(run("show", given))["tags"] == ["infra", "release"]
    token = "#ghp_" + "a1" * 12
    secret = _ok(run("add", "task", sid, "--content", f"rotate {token} before #friday"))["id"]
    shown = _ok(run("show", secret))
    assert shown["tags"] == ["friday"] and "ghp_" not in str(shown)
    assert [h["id"] for h in _ok(run("search", "--tag", "typescript"))] == [lesson]
    red = _ok(run("add", "lesson", sid, "--content", "zeta plan: ship #projectzeta first, then #docs"))["id"]
    assert _ok(run("show", red))["tags"] == ["projectzeta", "docs"]
    assert scan_tree(store, [b"projectzeta"])[0]  # the positive control
    _ok(run("redact", red, "--regex", "ship #projectzeta first", "--reason", "codename",
            "--requested-by", "dpo"))
    assert _ok(run("show", red))["tags"] == ["docs"]  # a later redaction takes its hashtags' tags too
    assert _ok(run("search", "--tag", "projectzeta")) == []
    assert scan_tree(store, [b"projectzeta"])[0] == {}  # no byte of it left, in any file
    with MemoryLog.open(store) as mem:
        did = mem.record_decision(sid, decision="Pick #Postgres", tags=["db"])
        assert mem.show(did).tags == ("db", "postgres")
        _, writes = _tools(mem, "alice")
        hid = writes.record(sid, "handoff", "next: #deploy")["id"]
        assert mem.show(hid).tags == ("deploy",)


def test_message_parent_in_the_same_session(run: Run, store: Path) -> None:
    """``--parent`` records the message this one answers; a parent that is not a
    message of the same session is refused and nothing is written."""
    sid = _session(run, "--user", "alice")
    other = _session(run, "--user", "alice")
    first = _ok(run("add", "message", sid, "--role", "user", "--content", "which database"))["id"]
    reply = _ok(run("add", "message", sid, "--role", "assistant", "--content", "PostgreSQL",
                    "--parent", first))["id"]
    assert _ok(run("show", reply))["details"]["parent_id"] == first
    elsewhere = _ok(run("add", "message", other, "--role", "user", "--content", "hello"))["id"]
    lesson = _ok(run("add", "lesson", sid, "--content", "a lesson"))["id"]
    before = _ok(run("stats"))["head_seq"]
    for parent in ("msg-000000000000", elsewhere, lesson):
        code, _, err = run("add", "message", sid, "--role", "user", "--content", "x", "--parent", parent)
        assert code != 0 and "E_ENTRY_NOT_FOUND" in err
    assert _ok(run("stats"))["head_seq"] == before
    with MemoryLog.open(store) as mem:
        lib = mem.add_message(sid, role="user", content="thanks", parent_id=reply)
        assert mem.show(lib).details["parent_id"] == reply  # type: ignore[union-attr]
        with pytest.raises(EntryNotFoundError):
            mem.add_message(other, role="user", content="x", parent_id=reply)
        with mem.batch():  # a parent recorded earlier in the same batch
            a = mem.add_message(sid, role="user", content="batched question")
            b = mem.add_message(sid, role="assistant", content="batched answer", parent_id=a)
        assert mem.show(b).details["parent_id"] == a  # type: ignore[union-attr]
        _, writes = _tools(mem, "alice")
        tool = writes.record(sid, "message", "and then?", role="user", parent_id=lib)["id"]
        assert mem.show(tool).details["parent_id"] == lib  # type: ignore[union-attr]


def test_decision_alternatives_with_rejected_reasons(run: Run, store: Path) -> None:
    """Alternatives are ``{option, rejected_reason}``: ``OPTION: reason`` on the
    CLI, a mapping in the library and MCP; a plain option keeps no reason."""
    sid = _session(run, "--user", "alice")
    did = _ok(run("add", "decision", sid, "--decision", "Use PostgreSQL",
                  "--alternative", "MySQL: weaker JSON", "--alternative", "SQLite"))["id"]
    details = _ok(run("show", did))["details"]
    assert details["alternatives_considered"] == [{"option": "MySQL", "rejected_reason": "weaker JSON"},
                                                  {"option": "SQLite", "rejected_reason": None}]
    assert details["alternatives"] == ["MySQL", "SQLite"]
    assert [h["id"] for h in _ok(run("search", "weaker"))] == [did]  # the reason is searchable
    with MemoryLog.open(store) as mem:
        lib = mem.record_decision(sid, decision="Use NATS", alternatives=[
            {"option": "Kafka", "rejected_reason": "heavy to run"}, "Redis"])
        got = mem.show(lib).details["alternatives_considered"]  # type: ignore[union-attr]
        assert got == [{"option": "Kafka", "rejected_reason": "heavy to run"},
                       {"option": "Redis", "rejected_reason": None}]
        _, writes = _tools(mem, "alice")
        tool = writes.record(sid, "decision", "Use LMDB", alternatives=[
            {"option": "RocksDB", "rejected_reason": "a C++ build"}])["id"]
        assert mem.show(tool).details["alternatives_considered"] == [  # type: ignore[union-attr]
            {"option": "RocksDB", "rejected_reason": "a C++ build"}]
        with pytest.raises(Exception, match="option and rejected_reason"):
            mem.record_decision(sid, decision="d", alternatives=[{"option": "x", "why": "y"}])
        before = views_dump(mem)
        mem.replay()
        assert views_dump(mem) == before


def test_old_decisions_decode_with_plain_alternatives() -> None:
    """A decision written before reasons were kept (no ``rejected_reasons``)
    decodes, and shows each alternative as an option without a reason."""
    import msgspec

    from commands.app.results import alternatives_considered
    from eventstore import DecisionDetails, EntryRecorded

    old = {"type": "entry.recorded", "entry_id": "dec-1", "kind": "decision", "content": "Use PostgreSQL",
           "occurred_at": 1, "details": {"kind": "decision", "alternatives": ["MySQL: weaker JSON"],
                                         "approved_by": []}}
    event = msgspec.msgpack.decode(msgspec.msgpack.encode(old), type=EntryRecorded)
    assert isinstance(event.details, DecisionDetails) and event.details.rejected_reasons == ()
    shown = alternatives_considered(event.details)
    assert shown == [{"option": "MySQL: weaker JSON", "rejected_reason": None}]


def test_a_writer_joins_the_session_agents(run: Run, store: Path) -> None:
    """An entry written with a new agent adds it to the session's ``agent_ids``
    (a ``session.updated`` in the same append); live views equal a replay's."""
    sid = _session(run, "--user", "alice", "--agent", "architect")
    _ok(run("add", "message", sid, "--role", "assistant", "--content", "hi", "--agent", "newagent"))
    _ok(run("add", "message", sid, "--role", "assistant", "--content", "again", "--agent", "newagent"))
    assert _ok(run("session", "show", sid))["agent_ids"] == ["architect", "newagent"]
    with MemoryLog.open(store) as mem:
        mem.record_finding(sid, description="slow query", agent_id="reviewer")
        with mem.batch():
            mem.add_message(sid, role="assistant", content="one", agent_id="batcher")
            mem.add_message(sid, role="assistant", content="two", agent_id="batcher")
        _, writes = _tools(mem, "alice", agent="mcp-agent")
        writes.record(sid, "lesson", "a lesson from the tool")
        assert mem.session(sid).agent_ids == ("architect", "newagent", "reviewer", "batcher", "mcp-agent")
        updates = [i for i in mem.history(sid) if i.type == "session.updated"]
        assert len(updates) == 4  # once per new agent
        before = views_dump(mem)
        mem.replay()
        assert views_dump(mem) == before


def test_the_mcp_server_takes_the_new_arguments(tmp_path: Path) -> None:
    """Through the MCP protocol (an in-process client): record's parent_id and
    alternatives objects, remember's session_id and recall's topic pass the
    tools' input schemas."""
    import asyncio

    mcp = pytest.importorskip("mcp")
    from commands.mcp import build_server

    async def scenario(mem: MemoryLog, sid: str) -> dict[str, Any]:
        async with mcp.Client(build_server(mem, ServerScope("alice", "helper"))) as client:
            async def call(name: str, **args: Any) -> Any:
                result = await client.call_tool(name, args)
                assert not result.is_error, result.content
                return result.structured_content

            ask = (await call("record", session_id=sid, kind="message", content="which queue",
                              role="user", topic="queues"))["id"]
            reply = (await call("record", session_id=sid, kind="message", content="Kafka for the queue",
                                role="assistant", topic="queues", parent_id=ask))["id"]
            did = (await call("record", session_id=sid, kind="decision", content="Use Kafka", alternatives=[
                {"option": "SQS", "rejected_reason": "no replay"}, "Redis"]))["id"]
            mid = (await call("remember", key="queue", content="Kafka", session_id=sid))["id"]
            found = await call("recall", query="queue", topic="queues", source="entries")
            return {"reply": reply, "ask": ask, "did": did, "mid": mid,
                    "found": [h["id"] for h in found["results"]]}

    with MemoryLog.open(tmp_path / "store") as mem:
        sid = mem.start_session(user_id="alice")
        got = asyncio.run(scenario(mem, sid))
        assert set(got["found"]) == {got["ask"], got["reply"]}
        assert mem.show(got["reply"]).details["parent_id"] == got["ask"]  # type: ignore[union-attr]
        assert mem.show(got["did"]).details["alternatives_considered"] == [  # type: ignore[union-attr]
            {"option": "SQS", "rejected_reason": "no replay"}, {"option": "Redis", "rejected_reason": None}]
        assert mem.show(got["mid"]).session_id == sid  # type: ignore[union-attr]
        assert mem.session(sid).agent_ids == ("helper",)


def test_an_object_for_alternatives_and_a_missing_session_are_refused(tmp_path: Path) -> None:
    from eventstore import InvalidInputError, SessionNotFoundError

    with MemoryLog.open(tmp_path / "store") as mem:
        sid = mem.start_session(user_id="alice")
        head = mem.store.log.head().seq
        with pytest.raises(InvalidInputError, match="alternatives"):
            mem.record_decision(sid, decision="use postgres",
                                alternatives={"option": "MySQL", "rejected_reason": "weak JSON"})  # type: ignore[arg-type]
        with pytest.raises(SessionNotFoundError):
            mem.remember("alice", "db", "postgres", session_id="sess-doesnotexist")
        assert mem.store.log.head().seq == head
