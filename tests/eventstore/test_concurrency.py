"""Several real processes append to one log at once; nothing is lost, doubled or reordered.

The worker side of this test is this very file run as a script (see ``_worker``):
each worker is a fresh interpreter, so it opens the log after the process started.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from eventstore import ConcurrencyError, EntryRecorded, EventLog

PROCESSES = 4
APPENDS = 2_000
SHARED = ("shared:a", "shared:b")
TIMEOUT = 180.0


def _own_stream(worker: int) -> str:
    return f"proc:{worker}"


def _worker(log_dir: str, worker: int, appends: int, seed: int, sync_dir: str) -> None:
    """Append ``appends`` batches; write what each append returned to a JSON file."""
    rng = random.Random(seed * 1_000 + worker)
    sync = Path(sync_dir)
    own = _own_stream(worker)
    own_version = 0
    counter = 0
    retries = 0
    results: list[list[object]] = []
    with EventLog.open(log_dir) as log:
        (sync / f"ready-{worker}").touch()
        while not (sync / "go").exists():
            time.sleep(0.001)
        for _ in range(appends):
            size = 1 if rng.random() < 0.75 else rng.randint(2, 5)
            events = [
                EntryRecorded(entry_id=f"p{worker}-{n}", kind="message", occurred_at=n,
                              content=f"worker {worker} event {n}", agent_id=f"w{worker}")
                for n in range(counter, counter + size)
            ]
            counter += size
            if rng.random() < 0.5:
                # Nobody else writes this stream, so the locally known version must hold.
                expected = own_version if rng.random() < 0.5 else None
                result = log.append(own, events, actor=f"worker-{worker}",
                                    expected_version=expected)
                own_version = result.version
            else:
                stream = rng.choice(SHARED)
                while True:
                    expected = log.stream_version(stream)
                    try:
                        result = log.append(stream, events, actor=f"worker-{worker}",
                                            expected_version=expected)
                        break
                    except ConcurrencyError:
                        retries += 1
                assert result.version == expected + size, (result, expected, size)
            results.append([result.stream, result.first_seq, result.last_seq, result.version,
                            list(result.event_ids), size])
    out = {"worker": worker, "events": counter, "retries": retries, "results": results}
    (sync / f"result-{worker}.json").write_text(json.dumps(out))


def _start_workers(log_dir: Path, sync: Path, seed: int) -> list[subprocess.Popen[bytes]]:
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, str(log_dir), str(w), str(APPENDS), str(seed), str(sync)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        for w in range(PROCESSES)
    ]
    deadline = time.monotonic() + 60
    while not all((sync / f"ready-{w}").exists() for w in range(PROCESSES)):
        dead = [p for p in procs if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            for p in procs:
                p.kill()
            errors = [p.communicate()[1].decode(errors="replace") for p in procs]
            pytest.fail(f"a worker did not get ready (seed={seed}):\n" + "\n".join(errors))
        time.sleep(0.005)
    (sync / "go").touch()
    return procs


@pytest.mark.slow
def test_concurrent_processes_keep_the_log_gapless_ordered_and_verifiable(tmp_path: Path) -> None:
    """Four processes appending 2,000 times each (own and shared streams, optimistic retries)
    leave a gapless, duplicate-free, per-stream contiguous, order-preserving, verifiable log."""
    seed = int(os.environ.get("MEMLOG_TEST_SEED") or random.randrange(1 << 32))
    print(f"seed={seed} (set MEMLOG_TEST_SEED to reproduce)")
    log_dir, sync = tmp_path / "log", tmp_path / "sync"
    sync.mkdir()
    started = time.monotonic()
    procs = _start_workers(log_dir, sync, seed)
    for w, proc in enumerate(procs):
        try:
            _, err = proc.communicate(timeout=max(1.0, TIMEOUT - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            pytest.fail(f"worker {w} did not finish in {TIMEOUT:.0f} s (seed={seed})")
        assert proc.returncode == 0, f"worker {w} failed (seed={seed}):\n{err.decode()}"
    elapsed = time.monotonic() - started
    reports = [json.loads((sync / f"result-{w}.json").read_text()) for w in range(PROCESSES)]
    total = sum(r["events"] for r in reports)
    print(f"{total} events in {PROCESSES * APPENDS} appends, {elapsed:.1f} s, "
          f"retries per worker: {[r['retries'] for r in reports]}")

    with EventLog.open(log_dir) as log:
        records = list(log.read())
        # Gapless seqs 1..N where N is every event any worker appended.
        assert [r.seq for r in records] == list(range(1, total + 1)), f"seed={seed}"
        assert log.head().seq == total
        # No event id twice.
        ids = [r.id for r in records]
        assert len(set(ids)) == total, f"duplicate event ids (seed={seed})"
        # Every stream's versions are 1..k in seq order, and its head says k.
        versions: dict[str, list[int]] = defaultdict(list)
        for r in records:
            versions[r.stream].append(r.version)
        assert set(versions) == {_own_stream(w) for w in range(PROCESSES)} | set(SHARED)
        for stream, seen in versions.items():
            assert seen == list(range(1, len(seen) + 1)), f"{stream} (seed={seed})"
            assert log.stream_version(stream) == len(seen)
            assert [r.seq for r in log.read_stream(stream)] == [
                r.seq for r in records if r.stream == stream
            ]
        # Each worker's events appear in the order it appended them, none lost.
        order: dict[int, list[int]] = defaultdict(list)
        for r in records:
            assert isinstance(r.event, EntryRecorded)
            worker, n = r.event.entry_id[1:].split("-")
            assert r.actor == f"worker-{worker}"
            order[int(worker)].append(int(n))
        for report in reports:
            w = report["worker"]
            assert order[w] == list(range(report["events"])), f"worker {w} (seed={seed})"
        # What each append returned is what the log holds: one contiguous run per append.
        by_seq = {r.seq: r for r in records}
        for report in reports:
            for stream, first, last, version, event_ids, size in report["results"]:
                run = [by_seq[s] for s in range(first, last + 1)]
                assert len(run) == size
                assert [r.id for r in run] == event_ids
                assert {r.stream for r in run} == {stream}
                assert run[-1].version == version
        # Transaction time never goes backwards along the seq order.
        times = [r.recorded_at for r in records]
        assert times == sorted(times)
        result = log.verify()
        assert result.ok, f"{result} (seed={seed})"
        assert result.events == total


if __name__ == "__main__":
    _worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
