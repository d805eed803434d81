"""The small fields of seeds 000, 001 and 002, each through the CLI (``--json``),
the library and the MCP tools: hashtags as tags, a message's parent, a
decision's rejected alternatives, writers joining a session's agents, ``+`` in
ids, ``remember --session`` and the ``--topic`` filter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from commands import MemoryLog
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
    _ok(run("add", "message", sid, "--role", "user", "--content", "which store for the cache",
            "--topic", "caching"))
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
        assert [h.id for h in mem.as_of(mem.log.head().seq).search("store", topic="caching")] != [db]
