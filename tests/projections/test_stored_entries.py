"""Content-free stored entries: the accumulated changes, the writer's fields and
the readers' EntryView equal what applying every update to the entry gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from eventstore import (
    ENTRY_KINDS,
    DecisionDetails,
    EntryChanges,
    EntryRecorded,
    EntryRedacted,
    EntryUpdated,
    EventLog,
    FindingDetails,
    Header,
    RecordedEvent,
    SessionCompacted,
    SessionStarted,
    TaskDetails,
)
from projections import EntryView, Projections, entry_importance
from projections.views import reducers as r

LEVELS = st.sampled_from([None, "low", "medium", "high", "critical"])
STATUSES = st.sampled_from(["open", "in_progress", "resolved", "wont_fix"])
DETAILS = st.one_of(
    st.none(),
    st.builds(TaskDetails, done=st.booleans()),
    st.builds(FindingDetails, severity=LEVELS, status=STATUSES),
    st.builds(DecisionDetails, impact=LEVELS),
)
UNIT = st.floats(0.0, 1.0)
TAGS = st.lists(st.sampled_from(["a", "b", "c"]), max_size=2).map(tuple)
ENTRIES = st.builds(
    EntryRecorded, entry_id=st.just("e1"), kind=st.sampled_from(ENTRY_KINDS), content=st.just("text"),
    occurred_at=st.integers(0, 10**15), importance=st.none() | UNIT, tags=TAGS, details=DETAILS,
)
CHANGES = st.builds(EntryChanges, status=st.none() | STATUSES, done=st.none() | st.booleans(),
                    importance=st.none() | UNIT, tags=st.none() | TAGS)


def one_by_one(entry: EntryRecorded, changes: EntryChanges) -> EntryRecorded:
    """The update as the views applied it while they held the entry (the
    reference: ``reducers.entry_changed`` before entries were stored without content)."""
    details = entry.details
    if changes.done is not None and entry.kind == "task":
        details = TaskDetails(done=changes.done)
    if changes.status is not None and isinstance(details, FindingDetails):
        details = msgspec.structs.replace(details, status=changes.status)
    return msgspec.structs.replace(
        entry, details=details,
        importance=entry.importance if changes.importance is None else changes.importance,
        tags=entry.tags if changes.tags is None else changes.tags,
    )


def record(seq: int) -> RecordedEvent:
    return RecordedEvent(Header(seq, "s", seq, f"id{seq}", "entry.updated", seq * 10, "t"), None)


@given(entry=ENTRIES, updates=st.lists(CHANGES, min_size=1, max_size=6))
def test_merged_changes_applied_once_equal_sequential_application(
        entry: EntryRecorded, updates: list[EntryChanges]) -> None:
    """Merging updates then applying them once gives the entry, importance and rank
    that applying them one by one gives; the stored form carries the same values."""
    expected = entry
    merged: EntryChanges | None = None
    for changes in updates:
        expected = one_by_one(expected, changes)
        merged = r.merge_changes(merged, changes)
    assert merged is not None
    assert r.apply_changes(entry, merged) == expected
    first = RecordedEvent(Header(1, "s", 1, "id1", "entry.recorded", 10, "t"), entry)
    stored = r.entry_recorded(first, entry)
    for seq, changes in enumerate(updates, 2):
        stored = r.entry_changed(stored, record(seq), changes)
    assert stored.changes == merged and stored.size == len(entry.content.encode())
    assert r.entry_view(stored, entry).entry == expected
    assert entry_importance(stored) == entry_importance(expected)
    assert r.entry_view(stored, None).entry is None


def test_the_entry_comes_from_a_redaction_payload_and_must_match_the_id() -> None:
    """A redacted entry is read from the ``entry.redacted`` payload; an event naming
    another entry (never expected) resolves to no entry rather than a wrong one."""
    entry = EntryRecorded(entry_id="e1", kind="message", content="x", occurred_at=1)
    first = RecordedEvent(Header(1, "s", 1, "id1", "entry.recorded", 10, "t"), entry)
    stored = r.entry_recorded(first, entry)
    redaction = EntryRedacted(entry_id="e1", target_seq=1, spans={"email": 1}, reason="r",
                              requested_by="t", redacted=entry)
    assert r.entry_view(stored, redaction).entry == entry
    assert r.entry_view(stored, msgspec.structs.replace(entry, entry_id="e2")).entry is None


class Scenario:
    """Entries with updates, a redaction, a compaction and a deletion, through the log."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self.task = EntryRecorded(entry_id="t1", kind="task", content="ship the release",
                                  occurred_at=1, session_id="s1", details=TaskDetails())
        self.finding = EntryRecorded(entry_id="f1", kind="finding", content="token in logs",
                                     occurred_at=2, session_id="s1", tags=("sec",),
                                     details=FindingDetails(severity="high", evidence="build 12"))
        self.note = EntryRecorded(entry_id="n1", kind="message", content="mail bob@example.com",
                                  occurred_at=3, session_id="s1")
        self.seq: dict[str, int] = {"start": self.put(SessionStarted(session_id="s1"))}
        for entry in (self.task, self.finding, self.note):
            self.seq[entry.entry_id] = self.put(entry)
        self.seq["done"] = self.update("t1", EntryChanges(done=True, tags=("urgent",)))
        self.seq["status"] = self.update("f1", EntryChanges(status="resolved"))
        self.seq["importance"] = self.update("f1", EntryChanges(importance=0.3, tags=("sec", "ops")))
        self.seq["reopen"] = self.update("t1", EntryChanges(done=False))
        self.seq["note_importance"] = self.update("n1", EntryChanges(importance=0.9))
        self.redacted = msgspec.structs.replace(self.note, content="mail [REDACTED]", importance=0.9)
        self.seq["redact"] = log.erase([self.seq["n1"]], EntryRedacted(
            entry_id="n1", target_seq=self.seq["n1"], spans={"email": 1}, reason="pii",
            requested_by="t", redacted=self.redacted), stream="system", actor="t").last_seq
        self.seq["after_redact"] = self.update("n1", EntryChanges(tags=("x",)))
        self.seq["compact"] = self.put(SessionCompacted(
            session_id="s1", policy="p", removed_entry_ids=("t1",), summary_entry_id=None,
            bytes_before=1, bytes_after=0))

    def put(self, event: Any) -> int:
        return self.log.append("s", [event], actor="t").last_seq

    def update(self, entry_id: str, changes: EntryChanges) -> int:
        return self.put(EntryUpdated(entry_id=entry_id, changes=changes))


def view_at(proj: Projections, entry_id: str, as_of: int | None) -> EntryView | None:
    assert proj.views is not None
    with proj.views.read(as_of) as views:
        return views.entry(entry_id)


def test_updates_redaction_and_compaction_read_back_as_before(tmp_path: Path) -> None:
    """Every as-of read gives the entry with the updates up to that seq applied."""
    with EventLog.open(tmp_path / "log") as log:
        sc = Scenario(log)
        proj = Projections(tmp_path, log, shards=1)
        try:
            proj.catch_up(search=True)
            seq = sc.seq
            task_done = one_by_one(sc.task, EntryChanges(done=True, tags=("urgent",)))
            for k, state, entry in ((seq["t1"], "live", sc.task), (seq["done"], "live", task_done),
                                    (seq["reopen"], "live", one_by_one(task_done, EntryChanges(done=False))),
                                    (seq["compact"], "compacted",
                                     one_by_one(task_done, EntryChanges(done=False)))):
                view = view_at(proj, "t1", k)
                assert view is not None and (view.state, view.entry) == (state, entry)
                assert view.changed_seq == k and view.recorded_seq == seq["t1"]
            resolved = one_by_one(sc.finding, EntryChanges(status="resolved"))
            final = one_by_one(resolved, EntryChanges(importance=0.3, tags=("sec", "ops")))
            assert view_at(proj, "f1", seq["status"]).entry == resolved  # type: ignore[union-attr]
            assert view_at(proj, "f1", None).entry == final  # type: ignore[union-attr]
            # The redaction replaced every version: as of any seq the text is the redacted one.
            for k in (seq["n1"], seq["note_importance"], seq["redact"]):
                view = view_at(proj, "n1", k)
                assert view is not None and view.state == "redacted" and view.entry == sc.redacted
            now = view_at(proj, "n1", None)
            assert now is not None and now.entry == one_by_one(sc.redacted, EntryChanges(tags=("x",)))
            assert now.redacted is not None and now.redacted.seq == seq["redact"]
            assert view_at(proj, "n1", seq["start"]) is None
            with proj.read() as views:
                ranks = views.rank_inputs([seq["f1"], seq["n1"]])
            assert [x.importance if x else None for x in ranks] == [0.3, 0.9]
        finally:
            proj.close()


def test_session_statistics_as_of_use_the_stored_sizes(tmp_path: Path) -> None:
    """Statistics recomputed as of a seq count the stored content sizes."""
    with EventLog.open(tmp_path / "log") as log:
        sc = Scenario(log)
        proj = Projections(tmp_path, log, shards=1)
        try:
            with proj.read(sc.seq["note_importance"]) as views:
                before = views.session_stats("s1")
            with proj.read() as views:
                now = views.session_stats("s1")
            sizes = [len(e.content.encode()) for e in (sc.task, sc.finding, sc.redacted)]
            assert (before.entries, before.bytes) == (3, sum(sizes))
            assert (now.entries, now.bytes) == (2, sum(sizes[1:]))  # the task was compacted
        finally:
            proj.close()
