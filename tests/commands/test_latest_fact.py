"""The latest fact wins, and the old one is kept for the past.

A preference set again under its key supersedes the earlier one: ``show``
calls the old one ``superseded`` (by which id, when), search, MCP ``recall``,
the context and LangGraph leave it out, ``audit at`` before the change and
``history`` still have it. A memory saved again under its key is superseded
the same way. Erasing the newer one takes its effect with it, as a replay of
what the log keeps would. A user-scoped search covers the user's entries,
preferences and memories, and the shared project context, by default.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from commands import MemoryLog

from .conftest import Run, views_dump

VERBOSE, CONCISE = "verbose, long prose", "concise bullet points"


def _two_values(mem: MemoryLog) -> tuple[str, str]:
    old = mem.set_preference("alice", key="response_style", value=VERBOSE)
    new = mem.set_preference("alice", key="response_style", value=CONCISE)
    return old, new


def test_a_preference_set_again_supersedes_the_earlier_one(store: Path) -> None:
    with MemoryLog.open(store) as mem:
        old, new = _two_values(mem)
        before = mem.store.log.head().seq - 1
        shown = mem.show(old)
        assert shown.state == "superseded" and shown.superseded is not None
        assert shown.superseded["by"] == new and shown.superseded["seq"] == before + 1
        assert mem.show(new).state == "live" and mem.show(new).superseded is None
        hits = [h.id for h in mem.search("response_style", user_id="alice")]
        assert hits == [new]
        assert [h.id for h in mem.search("verbose prose")] == []
        past = mem.as_of(before)
        assert past.show(old).state == "live"
        assert [h.id for h in past.search("response_style", user_id="alice")] == [old]
        history = mem.history(old)
        assert [h.what for h in history][-1] == f"superseded by {new}"
        sid = mem.start_session(user_id="alice")
        block = mem.context(sid).text
        assert CONCISE in block and VERBOSE not in block
        assert mem.stats()["by_kind"]["preference"] == 1


def test_the_cli_shows_and_searches_only_the_latest(run: Run, store: Path) -> None:
    for value in (VERBOSE, CONCISE):
        code, _, err = run("add", "preference", "--user", "alice", "--key", "response_style",
                           "--value", value)
        assert code == 0, err
    code, hits, err = run("search", "response_style", "--user", "alice")
    assert code == 0, err
    assert [h["content"] for h in hits] == [f"response_style: {CONCISE}"]
    with MemoryLog.open(store) as mem:
        old = mem.as_of(1).search("response_style", user_id="alice")[0].id
    code, shown, err = run("show", old)
    assert code == 0 and shown["state"] == "superseded", err
    code, text, _ = run("show", old, as_json=False)
    assert "(superseded)" in text and f"superseded: by {shown['superseded']['by']}" in text


def test_a_memory_saved_again_is_superseded(store: Path) -> None:
    with MemoryLog.open(store) as mem:
        first = mem.remember("alice", "db", "MySQL eight")
        second = mem.remember("alice", "db", "PostgreSQL sixteen")
        old = mem.show(first)
        assert old.state == "superseded" and old.content == "MySQL eight"
        assert old.superseded is not None and old.superseded["by"] == second
        assert mem.show(second).state == "live"
        assert [h.id for h in mem.search("MySQL", user_id="alice", mode="text")] == []
        assert mem.history(first)[-1].what == f"superseded by {second}"


def test_erasing_the_newer_one_brings_the_earlier_back(store: Path) -> None:
    """A deletion erases the newer preference and its effect: the earlier is
    current again, and live state equals a replay of what the log keeps."""
    with MemoryLog.open(store) as mem:
        first = mem.set_preference("alice", key="tone", value="formal")
        second = mem.set_preference("alice", key="tone", value="casual")
        third = mem.set_preference("alice", key="tone", value="playful")
        mem.delete(ids=[second], reason="mistake", requested_by="alice")
        shown = mem.show(first)
        assert shown.state == "superseded" and shown.superseded is not None
        assert shown.superseded["by"] == third
        mem.delete(ids=[third], reason="mistake", requested_by="alice")
        assert mem.show(first).state == "live"
        assert [h.id for h in mem.search("tone", user_id="alice")] == [first]
        live = views_dump(mem)
        mem.replay()
        assert views_dump(mem) == live


def test_deleting_the_only_preference_of_a_key(store: Path) -> None:
    with MemoryLog.open(store) as mem:
        only = mem.set_preference("bob", key="k0", value="v0")
        mem.set_preference("bob", key="k1", value="v1")
        mem.set_preference("bob", key="k1", value="v2")
        mem.delete(ids=[only], reason="r", requested_by="bob")
        report = mem.delete(user_id="bob", reason="r", requested_by="dpo")
        assert report.counts_by_kind == {"preference": 2} and report.verified
        assert mem.stats()["skipped"] == []
        live = views_dump(mem)
        mem.replay()
        assert views_dump(mem) == live


def test_redacting_a_superseded_preference_keeps_it_superseded(store: Path) -> None:
    with MemoryLog.open(store) as mem:
        old = mem.set_preference("alice", key="contact", value="ring the zqoldline number")
        new = mem.set_preference("alice", key="contact", value="call me")
        mem.redact(old, regex="zqoldline", reason="pii", requested_by="alice")
        shown = mem.show(old)
        assert shown.state == "superseded" and shown.superseded is not None
        assert shown.superseded["by"] == new and "zqoldline" not in (shown.content or "")
        assert [h.id for h in mem.search("contact", user_id="alice")] == [new]
        live = views_dump(mem)
        mem.replay()
        assert views_dump(mem) == live
        assert mem.show(old).state == "superseded"


def test_keys_and_users_do_not_cross(store: Path) -> None:
    with MemoryLog.open(store) as mem:
        a = mem.set_preference("alice", key="editor", value="vim")
        b = mem.set_preference("bob", key="editor", value="emacs")
        c = mem.set_preference("alice", key="shell", value="zsh")
        assert {mem.show(i).state for i in (a, b, c)} == {"live"}


def test_a_user_scoped_search_covers_memories_preferences_and_the_project(run: Run, store: Path) -> None:
    code, _, err = run("remember", "--user", "carol", "favourite_db", "PostgreSQL sixteen")
    assert code == 0, err
    with MemoryLog.open(store) as mem:
        mem.set_project_context(None, content="the project ships release sixteen in spring")
        mem.set_preference("carol", key="release", value="sixteen is the one she tracks")
        mem.remember("dave", "favourite_db", "PostgreSQL sixteen too")
    code, hits, err = run("search", "sixteen", "--user", "carol", "--mode", "text")
    assert code == 0, err
    assert sorted(h["type"] for h in hits) == ["memory", "preference", "project"]
    code, hits, _ = run("search", "sixteen", "--user", "carol", "--source", "entries", "--mode", "text")
    assert sorted(h["type"] for h in hits) == ["preference", "project"]
    code, hits, _ = run("search", "sixteen", "--user", "carol", "--source", "memories", "--mode", "text")
    assert [h["type"] for h in hits] == ["memory"]
    with MemoryLog.open(store) as mem:
        assert [h.type for h in mem.search("sixteen", user_id="carol", mode="text")
                if h.type == "memory"] == ["memory"]
        assert [h.type for h in mem.as_of(mem.store.log.head().seq).search(
            "sixteen", user_id="carol", mode="text") if h.type == "memory"] == ["memory"]


def test_mcp_recall_returns_the_latest_value(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from tests.mcp_client import serve

    store = tmp_path / "store"
    with MemoryLog.open(store) as mem:
        old, new = _two_values(mem)

    async def talk() -> tuple[Any, Any]:
        async with serve(store, "--user", "alice", errlog=tmp_path / "err.log") as c:
            return await c.call("recall", query="response_style"), await c.call("show", item_id=old)

    recall, shown = asyncio.run(talk())
    assert [h["id"] for h in recall["results"]] == [new]
    assert shown["entry"]["state"] == "superseded" and shown["entry"]["superseded"]["by"] == new


def test_langgraph_returns_the_latest_item(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.store.base")
    from commands.langgraph import MemlogStore

    with MemlogStore(tmp_path / "store", embedder=None) as lg:
        lg.put(("alice", "prefs"), "style", {"text": VERBOSE})
        lg.put(("alice", "prefs"), "style", {"text": CONCISE})
        hits = lg.search(("alice", "prefs"), query="prose bullet points")
        assert [h.value["text"] for h in hits] == [CONCISE]
        item = lg.get(("alice", "prefs"), "style")
        assert item is not None and item.value["text"] == CONCISE
