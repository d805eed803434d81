#!/usr/bin/env python3
"""Where the time of an append goes: the parts of ``EventLog.append``, timed in place.

Usage::

    python tools/bench/append_parts.py [--events N] [--singles N] [--json]

Wraps the stages of the append path with timers (no change to the code that
runs) and appends the same events as tools/bench/bench_log.py: batches of 10k events
(one transaction each) and single appends (one event, one commit). Reports the
microseconds per event of each part:

- ``validate``: the validating encode + decode and the id checks (``_prepare``);
- ``records``: headers, salts, commitments and chain hashes (``TxnWriter._records``);
- ``puts``: the main environment's putmulti of headers, event ids and the stream
  index, or the concealed recent payloads (the rest of ``TxnWriter.apply``);
- ``segments``: the payload segments' transactions, with their syncs;
- ``commit``: the main environment's commit, with its syncs (what is left of
  the write operation);
- ``other``: the rest (locks, head, the Python call chain).

The anchor, measured in the same run: raw LMDB committing one 300-byte put per
durable commit (the sync cost). Then the purge after 1,000 single appends and the erasure of the last
one, its payload still recent (the purge seals first), next to the same purge
with everything sealed beforehand. ``--main-compaction N`` also times a
compacting rewrite of an N-event log's main environment (what a purge would
pay if recent payloads were kept in the clear).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lmdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from log_content import make_event

from eventstore import EntriesDeleted, EventLog, LogSettings
from eventstore.lmdb import backend as backend_mod
from eventstore.lmdb import segments as segments_mod
from eventstore.lmdb import write as write_mod
from eventstore.log import EventLog as LogClass

BATCH = 10_000
PARTS = ("validate", "records", "puts", "segments", "commit", "other")


class Timers:
    """Seconds per part, summed over wrapped calls (nested parts are subtracted)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def wrap(self, owner: Any, name: str, part: str) -> Callable[[], None]:
        original = getattr(owner, name, None)
        if original is None:  # (older code, e.g. before segment keys)
            return lambda: None

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - started

        setattr(owner, name, timed)
        return lambda: setattr(owner, name, original)


@contextmanager
def instrumented(timers: Timers) -> Iterator[None]:
    undo = [
        timers.wrap(LogClass, "_prepare", "validate"),
        timers.wrap(write_mod.TxnWriter, "_records", "records"),
        timers.wrap(write_mod.TxnWriter, "apply", "apply"),
        timers.wrap(segments_mod.Segments, "write", "segments"),
        timers.wrap(segments_mod.Segments, "key", "segments"),
        timers.wrap(backend_mod.LmdbBackend, "append", "backend"),
        timers.wrap(write_mod.TxnWriter, "finish", "finish"),
    ]
    try:
        yield
    finally:
        for fn in reversed(undo):
            fn()


def run_parts(path: Path, plan: list[list[Any]], write_seconds: dict[str, float]) -> dict[str, float]:
    """Append ``plan`` (one append per item) and return microseconds per event of each part."""
    timers = Timers()
    events = sum(len(p) for p in plan)
    with EventLog.open(path, LogSettings(sync=True)) as log:
        shared = log.backend.shared  # type: ignore[attr-defined]
        original_write = shared.write

        def write(fn: Callable[[Any], Any]) -> Any:
            started = time.perf_counter()
            try:
                return original_write(fn)
            finally:
                write_seconds["write"] += time.perf_counter() - started

        shared.write = write
        with instrumented(timers):
            started = time.perf_counter()
            for k, part in enumerate(plan):
                log.append(f"session:s{k % 8}", part, actor="bench")
            total = time.perf_counter() - started
        shared.write = original_write
    s = timers.seconds
    body = s["apply"] + s["segments"] + s["finish"]  # inside the write transaction
    out = {
        "validate": s["validate"], "records": s["records"], "puts": s["apply"] - s["records"],
        "segments": s["segments"], "commit": write_seconds["write"] - body,
    }
    out["other"] = total - sum(out.values())
    result = {k: round(v / events * 1e6, 2) for k, v in out.items()}
    result["total"] = round(total / events * 1e6, 2)
    return result


def raw_single_commits(path: Path, count: int) -> float:
    """Microseconds per durable commit of one small put in raw LMDB (sync on)."""
    env = lmdb.open(str(path), map_size=64 << 20, sync=True)
    try:
        started = time.perf_counter()
        for i in range(count):
            with env.begin(write=True) as txn:
                txn.put(i.to_bytes(8, "big"), b"x" * 300)
        return (time.perf_counter() - started) / count * 1e6
    finally:
        env.close()


def purge_after_singles(path: Path, events: list[Any], sealed_first: bool) -> float:
    """Seconds of ``purge()`` after single appends and the erasure of one of
    them, its payload still in ``recent`` (or sealed first, the anchor)."""
    with EventLog.open(path, LogSettings(sync=True)) as log:
        for event in events:
            last = log.append("session:p", [event], actor="bench")
        seal = getattr(log.backend, "seal", None)  # (absent before recent payloads)
        if sealed_first and seal is not None:
            seal()
        tomb = EntriesDeleted(request_id="bench", entry_ids=(events[-1].entry_id,),
                              erased_seqs=(last.first_seq,))
        log.erase([last.first_seq], tomb, stream="system", actor="bench")
        started = time.perf_counter()
        log.purge()
        return time.perf_counter() - started


def main_compaction(path: Path, events: int) -> tuple[float, int]:
    """(seconds, bytes) of a compacting rewrite of the main environment of an
    ``events``-event log written in 10k batches: what a purge would pay if
    recent payloads were stored in the clear (it never does)."""
    from eventstore.storage.compact import purge_env

    with EventLog.open(path, LogSettings(sync=True)) as log:
        for start in range(0, events, BATCH):
            log.append("session:m", [make_event(i) for i in range(start, min(events, start + BATCH))],
                       actor="bench")
        shared = log.backend.shared  # type: ignore[attr-defined]
        size = (path / "data.mdb").stat().st_size
        started = time.perf_counter()
        purge_env(shared, 60.0)
        return time.perf_counter() - started, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--singles", type=int, default=2_000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--main-compaction", type=int, default=0, metavar="N",
                        help="also time a compacting rewrite of an N-event log's main environment")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="append-parts-"))
    try:
        events = [make_event(i) for i in range(max(args.events, args.singles))]
        batches = [events[i:i + BATCH] for i in range(0, args.events, BATCH)]
        os.sync()
        batch = run_parts(base / "batch", batches, defaultdict(float))
        os.sync()
        single = run_parts(base / "single", [[e] for e in events[:args.singles]], defaultdict(float))
        raw_commit = raw_single_commits(base / "raw", args.singles)
        few = events[:min(1000, args.singles)]
        purge_sealed = min(purge_after_singles(base / f"ps{k}", few, True) for k in range(2))
        purge_recent = min(purge_after_singles(base / f"pr{k}", few, False) for k in range(2))
        compaction = main_compaction(base / "main", args.main_compaction) if args.main_compaction else None
    finally:
        shutil.rmtree(base, ignore_errors=True)
    result = {"batch_us_per_event": batch, "single_us_per_append": single,
              "raw_single_commit_us": round(raw_commit, 2),
              "purge_recent_s": round(purge_recent, 4), "purge_sealed_s": round(purge_sealed, 4)}
    if compaction is not None:
        result["main_compaction_s"] = round(compaction[0], 3)
        result["main_env_bytes"] = compaction[1]
    if args.json:
        print(json.dumps(result))
        return
    print(f"{'part':<10} {'batch us/event':>15} {'single us/append':>17}")
    for part in (*PARTS, "total"):
        print(f"{part:<10} {batch[part]:>15.2f} {single[part]:>17.2f}")
    print(f"anchor: raw LMDB durable commit of one put: {raw_commit:.1f} us")
    print(f"purge after {len(few)} single appends, the erased one still recent: {purge_recent:.4f} s; "
          f"the same with everything sealed first: {purge_sealed:.4f} s")
    if compaction is not None:
        print(f"compacting rewrite of the main environment ({compaction[1] / 2**20:.0f} MiB): "
              f"{compaction[0]:.3f} s")


if __name__ == "__main__":
    main()
