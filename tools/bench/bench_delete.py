"""Benchmark: delete one entry, with the physical purge, on a large store.

    python tools/bench/bench_delete.py [--entries N] [--shards S] [--repeats R] [--json] [--dir PARENT]

Builds a store of N corpus entries (default 1,000,000) through the public API,
catches the projections up, then deletes one entry by id with the full purge:
compaction of the payload segment that held it, rebuild of the affected search
shard, forensic scan and chain verification (the views hold no entry content,
so an entry deletion leaves them as they are: ``views_compact_s`` is 0).
Reports the end-to-end seconds and the split. The anchors measured in the same
run are a bare compacting copy of the rewritten segment with py-lmdb and raw
Tantivy indexing one shard's worth of documents.
Goal (DESIGN section 8): under 2 s end to end, verified.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import lmdb
import tantivy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import log as progress
from corpus import write_corpus

from commands import MemoryLog
from eventstore import EventLog
from projections import build_schema, entry_document


def build(root: Path, entries: int, shards: int | None) -> float:
    """Write the corpus and catch the projections up; return the seconds."""
    started = time.perf_counter()
    with EventLog.open(root / "log") as log:
        write_corpus(log, entries)
    progress(f"wrote {entries:,} entries in {time.perf_counter() - started:.1f} s; indexing")
    with MemoryLog.open(root, search_shards=shards) as mem:
        mem.search("warm up", record_access=False)
    return time.perf_counter() - started


def raw_compact_copy(env_dir: Path) -> float:
    """Seconds for py-lmdb's compacting copy of one environment, with fsync."""
    target = Path(tempfile.mkdtemp(dir=env_dir.parent))
    env = lmdb.open(str(env_dir), readonly=True, lock=False, max_dbs=8)
    try:
        started = time.perf_counter()
        env.copy(str(target), compact=True)
        with open(target / "data.mdb", "rb+") as fh:
            os.fsync(fh.fileno())
        return time.perf_counter() - started
    finally:
        env.close()
        shutil.rmtree(target)


def raw_shard_index(mem: MemoryLog, docs: int) -> float:
    """Seconds for raw Tantivy to index ``docs`` entries into a fresh index (one shard's worth)."""
    target = Path(tempfile.mkdtemp())
    try:
        with mem.proj.read() as views:
            batch = []
            for view in views.latest_entries():
                if view.entry is not None:
                    batch.append(entry_document(view.entry, view.recorded_seq, view.recorded_seq))
                if len(batch) >= docs:
                    break
        started = time.perf_counter()
        index = tantivy.Index(build_schema(), path=str(target))
        writer = index.writer(64 << 20, 1)
        for doc in batch:
            writer.add_json(doc)
        writer.commit()
        writer.wait_merging_threads()
        return time.perf_counter() - started
    finally:
        shutil.rmtree(target)


def run(root: Path, entries: int, shards: int | None, repeats: int = 1) -> dict[str, Any]:
    """Build, then delete one entry with the purge (``repeats`` times, a
    different entry each time), and measure; the first deletion is reported.
    ``shards`` None: the count memlog fits to the store."""
    build_s = build(root, entries, shards)
    with MemoryLog.open(root, search_shards=shards) as mem:
        assert mem.proj.search_index is not None
        shards = len(mem.proj.search_index.shards)
        victims = [h.id for h in mem.search("postgres", limit=repeats, record_access=False)]
        anchor_index = raw_shard_index(mem, max(1, entries // shards))
        totals: list[float] = []
        reports = []
        for victim in victims:
            progress(f"deleting {victim} with the purge")
            started = time.perf_counter()
            done = mem.delete(ids=[victim], reason="benchmark", requested_by="bench",
                              include_derived=False)
            totals.append(round(time.perf_counter() - started, 3))
            assert done.verified, "the purge did not verify"
            assert mem.show(victim).state == "deleted"
            reports.append(done)
        report, total = reports[0], totals[0]
    segments = [root / f for f in report.files_rewritten if "/seg-" in f]
    anchor_copy = sum(raw_compact_copy(f.parent) for f in segments)
    log_bytes = sum(f.stat().st_size for f in (root / "log").rglob("data.mdb"))
    split = report.seconds
    return {
        "entries": entries, "shards": shards, "build_s": round(build_s, 1),
        "log_bytes": log_bytes, "delete_total_s": round(total, 3), "delete_repeats_s": totals,
        "log_compact_s": split["log_compact_s"], "views_compact_s": split["views_compact_s"],
        "index_rebuild_s": split["index_rebuild_s"], "verify_s": split["verify_s"],
        "verified": report.verified, "bytes_scanned": report.bytes_scanned,
        "files_rewritten": list(report.files_rewritten), "raw_compact_copy_s": round(anchor_copy, 3),
        "raw_tantivy_shard_index_s": round(anchor_index, 3), "target_s": 2.0,
        "pass": total < 2.0 and bool(report.verified),
    }


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=0,
                        help="a fixed search shard count (default: fitted to the store, as memlog does)")
    parser.add_argument("--repeats", type=int, default=1, help="deletions, one entry each (first reported)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", type=Path, default=None,
                        help="parent of the scratch directory (default: the system temp dir)")
    args = parser.parse_args()
    if args.repeats < 1 or args.shards < 0 or args.entries < 1:
        parser.error("--repeats and --entries must be at least 1, --shards at least 0")
    if args.dir is not None and not args.dir.is_dir():
        parser.error(f"--dir {args.dir} is not a directory")
    # A fresh store each run, removed after: a store left by an earlier run
    # would take a second corpus and report a log twice the size.
    scratch = Path(tempfile.mkdtemp(prefix="bench-delete-", dir=args.dir))
    try:
        result = run(scratch / "store", args.entries, args.shards or None, args.repeats)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.json:
        print(json.dumps(result))
        return
    print(f"delete one entry with purge on {result['entries']:,} entries ({result['shards']} shards, "
          f"log {result['log_bytes'] / 2**20:.0f} MiB)")
    for key in ("log_compact_s", "views_compact_s", "index_rebuild_s", "verify_s", "delete_total_s"):
        print(f"  {key:<18} {result[key]:8.3f} s")
    print(f"  each deletion (--repeats): {', '.join(f'{t:.3f}' for t in result['delete_repeats_s'])} s")
    rewrote = len(result["files_rewritten"])
    print(f"  scanned {result['bytes_scanned'] / 2**20:.0f} MiB; rewrote {rewrote} files")
    print(f"  anchors: raw compacting copy {result['raw_compact_copy_s']:.3f} s, raw Tantivy index of "
          f"one shard's docs {result['raw_tantivy_shard_index_s']:.3f} s")
    print(f"  target < 2 s, verified: {'PASS' if result['pass'] else 'MISS'}")


if __name__ == "__main__":
    main()
