"""Edges of memory that forms itself, found by review: dedup never folds a
lesson into one that is about to go or is out of sight; a redaction reaches
memlog's own copies; a refused write restores nothing; the backlog follows
``extract_on_close``."""

from __future__ import annotations

from pathlib import Path

import pytest

from commands import MemoryLog
from eventstore import InvalidInputError

from ..conftest import scan_dir

LESSON = "Always pin the toolchain version in CI builds"


@pytest.mark.parametrize("where", ["ephemeral", "archived"])
def test_a_lesson_is_not_folded_into_one_of_an_ephemeral_or_archived_session(tmp_path: Path,
                                                                             where: str) -> None:
    with MemoryLog.open(tmp_path / "m", embedder=None) as mem:
        other = mem.start_session(user_id="alice", ephemeral=where == "ephemeral")
        first = mem.record_lesson(other, content=LESSON)
        if where == "archived":
            mem.archive_session(other)
        mine = mem.start_session(user_id="alice")
        second = mem.record_lesson(mine, content=LESSON)
        assert second != first and mem.show(second).session_id == mine
        assert [h.id for h in mem.search("toolchain", session_id=mine, record_access=False)] == [second]
        again = mem.record_lesson(mine, content=LESSON + "!")  # its own session's copy still counts
        assert again == second


def test_a_redaction_reaches_the_handoff_and_the_extracted_entries(tmp_path: Path) -> None:
    secret = "Zebulon Quartermaine"
    with MemoryLog.open(tmp_path / "m", embedder=None) as mem:
        sid = mem.start_session(user_id="alice")
        mid = mem.add_message(sid, role="assistant", content=f"We decided to hire {secret} for the audit.")
        mem.close_session(sid)
        derived = [h.id for h in mem.search("audit", kinds=["handoff", "decision"], record_access=False)]
        assert len(derived) == 2
        report = mem.redact(mid, regex="Zebulon Quartermaine", reason="name", requested_by="alice")
        assert report.verified
        assert all(mem.show(i).state == "deleted" for i in derived)
        nxt = mem.start_session(user_id="alice")
        assert secret not in mem.context(nxt).text
    assert not scan_dir(tmp_path / "m", [secret.encode()])


def test_a_refused_write_does_not_restore_an_archived_session(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "m", embedder=None) as mem:
        sid = mem.start_session(user_id="alice")
        mem.add_message(sid, role="user", content="hello there")
        mem.archive_session(sid)
        head = mem.log.head().seq
        for bad in (lambda: mem.add_message(sid, role="bogus", content="x"),
                    lambda: mem.record_lesson(sid, content="x y z", tags=[""]),
                    lambda: mem.checkpoint(sid, chat_id="")):
            with pytest.raises(InvalidInputError):
                bad()
        assert mem.log.head().seq == head and mem.session(sid).archived
        mem.add_message(sid, role="user", content="back again")  # a good write restores it
        assert not mem.session(sid).archived


def test_the_backlog_follows_extract_on_close(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "m", embedder=None, extract_on_close=False) as mem:
        sid = mem.start_session(user_id="alice")
        mem.add_message(sid, role="assistant", content="Lesson learned: the proxy cuts idle links.")
        mem.close_session(sid)
        assert mem.maintain(dry_run=True).due == 0
    with MemoryLog.open(tmp_path / "m", embedder=None) as mem:
        (step,) = [s for s in mem.maintain(dry_run=True).steps if s.name == "extraction"]
        assert [d.target for d in step.due] == [sid]
