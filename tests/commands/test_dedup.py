"""Dedup of lessons (seed 004): Jaccard of word sets against the live lessons of
the same scope; a near copy reinforces (an event, an access) instead of adding."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from commands import MemoryLog
from commands.app.recording import records
from commands.app.recording.dedup import jaccard
from eventstore import EntryReinforced, InvalidInputError
from projections import lesson_words

COMMON = [f"w{i:03d}" for i in range(100)]


def pair(common: int, extra_a: int, extra_b: int) -> tuple[str, str]:
    """Two lessons sharing ``common`` words, each with words of its own."""
    a = COMMON[:common] + [f"a{i}" for i in range(extra_a)]
    b = COMMON[:common] + [f"b{i}" for i in range(extra_b)]
    return " ".join(a), " ".join(b)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[MemoryLog]:
    with MemoryLog.open(tmp_path / "m", embedder=None) as m:
        yield m


def _reinforcements(mem: MemoryLog) -> list[EntryReinforced]:
    return [r.event for r in mem.log.read() if isinstance(r.event, EntryReinforced)]


def test_079_adds_and_081_reinforces(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice", agent_ids=["dev"])
    low_a, low_b = pair(79, 10, 11)  # 79 / 100
    high_a, high_b = pair(81, 9, 10)  # 81 / 100
    assert jaccard(lesson_words(low_a), lesson_words(low_b)) == pytest.approx(0.79)
    assert jaccard(lesson_words(high_a), lesson_words(high_b)) == pytest.approx(0.81)
    first = mem.record_lesson(sid, content=low_a, agent_id="dev")
    second = mem.record_lesson(sid, content=low_b, agent_id="dev")
    assert second != first and mem.show(second).content == low_b  # 0.79: added
    mem.delete(ids=[first, second], reason="reset", requested_by="test")
    kept = mem.record_lesson(sid, content=high_a, agent_id="dev")
    head = mem.log.head().seq
    again = mem.record_lesson(sid, content=high_b, agent_id="dev")
    assert again == kept  # 0.81: the existing lesson's id
    assert mem.log.head().seq == head + 1  # one event: entry.reinforced, no entry
    (event,) = _reinforcements(mem)
    assert event.entry_id == kept and event.similarity == pytest.approx(0.81) and event.session_id == sid
    assert [e.content for e in mem.search(kinds=["lesson"])] == [high_a]


def test_reinforcement_is_an_access_and_shows_in_history(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice")
    lesson = mem.record_lesson(sid, content="Always pin the toolchain version in CI")
    with mem.proj.read() as views:
        before = views.access(lesson)
    other = mem.start_session(user_id="alice")  # another session of the same scope
    assert mem.record_lesson(other, content="always pin the toolchain version in CI!") == lesson
    with mem.proj.read() as views:
        after = views.access(lesson)
        tally = views.reinforcement(lesson)
    assert after.count == before.count + 1 and after.last_at > 0
    assert tally.count == 1 and tally.last_similarity == 1.0 and tally.last_by is not None
    what = [h.what for h in mem.history(lesson) if h.type == "entry.reinforced"]
    assert what == [f"reinforced by {tally.last_by} (similarity 1.00; access count +1)"]


def test_scope_is_user_and_agent(mem: MemoryLog) -> None:
    text = "Retry the payment webhook with exponential backoff"
    alice = mem.start_session(user_id="alice")
    bob = mem.start_session(user_id="bob")
    nobody = mem.start_session()
    a = mem.record_lesson(alice, content=text, agent_id="dev")
    assert mem.record_lesson(alice, content=text, agent_id="qa") != a  # another agent
    assert mem.record_lesson(alice, content=text) != a  # no agent is a scope of its own
    assert mem.record_lesson(bob, content=text, agent_id="dev") != a  # another user
    n = mem.record_lesson(nobody, content=text, agent_id="dev")
    assert n != a and mem.record_lesson(nobody, content=text, agent_id="dev") == n  # no user: one scope
    # a lesson without a session, written for alice, is in alice's scope
    entry = mem.store.entries.build("lesson", text, user_id="alice", agent_id="dev")
    assert records.record(mem.store, entry) == a
    assert len(_reinforcements(mem)) == 2


def test_threshold_setting(tmp_path: Path) -> None:
    text = "Keep migrations backwards compatible for one release"
    with MemoryLog.open(tmp_path / "off", embedder=None, lesson_dedup_threshold=0) as off:
        sid = off.start_session()
        assert off.record_lesson(sid, content=text) != off.record_lesson(sid, content=text)
    with MemoryLog.open(tmp_path / "exact", embedder=None, lesson_dedup_threshold=1.0) as exact:
        sid = exact.start_session()
        first = exact.record_lesson(sid, content=text)
        assert exact.record_lesson(sid, content=text.upper() + ".") == first  # the same word set
        assert exact.record_lesson(sid, content=text + " always") != first
    for bad in (-0.1, 1.5):
        with pytest.raises(InvalidInputError, match="lesson_dedup_threshold"):
            MemoryLog.open(tmp_path / "bad", embedder=None, lesson_dedup_threshold=bad)


def test_only_live_lessons_are_candidates(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice")
    text = "Rotate the signing keys every ninety days"
    first = mem.record_lesson(sid, content=text)
    mem.delete(ids=[first], reason="outdated", requested_by="alice")
    second = mem.record_lesson(sid, content=text)
    assert second != first
    mem.record_decision(sid, decision=text)  # another kind is no candidate, nor a copy
    assert mem.record_lesson(sid, content=text) == second
    with mem.proj.read() as views:
        assert [eid for eid, _, _ in views.scope_lessons("alice", None)] == [second]


def test_extraction_and_import_paths(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice")
    lesson = mem.record_lesson(sid, content="Important: never log the raw payload of a webhook.")
    mem.add_message(sid, role="assistant", content="Important: never log the raw payload of a webhook!\n"
                                                   "Important - never log the raw payload of a webhook")
    report = mem.extract(sid)
    assert report.lessons == (lesson,) and report.skipped == {"repeated": 1, "reinforced": 1}
    # importers keep every record (they carry client event ids)
    entry = mem.store.entries.build("lesson", "Important: never log the raw payload of a webhook.",
                                    session_id=sid)
    assert records.record(mem.store, entry, event_id="import-1") == entry.entry_id


def test_live_equals_replay_with_reinforcements(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice")
    a = mem.record_lesson(sid, content="Cache the tokenizer between requests")
    mem.record_lesson(sid, content="cache the tokenizer between requests")
    b = mem.record_lesson(sid, content="Split the ingest worker by tenant")
    mem.delete(ids=[b], reason="wrong", requested_by="alice")
    mem.add_message(sid, role="user", content="We decided to cache the tokenizer.")
    mem.close_session(sid)
    mem.proj.catch_up()
    assert mem.proj.views is not None
    live = mem.proj.views.dump()
    mem.replay()
    mem.proj.catch_up()
    assert mem.proj.views.dump() == live
    with mem.proj.read() as views:
        assert views.reinforcement(a).count == 1 and views.extraction_backlog() == []


def test_a_compacted_lesson_is_no_candidate(mem: MemoryLog) -> None:
    from eventstore import SessionCompacted

    sid = mem.start_session(user_id="alice")
    text = "Prefer idempotent consumers for the event bus"
    first = mem.record_lesson(sid, content=text)
    mem.log.append(f"session:{sid}", [SessionCompacted(
        session_id=sid, policy="test", removed_entry_ids=(first,), summary_entry_id=None,
        bytes_before=10, bytes_after=5)], actor="test")
    assert mem.record_lesson(sid, content=text) != first
