"""Benchmark: point-in-time reads on a large store.

    python tools/bench/bench_audit.py [--events N] [--reads R] [--queries Q] [--json] [--dir PATH]

Builds a store of N corpus entries (default 1,000,000) through the public API,
then measures, in one run:

- as-of reads of random entries at random seqs (``mem.as_of(seq).show(id)``):
  p50 and p99; goal p50 < 5 ms and p99 < 50 ms, with no replay;
- as-of search at random seqs against current search with the same queries;
  goal: as-of p50 within 2x of current search p50.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import log as progress
from benchkit import percentile
from corpus import Corpus, write_corpus

from commands import EntryResult, MemoryLog
from eventstore import EventLog


def run(root: Path, events: int, reads: int, queries: int) -> dict[str, Any]:
    """Build, warm up, then time as-of reads and searches."""
    started = time.perf_counter()
    with EventLog.open(root / "log") as log:
        head = write_corpus(log, events)
    progress(f"wrote {head:,} events in {time.perf_counter() - started:.1f} s; building projections")
    rng = random.Random(11)
    with MemoryLog.open(root) as mem:
        mem.search("warm up", record_access=False)
        progress(f"projections ready after {time.perf_counter() - started:.1f} s")
        ids = [f"en{rng.randrange(events):08d}" for _ in range(reads)]
        entry_s = []
        for eid in ids:
            t0 = time.perf_counter()
            shown = mem.show(eid)
            assert isinstance(shown, EntryResult)  # corpus ids are entries, not memories
            recorded = shown.recorded_seq or 1
            point = rng.randrange(recorded, head + 1)
            mem.as_of(point).show(eid)
            entry_s.append(time.perf_counter() - t0)
        texts = Corpus(5).queries(queries)
        now_s, past_s = [], []
        for text in texts:
            t0 = time.perf_counter()
            mem.search(text, record_access=False)
            now_s.append(time.perf_counter() - t0)
            past = mem.as_of(rng.randrange(head // 2, head + 1))
            t0 = time.perf_counter()
            past.search(text)
            past_s.append(time.perf_counter() - t0)
    result: dict[str, Any] = {
        "events": head, "reads": reads, "queries": queries,
        "asof_entry_p50_ms": round(percentile(entry_s, 50) * 1000, 3),
        "asof_entry_p99_ms": round(percentile(entry_s, 99) * 1000, 3),
        "asof_search_p50_ms": round(percentile(past_s, 50) * 1000, 3),
        "asof_search_p99_ms": round(percentile(past_s, 99) * 1000, 3),
        "search_p50_ms": round(percentile(now_s, 50) * 1000, 3),
        "search_p99_ms": round(percentile(now_s, 99) * 1000, 3),
        "mean_entry_ms": round(statistics.fmean(entry_s) * 1000, 3),
    }
    result["asof_search_ratio"] = round(result["asof_search_p50_ms"] / max(result["search_p50_ms"], 1e-9), 2)
    result["pass"] = {
        "asof_entry_p50": result["asof_entry_p50_ms"] < 5,
        "asof_entry_p99": result["asof_entry_p99_ms"] < 50,
        "asof_search_within_2x": result["asof_search_ratio"] <= 2,
    }
    return result


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="bench-audit-")) / "store"
    try:
        result = run(root, args.events, args.reads, args.queries)
    finally:
        if args.dir is None:
            shutil.rmtree(root.parent, ignore_errors=True)
    if args.json:
        print(json.dumps(result))
        return
    ok = result["pass"]
    print(f"point-in-time reads on {result['events']:,} events ({result['reads']} reads, "
          f"{result['queries']} queries)")
    entry_ok = "PASS" if ok["asof_entry_p50"] and ok["asof_entry_p99"] else "MISS"
    print(f"  as-of entry   p50 {result['asof_entry_p50_ms']:7.3f} ms  "
          f"p99 {result['asof_entry_p99_ms']:7.3f} ms   goal p50 < 5, p99 < 50: {entry_ok}")
    print(f"  search        p50 {result['search_p50_ms']:7.3f} ms  p99 {result['search_p99_ms']:7.3f} ms")
    print(f"  as-of search  p50 {result['asof_search_p50_ms']:7.3f} ms  "
          f"p99 {result['asof_search_p99_ms']:7.3f} ms   {result['asof_search_ratio']}x current, goal <= 2x: "
          f"{'PASS' if ok['asof_search_within_2x'] else 'MISS'}")


if __name__ == "__main__":
    main()
