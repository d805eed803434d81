"""Ephemeral and idle sessions (seeds 000 and 004): ephemeral pruning
by age and by count through the privacy pipeline (byte scan), auto-archive
after idle days, auto-restore on a write and on a read, not in read-only mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from commands import MemoryLog
from commands.app.forgetting.scan import scan_tree
from commands.app.upkeep.idle import archive_step, ephemeral_step
from commands.app.upkeep.maintain import MAINTAIN_ACTOR, Step, StepContext
from commands.app.upkeep.summariser import ExtractiveSummariser
from eventstore import (
    ReadOnlyError,
    RetentionApplied,
    SessionArchived,
    SessionArchivedError,
    SessionRestored,
    now_micros,
)

from .conftest import Run, marker, views_dump

HOUR = 3_600_000_000
DAY = 24 * HOUR


def run_step(mem: MemoryLog, step: Step, now: int) -> int:
    ctx = StepContext(MAINTAIN_ACTOR, now, ExtractiveSummariser())
    return sum(step.run(mem.store, due, ctx) for due in step.due(mem.store, now))


def restores(mem: MemoryLog, sid: str) -> list[str | None]:
    return [r.event.reason for r in mem.log.read_stream(f"session:{sid}")
            if isinstance(r.event, SessionRestored)]


def test_ephemeral_sessions_go_by_age_through_the_privacy_pipeline(tmp_path: Path) -> None:
    root = tmp_path / "s"
    secret = marker()
    with MemoryLog.open(root, redact_on_ingest=False) as mem:
        kept = mem.start_session(user_id="alice")
        mem.add_message(kept, role="user", content="a lasting session")
        eph = mem.start_session(user_id="alice", ephemeral=True, metadata={"hook": f"meta {secret}"})
        mem.add_message(eph, role="user", content=f"a hook said {secret} once")
        with mem.store.read() as views:
            assert views.ephemeral_sessions() == [eph]
        assert ephemeral_step.due(mem.store, now_micros() + 47 * HOUR) == []
        due = ephemeral_step.due(mem.store, now_micros() + 49 * HOUR)
        assert [(d.target, d.step) for d in due] == [(eph, "ephemeral")]
        assert due[0].reason.startswith("retention: ephemeral, idle for 4") and secret not in due[0].reason
        assert scan_tree(root, [secret.encode()])[0]  # the positive control
        assert run_step(mem, ephemeral_step, now_micros() + 49 * HOUR) == 4
        assert [s.id for s in mem.sessions(archived=None)] == [kept]
        ledger = mem.deletions()[-1]
        assert ledger.reason.startswith("retention: ephemeral") and ledger.purge_verified
        applied = [r for r in mem.log.read() if isinstance(r.event, RetentionApplied)]
        assert applied[-1].actor == MAINTAIN_ACTOR and applied[-1].event.scope == eph
        assert ephemeral_step.due(mem.store, now_micros() + 49 * HOUR) == []
        live = views_dump(mem)
        mem.replay()
        assert views_dump(mem) == live
    assert not scan_tree(root, [secret.encode()])[0]


def test_ephemeral_sessions_past_the_count_go_least_recently_active_first(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s", ephemeral_max_count=2, ephemeral_max_age_hours=0,
                        semantic=False) as mem:
        first, second, third = (mem.start_session(ephemeral=True) for _ in range(3))
        mem.add_message(first, role="user", content="the first is active again")
        due = ephemeral_step.due(mem.store, now_micros() + 1000 * DAY)  # no age limit: only the count
        assert [d.target for d in due] == [second]
        assert "ephemeral_max_count=2" in due[0].reason
        assert run_step(mem, ephemeral_step, now_micros()) == 4
        assert {s.id for s in mem.sessions()} == {first, third}
    with MemoryLog.open(tmp_path / "s", ephemeral_max_count=0, ephemeral_max_age_hours=0,
                        semantic=False) as mem:
        assert ephemeral_step.due(mem.store, now_micros() + 1000 * DAY) == []  # both off


def test_idle_sessions_are_archived_and_a_write_restores_them(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s", semantic=False) as mem:
        sid = mem.start_session(user_id="alice")
        mem.add_message(sid, role="user", content="one message")
        busy = mem.start_session(user_id="alice")
        assert archive_step.due(mem.store, now_micros() + 29 * DAY) == []
        later = now_micros() + 31 * DAY
        due = archive_step.due(mem.store, later)
        assert {d.target for d in due} == {sid, busy}
        assert all(d.reason == "idle for 31 days (archive_idle_days=30)" for d in due)
        assert run_step(mem, archive_step, later) == 2
        archived = [r for r in mem.log.read_stream(f"session:{sid}") if isinstance(r.event, SessionArchived)]
        assert archived[-1].actor == MAINTAIN_ACTOR and archived[-1].event.reason == due[0].reason
        assert archive_step.due(mem.store, later) == []  # archived ones are not due again
        # a write restores the session, and the restore is activity: not due again for 30 days
        mem.add_message(sid, role="user", content="back again")
        assert not mem.session(sid).archived
        assert restores(mem, sid) == ["auto-restore: a write touched the archived session"]
        assert mem.session(sid).statistics["total_messages"] == 2
        assert [d.target for d in archive_step.due(mem.store, now_micros() + 29 * DAY)] == []
        # closed sessions are archived too (closing restored it first: a write)
        mem.close_session(busy)
        assert mem.session(busy).closed and not mem.session(busy).archived
        assert busy in {d.target for d in archive_step.due(mem.store, now_micros() + 31 * DAY)}
    with MemoryLog.open(tmp_path / "s", archive_idle_days=0, semantic=False) as mem:
        assert archive_step.due(mem.store, now_micros() + 1000 * DAY) == []


@pytest.mark.parametrize("read", ["transcript", "context", "search"])
def test_a_read_naming_an_archived_session_restores_it(tmp_path: Path, read: str) -> None:
    with MemoryLog.open(tmp_path / "s", semantic=False) as mem:
        sid = mem.start_session(user_id="alice")
        mem.add_message(sid, role="user", content="the cache note")
        mem.archive_session(sid)
        assert mem.search("cache") == []  # archived: out of default search
        if read == "transcript":
            assert mem.transcript(sid).total == 1
        elif read == "context":
            assert "the cache note" in mem.context(sid).text
        else:
            assert [h.content for h in mem.search("cache", session_id=sid)] == ["the cache note"]
        assert not mem.session(sid).archived
        assert restores(mem, sid) == ["auto-restore: a read named the archived session"]
        mem.as_of(mem.store.log.head().seq).context(sid)  # an as-of read restores nothing
        assert len(restores(mem, sid)) == 1


def test_read_only_reads_restore_nothing_and_writes_are_refused(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s", semantic=False) as mem:
        sid = mem.start_session(user_id="alice")
        mem.add_message(sid, role="user", content="the cache note")
        mem.archive_session(sid)
        head = mem.store.log.head().seq
    with MemoryLog.open(tmp_path / "s", read_only=True, semantic=False) as ro:
        assert ro.transcript(sid).total == 1
        assert "the cache note" in ro.context(sid).text
        ro.search("cache", session_id=sid)
        assert ro.session(sid).archived
        with pytest.raises(ReadOnlyError):
            ro.add_message(sid, role="user", content="refused")
        assert ro.store.log.head().seq == head


def test_auto_restore_off_keeps_the_old_rules(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s", auto_restore=False, semantic=False) as mem:
        sid = mem.start_session(user_id="alice")
        mem.archive_session(sid)
        with pytest.raises(SessionArchivedError):
            mem.add_message(sid, role="user", content="refused")
        mem.transcript(sid)
        mem.context(sid)
        assert mem.session(sid).archived and restores(mem, sid) == []


def test_cli_session_start_ephemeral(run: Run, store: Path) -> None:
    code, started, err = run("session", "start", "--user", "alice", "--ephemeral")
    assert code == 0, err
    with MemoryLog.open(store, semantic=False) as mem, mem.store.read() as views:
        assert views.ephemeral_sessions() == [started["id"]]
