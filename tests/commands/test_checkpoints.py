"""Checkpoints and recovery (seed 002): recover reads the log as of
the checkpoint, ignores an expired one, and a deleted session takes its
checkpoints with it (byte scan)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from commands import MemoryLog
from commands.app.forgetting.scan import scan_tree
from commands.app.upkeep import checkpoints
from eventstore import CheckpointMarked, now_micros

from .conftest import Run, marker, views_dump

DAY = 86_400_000_000


def test_recover_returns_the_context_as_of_the_checkpoint(tmp_path: Path) -> None:
    early, late = marker(), marker()
    with MemoryLog.open(tmp_path / "s", semantic=False) as mem:
        sid = mem.start_session(user_id="alice", agent_ids=["dev"])
        first = mem.add_message(sid, role="user", content=f"we talk about {early}")
        mem.add_message(sid, role="assistant", content="noted, the cache stays")
        mem.record_decision(sid, decision=f"adopt {early} for the queue")
        cid = mem.checkpoint(sid, model_id="claude-opus-4-6", chat_id="chat_abc123")
        mem.add_message(sid, role="user", content=f"after the checkpoint {late}")
        found = mem.recover("alice")
        assert found is not None
        assert (found.checkpoint_id, found.session_id, found.agent_id) == (cid, sid, "dev")
        assert (found.model_id, found.chat_id) == ("claude-opus-4-6", "chat_abc123")
        assert early in found.context.text and late not in found.context.text
        assert found.messages[0].id == first and len(found.messages) == 2
        assert all(late not in (m.content or "") for m in found.messages)
        # the same through the agent, and nothing for another agent or user
        assert mem.recover("alice", "dev") == found
        assert mem.recover("alice", "qa") is None
        assert mem.recover("bob") is None
        # the checkpoint is an event on the session's stream, with labels only
        marked = [r for r in mem.log.read() if isinstance(r.event, CheckpointMarked)]
        assert len(marked) == 1 and marked[0].stream == f"session:{sid}" and marked[0].seq == found.seq


def test_only_the_newest_checkpoint_counts_and_an_expired_one_is_ignored(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s", semantic=False) as mem:
        sid = mem.start_session(user_id="alice", agent_ids=["dev"])
        mem.add_message(sid, role="user", content="first part")
        mem.checkpoint(sid)
        mem.add_message(sid, role="user", content="second part")
        newest = mem.checkpoint(sid, chat_id="chat-2")
        found = checkpoints.recover(mem.store, "alice", now=now_micros() + 6 * DAY)
        assert found is not None and found.checkpoint_id == newest and len(found.messages) == 2
        # past 7 days the newest is expired, and no older one can be valid
        assert checkpoints.recover(mem.store, "alice", now=now_micros() + 8 * DAY) is None
    with MemoryLog.open(tmp_path / "s", semantic=False, checkpoint_valid_days=0) as mem:
        found = checkpoints.recover(mem.store, "alice", now=now_micros() + 800 * DAY)
        assert found is not None and found.checkpoint_id == newest  # 0: never expires


def test_content_deleted_since_does_not_come_back(tmp_path: Path) -> None:
    secret = marker()
    with MemoryLog.open(tmp_path / "s", semantic=False) as mem:
        sid = mem.start_session(user_id="alice")
        gone = mem.add_message(sid, role="user", content=f"a secret {secret} said once")
        mem.add_message(sid, role="user", content="and a harmless line")
        mem.checkpoint(sid)
        mem.delete(ids=[gone], reason="asked", requested_by="alice")
        found = mem.recover("alice")
        assert found is not None and secret not in found.context.text
        assert [m.id for m in found.messages if m.content and secret in m.content] == []


def test_a_deleted_session_takes_its_checkpoints_with_it(tmp_path: Path) -> None:
    chat = "chat-" + secrets.token_hex(16)  # a label the scan can tell from anything else
    root = tmp_path / "s"
    with MemoryLog.open(root) as mem:
        kept = mem.start_session(user_id="alice")
        mem.add_message(kept, role="user", content="the other session stays")
        mem.checkpoint(kept, chat_id="chat-kept")
        sid = mem.start_session(user_id="alice")
        mem.add_message(sid, role="user", content="a message of the session")
        mem.checkpoint(sid, chat_id=chat, model_id="model-x")
        assert mem.recover("alice") is not None and mem.recover("alice").chat_id == chat  # type: ignore[union-attr]
        assert scan_tree(root, [chat.encode()])[0]  # the positive control
        report = mem.delete(session_id=sid, reason="gdpr", requested_by="alice")
        assert report.purged and report.verified
        found = mem.recover("alice")
        assert found is not None and found.chat_id == "chat-kept"  # the older checkpoint of another session
        live = views_dump(mem)
        mem.replay()
        assert views_dump(mem) == live  # live = replay after the erasure
    assert not scan_tree(root, [chat.encode()])[0]


def test_cli_checkpoint_and_recover(run: Run) -> None:
    code, started, _ = run("session", "start", "--user", "alice", "--agent", "dev")
    assert code == 0
    sid = started["id"]
    assert run("add", "message", sid, "--role", "user", "--content", "hello there")[0] == 0
    code, marked, err = run("checkpoint", "--session", sid, "--model", "m1", "--chat", "c1")
    assert code == 0, err
    code, found, err = run("recover", "--user", "alice", "--agent", "dev")
    assert code == 0, err
    assert found["recovered"] and found["checkpoint_id"] == marked["id"] and found["chat_id"] == "c1"
    assert "hello there" in found["context"]["text"]
    code, none, _ = run("recover", "--user", "bob")
    assert code == 0 and none == {"recovered": False}
    code, text, _ = run("recover", "--user", "alice", as_json=False)
    assert code == 0 and marked["id"] in text
    code, again, _ = run("recover", "--user", "alice", "--json", as_json=False)
    assert code == 0 and json.loads(again)["checkpoint_id"] == marked["id"]
