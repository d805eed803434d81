"""Sessions: close, update, transcript, and tool messages' call ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from commands import MemoryLog
from commands.cli import cli
from eventstore import (
    InvalidInputError,
    SessionClosedError,
    SessionNotFoundError,
)


@pytest.fixture
def mem(tmp_path: Path) -> MemoryLog:
    with MemoryLog.open(tmp_path / "m", embedder=None) as m:
        yield m


def test_a_closed_session_takes_no_entries_and_stays_readable(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice")
    mid = mem.add_message(sid, role="user", content="the deploy runs on friday")
    mem.close_session(sid, reason="done")
    with pytest.raises(SessionClosedError):
        mem.add_message(sid, role="user", content="late")
    with pytest.raises(SessionClosedError):
        mem.record_lesson(sid, content="late lesson")
    with pytest.raises(SessionClosedError):
        mem.close_session(sid)
    found = mem.session(sid)
    assert found.closed and found.closed_at is not None
    assert mem.show(mid).content == "the deploy runs on friday"
    # (the close wrote the automatic handoff too)
    assert [h.id for h in mem.search("deploy", session_id=sid, kinds=["message"])] == [mid]
    # a closed session can still be archived, restored and updated
    mem.archive_session(sid)
    mem.restore_session(sid)
    assert mem.update_session(sid, tags=["x"]).tags == ("x",)
    assert mem.session(sid).closed
    # an update leaves the session's state as it was: archived and closed stay so
    mem.archive_session(sid)
    assert mem.update_session(sid, tags=["y"]).tags == ("y",)
    assert mem.session(sid).archived and mem.session(sid).closed


def test_close_within_a_batch_ends_the_session_for_later_writes(mem: MemoryLog) -> None:
    sid = mem.start_session()
    with pytest.raises(SessionClosedError), mem.batch():
        mem.add_message(sid, role="user", content="a")
        mem.close_session(sid)
        mem.add_message(sid, role="user", content="b")
    assert mem.session(sid).statistics["entries"] == 0  # the batch wrote nothing
    assert not mem.session(sid).closed


def test_close_shows_in_as_of_and_history(mem: MemoryLog) -> None:
    sid = mem.start_session()
    before = mem.last_seq
    mem.close_session(sid)
    assert not mem.as_of(before).session(sid).closed
    assert mem.as_of(mem.last_seq).session(sid).closed
    assert [h.what for h in mem.history(sid)][-1] == "closed"


def test_update_replaces_agents_and_tags_and_merges_metadata(mem: MemoryLog) -> None:
    sid = mem.start_session(agent_ids=["a"], tags=["t"], metadata={"k": "1"})
    got = mem.update_session(sid, agent_ids=["b", "c"], metadata={"j": "2"})
    assert got.agent_ids == ("b", "c") and got.tags == ("t",) and got.metadata == {"k": "1", "j": "2"}
    assert mem.update_session(sid, tags=[]).tags == ()
    with pytest.raises(InvalidInputError):
        mem.update_session(sid)
    with pytest.raises(InvalidInputError):
        mem.update_session(sid, metadata={"k": 1})  # type: ignore[dict-item]
    with pytest.raises(SessionNotFoundError):
        mem.update_session("nope", tags=["x"])


def test_transcript_lists_messages_in_order_a_page_at_a_time(mem: MemoryLog) -> None:
    sid = mem.start_session()
    ids = {}
    for hour in (3, 1, 2, 5, 4):  # recorded out of order; the transcript follows occurred_at
        ids[hour] = mem.add_message(sid, role="user", content=f"message {hour}",
                                    occurred_at=f"2026-01-01T0{hour}:00:00Z")
    mem.record_lesson(sid, content="not a message")
    mem.delete(ids=[ids[5]], reason="test", requested_by="t")
    page = mem.transcript(sid, limit=2)
    assert [m.content for m in page.messages] == ["message 1", "message 2"]
    assert (page.total, page.next_offset) == (4, 2)
    page = mem.transcript(sid, limit=2, offset=2)
    assert [m.content for m in page.messages] == ["message 3", "message 4"]
    assert page.next_offset is None
    assert mem.transcript(sid, offset=10).messages == []
    assert len(mem.transcript(sid, limit=None).messages) == 4
    for bad in ({"limit": 0}, {"offset": -1}):
        with pytest.raises(InvalidInputError):
            mem.transcript(sid, **bad)  # type: ignore[arg-type]
    with pytest.raises(SessionNotFoundError):
        mem.transcript("nope")


def test_tool_messages_carry_their_call_id(mem: MemoryLog) -> None:
    sid = mem.start_session()
    tid = mem.add_message(sid, role="tool", content="42", tool_call_id="call_7")
    assert mem.show(tid).details["tool_call_id"] == "call_7"
    with pytest.raises(InvalidInputError):
        mem.add_message(sid, role="user", content="x", tool_call_id="call_8")
    with pytest.raises(InvalidInputError):
        mem.add_message(sid, role="tool", content="x", tool_call_id="bad id!")


def test_cli_update_transcript_close(tmp_path: Path) -> None:
    run = CliRunner().invoke
    d = ["--dir", str(tmp_path / "c")]
    sid = json.loads(run(cli, [*d, "--json", "session", "start", "--user", "u"]).output)["id"]
    assert run(cli, [*d, "add", "message", sid, "--role", "tool", "--content", "ok",
                     "--tool-call-id", "c1"]).exit_code == 0
    assert run(cli, [*d, "session", "update", sid, "--tag", "t1", "--meta", "a=b"]).exit_code == 0
    out = run(cli, [*d, "session", "transcript", sid])
    assert out.exit_code == 0 and "(answers c1)" in out.output and "messages 1-1 of 1" in out.output
    page = json.loads(run(cli, [*d, "--json", "session", "transcript", sid, "--limit", "1"]).output)
    assert page["total"] == 1 and page["messages"][0]["details"]["tool_call_id"] == "c1"
    assert run(cli, [*d, "session", "close", sid, "--reason", "r"]).exit_code == 0
    late = run(cli, [*d, "add", "message", sid, "--role", "user", "--content", "x"])
    assert late.exit_code == 4 and "E_SESSION_CLOSED" in late.output
    shown = json.loads(run(cli, [*d, "--json", "session", "show", sid]).output)
    assert shown["closed"] and shown["tags"] == ["t1"] and shown["metadata"] == {"a": "b"}
    assert run(cli, [*d, "session", "update", sid, "--tag", "x", "--clear-tags"]).exit_code == 2


def test_deleting_a_session_erases_its_updates_and_reasons(tmp_path: Path) -> None:
    from commands.app.forgetting.scan import scan_tree

    root = tmp_path / "d"
    markers = {name: f"zq{name}marker{i}" for i, name in enumerate(("meta", "tag", "close", "archive"))}
    with MemoryLog.open(root, embedder=None) as mem:
        sid = mem.start_session(user_id="alice")
        mem.add_message(sid, role="user", content="hello")
        mem.update_session(sid, metadata={"note": markers["meta"]}, tags=[markers["tag"]])
        mem.archive_session(sid, reason=markers["archive"])
        mem.restore_session(sid)
        mem.close_session(sid, reason=markers["close"])
        mem.log.backend.seal()  # recent payloads are concealed until sealed (eventstore/lmdb/recent.py)
        assert all(scan_tree(root, [m.encode()])[0] for m in markers.values())
        mem.delete(session_id=sid, reason="erasure", requested_by="dpo")
    for name, marker in markers.items():
        assert not scan_tree(root, [marker.encode()])[0], name
    with MemoryLog.open(root, embedder=None) as mem:
        assert mem.verify().ok
        with pytest.raises(SessionNotFoundError):
            mem.session(sid)
