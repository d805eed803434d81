"""The views' batch path (:mod:`projections.views.batch`) equals applying the
events one at a time.

The reference applies one record per transaction (``ViewStore.apply(...,
upto=seq)``) with ``ViewWriter.batch_entries`` off, so every ``entry.recorded``
goes through the event-at-a-time reducer path; the batch path applies the whole
log in one transaction, every run of ``entry.recorded`` as a batch. Both must
leave the same databases, byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventstore import EntryRecorded, EventLog, SessionExtracted, SessionStarted
from projections import Projections, ViewStore
from projections.views.apply import ViewWriter
from tests.projections.history import KINDS, WORDS, History, steps


def _dump(path: Path, log: EventLog, one_at_a_time: bool) -> dict[str, Any]:
    store = ViewStore(path, sync=False, events_at=log.events_at)
    try:
        if one_at_a_time:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(ViewWriter, "batch_entries", False)
                for seq in range(1, log.head().seq + 1):
                    store.apply(lambda after: log.read(after + 1), upto=seq)
        else:
            store.apply(lambda after: log.read(after + 1))
        return store.dump()
    finally:
        store.close()


def _same_both_ways(root: Path, log: EventLog) -> None:
    batched = _dump(root / "batched", log, one_at_a_time=False)
    single = _dump(root / "single", log, one_at_a_time=True)
    assert batched == single
    events = log.head().seq
    stats = dict(batched["stats"])
    assert stats.get(b"events".hex()) == events.to_bytes(8, "big").hex()


@settings(max_examples=25, deadline=None)
@given(history=steps)
def test_batch_equals_one_at_a_time(tmp_path_factory: pytest.TempPathFactory,
                                    history: list[Any]) -> None:
    """Random histories (every event type of the property tests)."""
    root: Path = tmp_path_factory.mktemp("batch")
    (root / "proj").mkdir()
    with EventLog.open(root / "log") as log:
        proj = Projections(root / "proj", log, shards=1)
        try:
            runner = History(log, proj)
            for step in history:
                runner.run(step)
        finally:
            proj.close()
        _same_both_ways(root, log)


# Runs of entry.recorded with what the batch must get right: an id recorded
# twice (in the run or before it), a parent named twice, lessons (their scope
# reads the session), messages before and after an extraction, no session.
_entry = st.tuples(st.just("entry"), st.integers(0, 12), st.sampled_from(KINDS),
                   st.sampled_from([None, "s0", "s1"]), st.lists(st.integers(0, 12), max_size=3),
                   st.integers(0, 40))
_extracted = st.tuples(st.just("extracted"), st.sampled_from(["s0", "s1"]), st.integers(0, 60))
runs = st.lists(st.one_of(_entry, _entry, _entry, _extracted,
                          st.tuples(st.just("commit"))), min_size=1, max_size=60)


def _append_runs(log: EventLog, plan: list[Any]) -> None:
    log.append("session:s0", [SessionStarted(session_id="s0", user_id="alice")], actor="t")
    log.append("session:s1", [SessionStarted(session_id="s1")], actor="t")
    pending: list[Any] = []
    for step in plan:
        if step[0] == "entry":
            _, n, kind, sid, parents, hour = step
            pending.append(EntryRecorded(
                entry_id=f"e{n}", kind=kind, content=" ".join(WORDS[: 1 + n % 4]),
                occurred_at=1_700_000_000_000_000 + hour * 3_600_000_000, session_id=sid,
                agent_id="a0", derived_from=tuple(f"e{p}" for p in parents)))
        elif step[0] == "extracted":
            pending.append(SessionExtracted(session_id=step[1], upto_seq=step[2], entry_ids=()))
        elif pending:
            log.append("stream", pending, actor="t")
            pending = []
    if pending:
        log.append("stream", pending, actor="t")


@settings(max_examples=40, deadline=None)
@given(plan=runs)
def test_entry_runs_equal_one_at_a_time(tmp_path_factory: pytest.TempPathFactory,
                                        plan: list[Any]) -> None:
    """Long runs of ``entry.recorded``, ids and parents repeated."""
    root: Path = tmp_path_factory.mktemp("runs")
    with EventLog.open(root / "log") as log:
        _append_runs(log, plan)
        _same_both_ways(root, log)
