"""Session close (seed 002): the automatic handoff from the last 6 messages and
extraction, before the close; the next session's context shows the handoff; a
failure of either never loses the close."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from commands import MemoryLog
from commands.app.upkeep import extraction
from commands.app.upkeep.extraction import EXTRACT_ACTOR
from eventstore import SessionClosed, SessionExtracted, StorageError


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[MemoryLog]:
    with MemoryLog.open(tmp_path / "m", embedder=None) as m:
        yield m


def _talk(mem: MemoryLog, sid: str, turns: int) -> list[str]:
    ids = []
    for i in range(turns):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"turn {i} about the billing export " + "and more " * 30
        ids.append(mem.add_message(sid, role=role, content=text))
    return ids


def test_close_writes_the_handoff_and_the_next_session_shows_it(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice", agent_ids=["dev"])
    ids = _talk(mem, sid, 9)
    mem.add_message(sid, role="tool", content="tool output is not conversation", tool_call_id="call1")
    mem.add_message(sid, role="assistant", content="We decided to ship the export on Monday.")
    head = mem.log.head().seq
    mem.close_session(sid)
    (found,) = mem.search(kinds=["handoff"])
    handoff = mem.show(found.id)
    assert handoff.tags == ("auto-handoff", "session-close") and handoff.session_id == sid
    sources = (*ids[4:9], handoff.derived_from[-1])
    assert handoff.derived_from == sources and len(sources) == 6
    lines = handoff.content.split("\n")
    assert lines[0] == "[User]: " + ("turn 4 about the billing export " + "and more " * 30)[:200]
    assert lines[1].startswith("[Agent]: turn 5") and len(lines[1]) == len("[Agent]: ") + 200
    assert lines[-1] == "[Agent]: We decided to ship the export on Monday."
    written = [(r.type, r.actor) for r in mem.log.read(head + 1)]
    assert written == [("entry.recorded", EXTRACT_ACTOR), ("entry.recorded", EXTRACT_ACTOR),
                       ("session.extracted", EXTRACT_ACTOR), ("session.closed", "memlog")]
    (decision,) = mem.search(kinds=["decision"])
    assert decision.tags == ("auto-extract", "session-close")
    first = next(iter(mem.log.read(head + 1))).event  # the order: handoff, extraction, close
    assert getattr(first, "entry_id", None) == found.id
    # the next session of the same user and agent shows it
    nxt = mem.start_session(user_id="alice", agent_ids=["dev"])
    block = mem.context(nxt, budget_tokens=4000)
    assert "Last session:" in block.text
    assert "[Agent]: We decided to ship the export on Monday." in block.text
    other = mem.start_session(user_id="bob")
    assert "Last session:" not in mem.context(other).text


def test_the_agents_own_handoff_is_kept_over_an_automatic_one(mem: MemoryLog) -> None:
    """An agent's handoff newer than the conversation is what the next session
    reads: the close writes no automatic one over it. A message after the
    agent's handoff makes the automatic one again."""
    sid = mem.start_session(user_id="alice")
    _talk(mem, sid, 3)
    own = mem.record_handoff(sid, content="Next: write the failover runbook")
    block = mem.context(sid, budget_tokens=4000)
    assert "Handoff (this session):\nNext: write the failover runbook" in block.text
    assert "Last session:" not in block.text
    mem.close_session(sid)
    assert [h.id for h in mem.search(kinds=["handoff"])] == [own]
    text = mem.context(mem.start_session(user_id="alice"), budget_tokens=4000).text
    assert "Last session:\nNext: write the failover runbook" in text
    later = mem.start_session(user_id="alice")
    mem.record_handoff(later, content="Next: load-test pgbouncer")
    _talk(mem, later, 2)
    mem.close_session(later)
    assert len(mem.search(kinds=["handoff"])) == 3  # the conversation went on: an automatic one too
    dated = mem.start_session(user_id="alice")  # "newer" is by the time it occurred, as the context reads
    _talk(mem, dated, 2)
    mem.record_handoff(dated, content="Next: an old note", occurred_at="2020-01-01T00:00:00Z")
    mem.close_session(dated)
    assert len(mem.search(kinds=["handoff"])) == 5


def test_no_message_no_handoff(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice")
    mem.add_message(sid, role="system", content="You are a helpful agent for the billing team.")
    mem.close_session(sid)
    assert mem.search(kinds=["handoff"]) == []
    assert [r.type for r in mem.log.read()][-2:] == ["session.extracted", "session.closed"]


def test_both_can_be_switched_off(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "m", embedder=None, handoff_on_close=False, extract_on_close=False) as mem:
        sid = mem.start_session(user_id="alice")
        mem.add_message(sid, role="user", content="We decided to keep the nightly export.")
        head = mem.log.head().seq
        mem.close_session(sid)
        assert [r.type for r in mem.log.read(head + 1)] == ["session.closed"]
    with MemoryLog.open(tmp_path / "m", embedder=None, extract_on_close=False) as mem:
        sid = mem.start_session(user_id="alice")
        mem.add_message(sid, role="user", content="We decided to keep the nightly export.")
        mem.close_session(sid)
        assert len(mem.search(kinds=["handoff"])) == 1 and mem.search(kinds=["decision"]) == []


def test_a_failure_never_loses_the_close(mem: MemoryLog, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "zqclosefailuresecret"

    def broken(*args: Any, **kwargs: Any) -> None:
        raise StorageError(f"disk trouble near {secret}")

    monkeypatch.setattr(extraction, "write_handoff", broken)
    monkeypatch.setattr(extraction, "extract_session", broken)
    sid = mem.start_session(user_id="alice")
    mem.add_message(sid, role="user", content=f"We decided to use {secret}.")
    with structlog.testing.capture_logs() as logs:
        mem.close_session(sid)
    assert isinstance(list(mem.log.read())[-1].event, SessionClosed)
    assert mem.session(sid).closed_at is not None
    failures = [line for line in logs if "failed" in line["event"]]
    assert [(f["event"], f["session_id"], f["code"]) for f in failures] == [
        ("handoff on close failed", sid, "E_STORAGE_IO"), ("extraction on close failed", sid, "E_STORAGE_IO")]
    assert secret not in repr(logs)
    # the messages stay in the extraction backlog for maintain
    with mem.proj.read() as views:
        assert views.extraction_backlog() == [(sid, 1)]


def test_read_only_close_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    from eventstore import ReadOnlyError

    with MemoryLog.open(tmp_path / "m", embedder=None) as mem:
        sid = mem.start_session(user_id="alice")
        mem.add_message(sid, role="user", content="We decided to keep the nightly export.")
        head = mem.log.head().seq
    with MemoryLog.open(tmp_path / "m", embedder=None, read_only=True) as ro, pytest.raises(ReadOnlyError):
        ro.close_session(sid)
    with MemoryLog.open(tmp_path / "m", embedder=None) as mem:
        assert mem.log.head().seq == head
        assert not [r for r in mem.log.read() if isinstance(r.event, SessionExtracted)]


def test_an_empty_session_in_between_does_not_hide_the_handoff(mem: MemoryLog) -> None:
    """The next day the user opens a session, leaves it empty, opens another: the
    closed session's handoff still shows, once, and the recovery snapshot does
    not repeat the messages the handoff quotes; another user's never shows."""
    sid = mem.start_session(user_id="alice", agent_ids=["dev"])
    mem.add_message(sid, role="user", content="Which queue should the billing export use?")
    mem.add_message(sid, role="assistant", content="We decided to use Postgres SKIP LOCKED for it.")
    bob = mem.start_session(user_id="bob")
    mem.add_message(bob, role="user", content="Bob keeps his plans about the vault to himself.")
    mem.close_session(bob)
    mem.close_session(sid)
    mem.start_session(user_id="alice", agent_ids=["dev"])  # opened and left empty
    text = mem.context(mem.start_session(user_id="alice", agent_ids=["dev"])).text
    assert "Last session:" in text and text.count("Which queue should the billing export use?") == 1
    assert "vault" not in text
