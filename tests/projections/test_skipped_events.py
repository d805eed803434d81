"""An event a projection cannot apply is skipped, reported and logged; the
projection goes on, later reads work, and a replay skips the same events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import structlog
from click.testing import CliRunner

from commands import MemoryLog
from commands.cli import cli
from eventstore import (
    EntryChanges,
    EntryRecorded,
    EntryUpdated,
    EventLog,
    InvalidEventError,
    SessionStarted,
)
from projections import Projections, SearchQuery, Skipped, run_search
from projections.search.index import SearchShard
from projections.views import reducers

T0 = 1_767_225_600_000_000


def _entry(eid: str, words: str, occurred_at: int = T0) -> EntryRecorded:
    return EntryRecorded(entry_id=eid, kind="message", content=words, occurred_at=occurred_at,
                         session_id="sess-1", role="user")


def _history(log: EventLog, bad: EntryRecorded) -> int:
    """Three good entries, the bad one, three more; returns the bad one's seq."""
    def put(*events: Any) -> int:
        return log.append("session:sess-1", events, actor="test").last_seq

    put(SessionStarted(session_id="sess-1"))
    put(*[_entry(f"msg-a{i}", f"alpha word{i}") for i in range(3)])
    seq = put(bad)
    put(*[_entry(f"msg-b{i}", f"alpha later{i}") for i in range(3)])
    put(EntryUpdated(entry_id=bad.entry_id, changes=EntryChanges(importance=0.5)))
    return seq


def _state(proj: Projections) -> dict[str, Any]:
    proj.catch_up(search=True)
    assert proj.views is not None and proj.search_index is not None
    hits = run_search(proj.search_index, SearchQuery(text="alpha", limit=50), None)
    return {"views": proj.views.dump(), "hits": sorted(h.rseq for h in hits),
            "skipped": proj.skipped()}


def _refuse(marked: str, fn: Any) -> Any:
    def wrapped(rec: Any, event: Any, *args: Any) -> Any:
        if getattr(event, "entry_id", None) == marked:
            raise ValueError("does not fit")
        return fn(rec, event, *args)
    return wrapped


def test_views_skip_a_record_the_reducers_refuse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reducer raises for one entry: it is skipped (seq, type, error class),
    a warning names its seq, every other entry is applied, and replay agrees."""
    monkeypatch.setattr(reducers, "entry_recorded", _refuse("msg-bad", reducers.entry_recorded))
    with EventLog.open(tmp_path / "log") as log:
        seq = _history(log, _entry("msg-bad", "alpha secret"))
        proj = Projections(tmp_path, log, shards=2)
        try:
            with structlog.testing.capture_logs() as logs:
                live = _state(proj)
            assert live["skipped"] == [Skipped(seq, "entry.recorded", "ValueError", "views")]
            assert [e for e in logs if e["event"] == "event_skipped"] == [
                {"event": "event_skipped", "log_level": "warning", "projection": "views", "seq": seq,
                 "type": "entry.recorded", "error": "ValueError"}]
            assert "secret" not in repr(logs)
            with proj.read() as views:
                assert views.checkpoint() == log.head().seq
                assert views.entry("msg-bad") is None
                assert all(views.entry(f"msg-{p}{i}") for p in "ab" for i in range(3))
                assert views.counters()["type:entry.recorded"] == 7  # the skipped one counts as an event
            assert len(live["hits"]) == 6
            proj.replay()
            assert _state(proj) == live
        finally:
            proj.close()


def test_a_record_that_fails_once_is_applied_not_skipped(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A reducer that fails once for a record (a passing fault) does not make the
    views skip it: the batch runs once more and the record is applied."""
    calls = {"n": 0}
    original = reducers.entry_recorded

    def flaky(rec: Any, event: Any, *args: Any) -> Any:
        if getattr(event, "entry_id", None) == "msg-flaky":
            calls["n"] += 1
            if calls["n"] == 1:
                raise ValueError("a passing fault")
        return original(rec, event, *args)

    monkeypatch.setattr(reducers, "entry_recorded", flaky)
    with EventLog.open(tmp_path / "log") as log:
        _history(log, _entry("msg-flaky", "alpha flaky"))
        proj = Projections(tmp_path, log, shards=2)
        try:
            live = _state(proj)
            assert live["skipped"] == [] and calls["n"] == 2
            with proj.read() as views:
                assert views.entry("msg-flaky") is not None
        finally:
            proj.close()


def test_an_environment_failure_is_raised_not_skipped() -> None:
    """Running out of memory or an OS error says nothing about the record."""
    from projections._skips import unapplicable

    assert not unapplicable(MemoryError()) and not unapplicable(OSError(24, "too many open files"))
    assert unapplicable(ValueError("does not fit"))


def test_search_skips_a_record_it_cannot_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tantivy refuses one document: the search index skips that record, commits
    past it, finds every other entry, and replay records the same skip."""
    original = SearchShard.add

    def add(self: SearchShard, doc: str) -> None:
        if json.loads(doc)["content"] == "alpha":  # msg-bad's document (the others have two words)
            raise ValueError("The field could not be parsed")
        original(self, doc)

    monkeypatch.setattr(SearchShard, "add", add)
    with EventLog.open(tmp_path / "log") as log:
        seq = _history(log, _entry("msg-bad", "alpha"))
        proj = Projections(tmp_path, log, shards=2)
        try:
            live = _state(proj)
            assert live["skipped"] == [Skipped(seq, "entry.recorded", "ValueError", "search"),
                                       Skipped(seq + 4, "entry.updated", "ValueError", "search")]
            assert len(live["hits"]) == 6
            assert proj.search_index is not None and proj.search_index.checkpoint() == log.head().seq
            with proj.read() as views:
                assert views.entry("msg-bad") is not None  # the views applied it
            proj.replay()
            assert _state(proj) == live
        finally:
            proj.close()


def test_an_entry_too_late_for_the_views_keys_is_skipped(tmp_path: Path) -> None:
    """An entry whose occurred_at does not fit a signed 64-bit key (as written
    straight to the log) is skipped by the views; the store stays readable and
    `stats` lists the skip."""
    store = tmp_path / "store"
    with MemoryLog.open(store) as mem:
        sid = mem.start_session()
        first = mem.add_message(sid, role="user", content="alpha before")
        try:
            bad = mem.log.append(f"session:{sid}", [EntryRecorded(
                entry_id="msg-late", kind="message", content="alpha late", occurred_at=1 << 63,
                session_id=sid, role="user")], actor="test").last_seq
        except InvalidEventError:
            pytest.skip("the catalogue bounds occurred_at: this event cannot be written any more")
        last = mem.add_message(sid, role="user", content="alpha after")
        assert {r.id for r in mem.search("alpha", record_access=False)} == {first, last}
    result = CliRunner().invoke(cli, ["--dir", str(store), "--json", "stats"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["skipped"] == [
        {"seq": bad, "type": "entry.recorded", "error": "struct.error", "projection": "views"}]
