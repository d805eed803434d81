"""Group commit (``eventstore/lmdb/group.py``): threads that append while another
thread writes share the next commit; a request refused on its own gets its
error while the others of its group commit; every append a thread saw return
survives a SIGKILL of the process.

The crash test's writer is this very file run as a script (``_writer``).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import eventstore.lmdb.backend as backend_module
import eventstore.lmdb.group as group_module
from eventstore import (
    AppendRequest,
    ConcurrencyError,
    EntriesDeleted,
    EntryRecorded,
    EventLog,
    InvalidEventError,
    StorageError,
)
from eventstore.lmdb.group import GroupCommit
from eventstore.lmdb.layout import RECENT, seq_key

THREADS = 4
TRIALS = 6


def _event(tag: str) -> EntryRecorded:
    return EntryRecorded(entry_id=tag, kind="message", occurred_at=1, content=f"group {tag}")


# -- the queue, with stand-ins for the writes -----------------------------------


def _queue_behind_a_writer(queue: GroupCommit, run: Callable[[str], None], writing: threading.Event,
                           release: threading.Event, count: int) -> None:
    """``run("first")`` in a thread until its solo write waits on ``release``;
    then ``count`` threads ``run("t<i>")`` and queue; then release all, and join."""
    first = threading.Thread(target=run, args=("first",))
    first.start()
    assert writing.wait(5)
    others = [threading.Thread(target=run, args=(f"t{i}",)) for i in range(count)]
    for thread in others:
        thread.start()
    deadline = time.monotonic() + 5
    while len(queue._queue) < count and time.monotonic() < deadline:
        time.sleep(0.001)
    release.set()
    for thread in [first, *others]:
        thread.join(5)


def test_threads_arriving_during_a_write_share_the_next_one() -> None:
    writing, release = threading.Event(), threading.Event()
    groups: list[list[object]] = []

    def solo(batch: object) -> list[object]:
        if batch == "first":
            writing.set()
            release.wait(5)
        return [f"alone {batch}"]

    def group(batches: list[object]) -> list[object]:
        groups.append(list(batches))
        return [[f"grouped {b}"] for b in batches]

    queue = GroupCommit(solo, group)  # type: ignore[arg-type]
    results: dict[str, object] = {}

    def run(name: str) -> None:
        results[name] = queue.append(name)  # type: ignore[arg-type]

    _queue_behind_a_writer(queue, run, writing, release, 3)
    assert results["first"] == ["alone first"]
    assert len(groups) == 1 and sorted(groups[0]) == ["t0", "t1", "t2"]  # type: ignore[type-var]
    assert {results[f"t{i}"] == [f"grouped t{i}"] for i in range(3)} == {True}
    assert queue._busy is False and queue._queue == []


def test_a_failed_group_fails_every_request_in_it() -> None:
    writing, release = threading.Event(), threading.Event()

    def solo(batch: object) -> list[object]:
        writing.set()
        release.wait(5)
        return ["ok"]

    def group(batches: list[object]) -> list[object]:
        raise OSError("disk gone")

    queue = GroupCommit(solo, group)  # type: ignore[arg-type]
    errors: list[BaseException] = []

    def run(name: str) -> None:
        try:
            queue.append(name)  # type: ignore[arg-type]
        except OSError as exc:
            errors.append(exc)

    _queue_behind_a_writer(queue, run, writing, release, 2)
    assert len(errors) == 2 and all(str(e) == "disk gone" for e in errors)
    assert queue._busy is False


def test_after_a_contended_write_an_idle_log_lets_the_others_queue_first() -> None:
    calls: list[str] = []

    def solo(batch: object) -> list[object]:
        calls.append(f"alone {batch}")
        return ["ok"]

    queue = GroupCommit(solo, lambda batches: [["ok"] for _ in batches])  # type: ignore[arg-type]
    queue._contended = True  # the last write had threads queued behind it
    assert queue.append("a") == ["ok"]  # type: ignore[arg-type]
    assert queue._contended is False  # it led a group of itself alone
    assert queue.append("b") == ["ok"]  # type: ignore[arg-type]
    assert calls == ["alone a", "alone b"] and queue._busy is False and queue._queue == []


class _Interrupted(BaseException):
    """Stands in for a KeyboardInterrupt (which would stop pytest itself)."""


def test_a_waiter_interrupted_when_chosen_to_lead_hands_the_log_over(
        monkeypatch: pytest.MonkeyPatch) -> None:
    writing, release = threading.Event(), threading.Event()

    def solo(batch: object) -> list[object]:
        if batch == "first":
            writing.set()
            release.wait(5)
        return ["ok"]

    class InterruptedTicket(group_module.Ticket):
        def __init__(self, batch: object) -> None:
            super().__init__(batch)  # type: ignore[arg-type]
            real = self.done.wait

            def wait(timeout: float | None = None) -> bool:
                real(timeout)
                raise _Interrupted  # woken (to lead): interrupted before it could

            self.done.wait = wait  # type: ignore[method-assign]

    queue = GroupCommit(solo, lambda batches: [["ok"] for _ in batches])  # type: ignore[arg-type]
    first = threading.Thread(target=queue.append, args=("first",))
    first.start()
    assert writing.wait(5)
    original = group_module.Ticket
    monkeypatch.setattr(group_module, "Ticket", InterruptedTicket)
    threading.Timer(0.05, release.set).start()
    with pytest.raises(_Interrupted):
        queue.append("main")  # type: ignore[arg-type]
    first.join(5)
    assert queue._busy is False and queue._queue == []
    monkeypatch.setattr(group_module, "Ticket", original)
    assert queue.append("later") == ["ok"]  # type: ignore[arg-type]


# -- a group written by the LMDB backend ----------------------------------------


def test_a_request_refused_in_a_group_leaves_the_others_committed(tmp_path: Path) -> None:
    with EventLog.open(tmp_path / "log") as log:
        log.append("s:b", [_event("b0")], actor="t")
        requests = [
            AppendRequest("s:a", [_event("a0"), _event("a1")], "t", None, ["id-a0", "id-a1"]),
            AppendRequest("s:b", [_event("b-stale")], "t", 0),  # s:b is at version 1
            AppendRequest("s:c", [_event("c0")], "t", erases=[99]),  # beyond the head
            AppendRequest("s:a", [_event("a0"), _event("a1")], "t", None, ["id-a0", "id-a1"]),  # a retry
            AppendRequest("s:b", [_event("b1")], "t", 1),
        ]
        batches = [[log._prepare(r)] for r in requests]
        outcomes = log.backend._append_group(batches)
        assert isinstance(outcomes[1], ConcurrencyError)
        assert isinstance(outcomes[2], InvalidEventError)
        first, retry, last = outcomes[0][0], outcomes[3][0], outcomes[4][0]  # type: ignore[index]
        assert (first.first_seq, first.last_seq, first.duplicate) == (2, 3, False)
        assert (retry.first_seq, retry.duplicate) == (2, True)
        assert (last.first_seq, last.version) == (4, 2)
        assert log.head().seq == 4
        assert [r.event.entry_id for r in log.read()] == ["b0", "a0", "a1", "b1"]  # type: ignore[union-attr]
        assert log.verify().ok
        own = log.backend.shared.segments.own_recent
        assert set(own) == {seq_key(s) for s in (1, 2, 3, 4)}
        assert not any(b"b-stale" in v or b"group c0" in v for v in own.values())


def test_a_group_of_small_appends_keeps_its_payloads_in_recent(tmp_path: Path) -> None:
    with EventLog.open(tmp_path / "log") as log:
        batches = [[log._prepare(AppendRequest(f"s:{t}", [_event(f"{t}-{j}") for j in range(3)], "t"))]
                   for t in range(4)]  # 12 events, 3 per thread: each small on its own
        outcomes = log.backend._append_group(batches)
        assert all(isinstance(o, list) for o in outcomes)
        assert len(log.backend.shared.segments.own_recent) == 12  # in ``recent``, not sealed
        assert log.verify().ok


def test_an_error_after_the_commit_reaches_only_the_erasing_request(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(shared: object) -> set[int]:
        raise StorageError("the segment is gone")

    with EventLog.open(tmp_path / "log") as log:
        log.append("s:a", [_event("victim")], actor="t")
        monkeypatch.setattr(backend_module, "finish_erasures", broken)
        tombstone = EntriesDeleted(request_id="r", entry_ids=("victim",), erased_seqs=(1,))
        batches = [[log._prepare(AppendRequest("s:b", [_event("b0")], "t"))],
                   [log._prepare(AppendRequest("s:a", [tombstone], "t", erases=[1]))]]
        outcomes = log.backend._append_group(batches)
        assert isinstance(outcomes[0], list) and outcomes[0][0].first_seq == 2
        assert isinstance(outcomes[1], StorageError)
        assert log.events_at([1, 2]) == [None, _event("b0")]  # committed: read as erased


def test_a_flipped_recent_value_fails_verify_in_the_process_that_wrote_it(tmp_path: Path) -> None:
    with EventLog.open(tmp_path / "log") as log:
        for k in range(3):
            log.append("s:a", [_event(f"f{k}")], actor="t")
        shared = log.backend.shared
        with shared.env.begin(write=True) as txn:
            value = bytearray(txn.get(seq_key(2), db=shared.dbs[RECENT]))
            value[-1] ^= 0xFF
            txn.put(seq_key(2), bytes(value), db=shared.dbs[RECENT])
        assert seq_key(2) in shared.segments.own_recent  # reads still use the copy
        result = log.verify()
        assert not result.ok and result.first_bad_seq == 2
        assert not log.verify_tail(3).ok


def test_concurrent_threads_append_every_event_once(tmp_path: Path) -> None:
    results: list[tuple[str, int, int]] = []
    refused: list[str] = []

    def work(t: int) -> None:
        for k in range(40):
            res = log.append(f"s:{t}", [_event(f"w{t}-{k}")], actor="t", expected_version=k)
            results.append((f"s:{t}", res.first_seq, res.version))
            try:  # every thread races for the shared stream's next version: some are refused
                log.append("s:shared", [_event(f"x{t}-{k}")], actor="t",
                           expected_version=log.stream_version("s:shared"))
            except ConcurrencyError:
                refused.append(f"x{t}-{k}")

    with EventLog.open(tmp_path / "log") as log:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        records = list(log.read())
        assert [r.seq for r in records] == list(range(1, len(records) + 1))
        ids = [r.event.entry_id for r in records]  # type: ignore[union-attr]
        assert len(ids) == len(set(ids)) == 6 * 40 * 2 - len(refused)
        assert not set(refused) & set(ids)
        for t in range(6):
            versions = [r.version for r in records if r.stream == f"s:{t}"]
            assert versions == list(range(1, 41))
        shared = [r.version for r in records if r.stream == "s:shared"]
        assert shared == list(range(1, len(shared) + 1))
        assert log.verify().ok


# -- SIGKILL while threads append ----------------------------------------------


def _ids(trial: int, t: int, k: int) -> list[str]:
    return [f"g{trial}-w{t}-a{k}.e{j}" for j in range(1 + k % 2)]


def _writer(log_dir: str, side_dir: str, trial: int) -> None:
    """THREADS threads append forever; each fsyncs ``k`` to its side file after
    its append ``k`` returns."""
    with EventLog.open(log_dir) as log:
        def work(t: int) -> None:
            with open(Path(side_dir) / f"w{t}", "a", encoding="ascii") as side:
                k = 0
                while True:
                    ids = _ids(trial, t, k)
                    log.append(f"g:{trial}:{t}", [_event(i.replace(".", "-")) for i in ids],
                               actor="w", event_ids=ids)
                    side.write(f"{k}\n")
                    side.flush()
                    os.fsync(side.fileno())
                    k += 1

        threads = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def _acknowledged(side: Path) -> int:
    if not side.exists():
        return 0
    return len(side.read_text(encoding="ascii").split("\n")) - 1


def test_sigkill_while_threads_append_loses_no_acknowledged_append(tmp_path: Path) -> None:
    seed = int(os.environ.get("MEMLOG_TEST_SEED") or random.randrange(1 << 32))
    rng = random.Random(seed)
    log_dir = tmp_path / "log"
    for trial in range(TRIALS):
        side_dir = tmp_path / f"side-{trial}"
        side_dir.mkdir()
        proc = subprocess.Popen([sys.executable, __file__, str(log_dir), str(side_dir), str(trial)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 30
            while sum(_acknowledged(side_dir / f"w{t}") for t in range(THREADS)) < THREADS:
                assert proc.poll() is None, proc.communicate()[1].decode(errors="replace")
                assert time.monotonic() < deadline, f"trial {trial}: the writer never appended"
                time.sleep(0.002)
            time.sleep(rng.uniform(0.02, 0.3))
            proc.send_signal(signal.SIGKILL)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
        with EventLog.open(log_dir) as log:
            assert log.verify().ok, f"trial {trial} (seed={seed})"
            for t in range(THREADS):
                acknowledged = _acknowledged(side_dir / f"w{t}")
                for k in range(acknowledged):
                    for eid in _ids(trial, t, k):
                        assert log.seq_of(eid) is not None, f"lost {eid} (seed={seed})"
                # Whole appends only, in order: at most the one in flight beyond the side file.
                versions = [r.version for r in log.read_stream(f"g:{trial}:{t}")]
                assert versions == list(range(1, len(versions) + 1))
                done = sum(1 + k % 2 for k in range(acknowledged))
                assert len(versions) in (done, done + 1 + acknowledged % 2), f"w{t} (seed={seed})"


if __name__ == "__main__":
    _writer(sys.argv[1], sys.argv[2], int(sys.argv[3]))
