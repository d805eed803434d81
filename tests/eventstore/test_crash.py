"""A writer killed with SIGKILL at a random moment never leaves a torn or lost append.

The writer side of this test is this very file run as a script (see ``_writer``):
it opens the log in a fresh interpreter, appends in a loop and, after each append
returns, durably records the event ids in a side file.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from eventstore import EntryRecorded, EventLog

TRIALS = 24
STREAMS = 3
ACTOR = "crash-writer"


def _planned(seed: int, trial: int, k: int) -> tuple[str, list[EntryRecorded], list[str]]:
    """The ``k``-th append of ``trial``: stream, events and client event ids (deterministic)."""
    rng = random.Random(f"{seed}:{trial}:{k}")
    size = rng.randint(1, 3)
    stream = f"crash:{rng.randrange(STREAMS)}"
    marker = f"t{trial}-a{k}"
    events = [
        EntryRecorded(entry_id=f"{marker}-{j}of{size}", kind="message", occurred_at=k,
                      content=f"trial {trial} append {k} event {j}")
        for j in range(size)
    ]
    return stream, events, [f"{marker}.e{j}" for j in range(size)]


def _writer(log_dir: str, side_file: str, seed: int, trial: int) -> None:
    """Append forever; after each append returns, fsync a line ``k id...`` to the side file."""
    with EventLog.open(log_dir) as log, open(side_file, "a", encoding="ascii") as side:
        k = 0
        while True:
            stream, events, ids = _planned(seed, trial, k)
            log.append(stream, events, actor=ACTOR, event_ids=ids)
            side.write(f"{k} {' '.join(ids)}\n")
            side.flush()
            os.fsync(side.fileno())
            k += 1


def _recorded(side_file: Path) -> list[list[str]]:
    """The complete lines of the side file (a line torn by the kill does not count)."""
    if not side_file.exists():
        return []
    text = side_file.read_text(encoding="ascii")
    lines = text.split("\n")[:-1]  # the part after the last newline is incomplete
    return [line.split(" ")[1:] for line in lines]


def _run_writer_and_kill(log_dir: Path, side: Path, seed: int, trial: int, delay: float) -> None:
    proc = subprocess.Popen(
        [sys.executable, __file__, str(log_dir), str(side), str(seed), str(trial)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while not (side.exists() and side.stat().st_size > 0):
            if proc.poll() is not None:
                pytest.fail(f"trial {trial}: the writer died before appending (seed={seed}):\n"
                            + proc.communicate()[1].decode(errors="replace"))
            if time.monotonic() > deadline:
                pytest.fail(f"trial {trial}: the writer never appended (seed={seed})")
            time.sleep(0.002)
        time.sleep(delay)
        if proc.poll() is not None:
            pytest.fail(f"trial {trial}: the writer stopped by itself (seed={seed}):\n"
                        + proc.communicate()[1].decode(errors="replace"))
        proc.send_signal(signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL


def _appends_in_log(log: EventLog, seed: int) -> dict[tuple[int, int], list[int]]:
    """Group the log by append marker; assert every group is whole and well placed."""
    groups: dict[tuple[int, int], list[tuple[int, str, int, int, str]]] = defaultdict(list)
    for r in log.read():
        assert isinstance(r.event, EntryRecorded), f"seq {r.seq} (seed={seed})"
        trial, k, part = r.event.entry_id.split("-")
        j, size = part.split("of")
        groups[(int(trial[1:]), int(k[1:]))].append((r.seq, r.id, int(j), int(size), r.stream))
    out: dict[tuple[int, int], list[int]] = {}
    for (trial, k), rows in groups.items():
        stream, _, ids = _planned(seed, trial, k)
        seqs = [row[0] for row in rows]
        where = f"append t{trial}-a{k} at seqs {seqs} (seed={seed})"
        assert [row[3] for row in rows] == [len(ids)] * len(rows), where
        assert [row[2] for row in rows] == list(range(len(ids))), f"torn {where}"
        assert [row[1] for row in rows] == ids, where
        assert seqs == list(range(seqs[0], seqs[0] + len(ids))), f"not contiguous: {where}"
        assert {row[4] for row in rows} == {stream}, where
        out[(trial, k)] = seqs
    return out


def test_sigkill_never_tears_or_loses_an_append(tmp_path: Path) -> None:
    """After a SIGKILL at a random moment every append the writer saw return is in the log,
    no append is partly written, the chain verifies, and retrying the in-doubt append is
    idempotent."""
    seed = int(os.environ.get("MEMLOG_TEST_SEED") or random.randrange(1 << 32))
    print(f"seed={seed} (set MEMLOG_TEST_SEED to reproduce)")
    rng = random.Random(seed)
    log_dir = tmp_path / "log"
    committed: dict[int, int] = {}  # trial -> appends known to be in the log
    in_doubt_committed = 0  # kills that landed after a commit but before its side-file line
    for trial in range(TRIALS):
        side = tmp_path / f"side-{trial}.txt"
        delay = rng.uniform(0.05, 0.4)
        _run_writer_and_kill(log_dir, side, seed, trial, delay)
        recorded = _recorded(side)
        assert recorded, f"trial {trial}: nothing recorded (seed={seed})"
        with EventLog.open(log_dir) as log:
            # Every id the writer saw committed is there.
            for k, ids in enumerate(recorded):
                assert ids == _planned(seed, trial, k)[2], f"side file line {k} (seed={seed})"
                for eid in ids:
                    assert log.seq_of(eid) is not None, f"lost {eid} (seed={seed})"
            result = log.verify()
            assert result.ok, f"trial {trial} delay {delay:.3f}: {result} (seed={seed})"
            appends = _appends_in_log(log, seed)
            # This trial wrote a0..a(m-1), plus at most the one append in flight at the kill.
            mine = sorted(k for t, k in appends if t == trial)
            m = len(recorded)
            assert mine in (list(range(m)), list(range(m + 1))), (
                f"trial {trial}: appends {mine[:3]}..{mine[-3:]}, side file has {m} (seed={seed})"
            )
            # Earlier trials are untouched, and nothing else is in the log.
            for t, count in committed.items():
                assert sorted(k for tt, k in appends if tt == t) == list(range(count)), t
            assert {t for t, _ in appends} <= set(committed) | {trial}
            assert result.events == log.head().seq == sum(len(s) for s in appends.values())
            # The writer cannot know whether its in-flight append committed; a retry
            # with the same ids must be recognised (or applied once, if it did not).
            stream, events, ids = _planned(seed, trial, m)
            retry = log.append(stream, events, actor=ACTOR, event_ids=ids)
            if m in mine:
                assert retry.duplicate, f"trial {trial}: retry of a{m} not recognised"
                assert retry.first_seq == appends[(trial, m)][0]
                in_doubt_committed += 1
            else:
                assert not retry.duplicate
                assert retry.first_seq == result.head + 1
            assert [log.seq_of(i) for i in ids] == list(range(retry.first_seq,
                                                               retry.last_seq + 1))
            committed[trial] = m + 1
            assert log.verify().ok
    with EventLog.open(log_dir) as log:
        assert log.verify().ok
        print(f"{TRIALS} kills, {log.head().seq} events, "
              f"{sum(committed.values())} appends, "
              f"{in_doubt_committed} kills between a commit and its side-file line")


if __name__ == "__main__":
    _writer(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
