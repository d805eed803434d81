"""The backend contract: written once, run against every log backend.

A backend test module subclasses :class:`LogContract` and provides the
``open_log`` fixture, a callable that opens a log on a given directory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from eventstore import (
    AppendRequest,
    ConcurrencyError,
    DuplicateEventError,
    EntriesDeleted,
    EntryRecorded,
    EventLog,
    SessionStarted,
)

OpenLog = Callable[[Path], EventLog]


def entry(n: int, content: str = "some content") -> EntryRecorded:
    """A small message entry."""
    return EntryRecorded(entry_id=f"e{n}", kind="message", content=f"{content} {n}",
                         occurred_at=1_700_000_000_000_000 + n, session_id="s1")


class LogContract:
    """Behaviour every backend must show."""

    def test_append_assigns_gapless_seqs_and_stream_versions(self, open_log: OpenLog,
                                                             tmp_path: Path) -> None:
        """Seqs are gapless from 1 and stream versions count per stream."""
        with open_log(tmp_path) as log:
            a = log.append("s:a", [entry(1), entry(2)], actor="t")
            b = log.append("s:b", [entry(3)], actor="t")
            c = log.append("s:a", [entry(4)], actor="t")
            assert (a.first_seq, a.last_seq, a.version) == (1, 2, 2)
            assert (b.first_seq, b.version) == (3, 1)
            assert (c.first_seq, c.version) == (4, 3)
            assert [r.seq for r in log.read()] == [1, 2, 3, 4]
            assert [r.version for r in log.read_stream("s:a")] == [1, 2, 3]
            assert log.stream_version("s:a") == 3 and log.stream_version("s:none") == 0

    def test_expected_version_mismatch_writes_nothing(self, open_log: OpenLog,
                                                      tmp_path: Path) -> None:
        """A stale expected version raises ConcurrencyError and leaves the head alone."""
        with open_log(tmp_path) as log:
            log.append("s:a", [entry(1)], actor="t", expected_version=0)
            head = log.head()
            with pytest.raises(ConcurrencyError) as info:
                log.append("s:a", [entry(2)], actor="t", expected_version=0)
            assert info.value.code == "E_CONCURRENT_MOD"
            assert log.head() == head

    def test_retry_with_same_event_ids_is_idempotent(self, open_log: OpenLog,
                                                     tmp_path: Path) -> None:
        """Re-sending the same event ids returns the original result and writes nothing."""
        with open_log(tmp_path) as log:
            first = log.append("s:a", [entry(1), entry(2)], actor="t", event_ids=["x1", "x2"],
                               expected_version=0)
            again = log.append("s:a", [entry(1), entry(2)], actor="t", event_ids=["x1", "x2"],
                               expected_version=0)
            assert again.duplicate and (again.first_seq, again.last_seq) == (1, 2)
            assert log.head().seq == first.last_seq
            with pytest.raises(DuplicateEventError):
                log.append("s:a", [entry(3), entry(4)], actor="t", event_ids=["x2", "x9"])
            assert log.head().seq == 2

    def test_many_requests_commit_together(self, open_log: OpenLog, tmp_path: Path) -> None:
        """append_many is atomic: one failing request writes none of them."""
        with open_log(tmp_path) as log:
            log.append("s:b", [entry(0)], actor="t")
            with pytest.raises(ConcurrencyError):
                log.append_many([AppendRequest("s:a", [entry(1)], "t", 0),
                                 AppendRequest("s:b", [entry(2)], "t", 0)])
            assert log.head().seq == 1
            results = log.append_many([AppendRequest("s:a", [entry(1)], "t", 0),
                                       AppendRequest("s:b", [entry(2)], "t", 1)])
            assert [r.first_seq for r in results] == [2, 3]

    def test_recorded_at_never_goes_backwards_and_maps_to_seq(self, open_log: OpenLog,
                                                              tmp_path: Path) -> None:
        """recorded_at is monotonic, so seq_at finds the last seq at or before a time."""
        with open_log(tmp_path) as log:
            results = [log.append("s:a", [entry(i)], actor="t") for i in range(5)]
            times = [r.recorded_at for r in log.read()]
            assert times == sorted(times)
            assert log.seq_at(0) == 0
            assert log.seq_at(results[2].recorded_at) >= 3
            assert log.seq_at(times[-1] + 10**6) == 5

    def test_erase_keeps_the_chain_and_marks_the_payload(self, open_log: OpenLog,
                                                         tmp_path: Path) -> None:
        """After erase the payload reads as None and verify still passes."""
        with open_log(tmp_path) as log:
            log.append("s:a", [entry(1), entry(2)], actor="t")
            tomb = EntriesDeleted(request_id="r1", entry_ids=("e1",), erased_seqs=(1,))
            result = log.erase([1], tomb, stream="system", actor="dpo")
            assert log.get(1).event is None and log.get(2).event is not None
            assert log.get(result.first_seq).header.erases == (1,)
            assert log.verify().ok

    def test_events_at_reads_a_batch_in_the_order_asked(self, open_log: OpenLog,
                                                        tmp_path: Path) -> None:
        """events_at gives each seq's event; None for erased and absent seqs."""
        with open_log(tmp_path) as log:
            log.append("s:a", [entry(1), entry(2), entry(3)], actor="t")
            tomb = EntriesDeleted(request_id="r1", entry_ids=("e2",), erased_seqs=(2,))
            log.erase([2], tomb, stream="system", actor="dpo")
            got = log.events_at([3, 2, 1, 99])
            assert got == [log.get(3).event, None, log.get(1).event, None]
            assert got[0] is not None and got[2] is not None

    def test_reads_stream_past_chunk_boundaries(self, open_log: OpenLog, tmp_path: Path) -> None:
        """Range and stream reads are complete and ordered across internal chunks."""
        with open_log(tmp_path) as log:
            log.append("s:a", [entry(i) for i in range(10_000)], actor="t")
            assert sum(1 for _ in log.read()) == 10_000
            assert [r.seq for r in log.read(4095, 4100)] == list(range(4095, 4101))
            versions = [r.version for r in log.read_stream("s:a", 5000)]
            assert versions == list(range(5000, 10_001))

    def test_reopen_keeps_everything(self, open_log: OpenLog, tmp_path: Path) -> None:
        """Closing and reopening keeps events, head and stream versions."""
        with open_log(tmp_path) as log:
            log.append("session:s1", [SessionStarted(session_id="s1")], actor="t")
            head = log.head()
        with open_log(tmp_path) as log:
            assert log.head() == head
            assert log.stream_version("session:s1") == 1
            assert log.verify().ok
