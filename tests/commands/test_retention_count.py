"""Retention by count (seed 004): at most ``lesson_limit`` lessons
per scope, the oldest deleted first through the privacy pipeline (byte scan)."""

from __future__ import annotations

from pathlib import Path

from commands import MemoryLog
from commands.app.forgetting.scan import scan_tree
from commands.app.upkeep.maintain import MAINTAIN_ACTOR, StepContext
from commands.app.upkeep.retention_count import retention_count_step
from commands.app.upkeep.summariser import ExtractiveSummariser
from eventstore import RetentionApplied, now_micros

from .conftest import marker, views_dump

HOUR = 3_600_000_000


def run_all(mem: MemoryLog) -> int:
    ctx = StepContext(MAINTAIN_ACTOR, now_micros(), ExtractiveSummariser())
    return sum(retention_count_step.run(mem.store, due, ctx)
               for due in retention_count_step.due(mem.store, ctx.now))


def test_the_oldest_lessons_past_the_limit_go_and_are_purged(tmp_path: Path) -> None:
    root = tmp_path / "s"
    marks = [marker() for _ in range(5)]
    start = now_micros() - 100 * HOUR
    with MemoryLog.open(root, lesson_limit=3, redact_on_ingest=False) as mem:
        sid = mem.start_session(user_id="alice", agent_ids=["dev", "qa"])
        # recorded newest first: the oldest by occurred_at go, whatever the order of recording
        ids = {i: mem.record_lesson(sid, content=f"lesson {i} says {marks[i]} matters", agent_id="dev",
                                    occurred_at=start + i * HOUR) for i in reversed(range(5))}
        other = [mem.record_lesson(sid, content=f"qa lesson {i}", agent_id="qa") for i in range(3)]
        due = retention_count_step.due(mem.store, now_micros())
        assert [(d.step, d.target, d.items) for d in due] == [("retention_count", "alice/dev", 2)]
        assert due[0].reason == "2 lessons over lesson_limit=3"  # ids and figures, never content
        mem.log.backend.seal()  # recent payloads are concealed until sealed (eventstore/lmdb/recent.py)
        assert all(scan_tree(root, [m.encode()])[0] for m in marks)  # the positive control
        assert run_all(mem) == 4
        assert retention_count_step.due(mem.store, now_micros()) == []
        for i in range(5):
            assert mem.show(ids[i]).state == ("deleted" if i < 2 else "live")
        assert all(mem.show(e).state == "live" for e in other)  # another scope keeps its own
        ledger = mem.deletions()[-1]
        assert ledger.reason == "retention" and set(ledger.entry_ids) == {ids[0], ids[1]}
        assert ledger.purge_verified
        applied = [r for r in mem.log.read() if isinstance(r.event, RetentionApplied)]
        assert len(applied) == 1 and applied[0].actor == MAINTAIN_ACTOR
        assert applied[0].event.max_counts == {"lesson": 3} and applied[0].event.scope == "alice/dev"
        assert applied[0].event.request_id == ledger.request_id
        live = views_dump(mem)
        mem.replay()
        assert views_dump(mem) == live
    for i, m in enumerate(marks):
        assert bool(scan_tree(root, [m.encode()])[0]) == (i >= 2), i


def test_a_limit_of_zero_keeps_everything_and_the_count_follows_deletions(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s", lesson_limit=0, semantic=False) as mem:
        sid = mem.start_session(user_id="bob")
        ids = [mem.record_lesson(sid, content=f"lesson number {i}") for i in range(4)]
        assert retention_count_step.due(mem.store, now_micros()) == []
        with mem.store.read() as views:
            assert views.lesson_scopes() == [("bob", "", 4)]
        mem.delete(ids=ids[:1], reason="no longer true", requested_by="bob")
        mem.redact(ids[1], regex="number", reason="r", requested_by="bob")
        with mem.store.read() as views:
            assert views.lesson_scopes() == [("bob", "", 3)]  # a redacted lesson still counts
            assert views.oldest_lessons("bob", "", 10) == ids[1:]
    with MemoryLog.open(tmp_path / "s", lesson_limit=2, semantic=False) as mem:
        assert [d.items for d in retention_count_step.due(mem.store, now_micros())] == [1]
        assert run_all(mem) == 4
        with mem.store.read() as views:
            assert views.lesson_scopes() == [("bob", "", 2)]
