#!/usr/bin/env python3
"""Benchmark ``memlog import bmad`` on a generated seed 000 tree, beside raw anchors.

Usage::

    python tools/bench/bench_import.py [--records N] [--json] [--dir PATH]

It writes a ``.bmad/memory`` tree of N records (default 100000: sessions of
1000 records, each a manifest and conversation, decisions, findings and
preferences JSONL in seed 000's shapes, some messages carrying an email so
ingest redaction has work), then in one run measures:

- the import as ``memlog import`` runs it: reading the tree into records,
  deciding each through the app layer (validation, redaction, ids from source
  ids) and writing all of them in one transaction (``import_rps``, with
  ``read_s`` and ``ingest_s`` apart); then the projections catching up on the
  new events (``index_s``: views and text search; no embedder);
- the anchors, on the same files in the same run: msgspec decoding every
  JSONL line (``raw_decode_rps``), and py-lmdb putting every line's bytes in
  one durable transaction (``raw_lmdb_rps``).

Progress goes to stderr; the table (or with ``--json`` one JSON object) to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import lmdb
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import align, log, run_main

from commands import MemoryLog
from commands.transfer import ingest, read_source

PER_SESSION = 1000
WORDS = ["database", "latency", "payments", "schema", "index", "cache", "queue", "retry", "pool", "replica",
         "shard", "ledger", "audit", "postgres", "kafka", "redis", "tenant", "invoice", "refund", "webhook"]


def _text(n: int, size: int) -> str:
    return " ".join(WORDS[(n * 7 + i * 3) % len(WORDS)] for i in range(size))


def _session_rows(s: int, count: int) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {"conversation": [], "decisions": [], "findings": [],
                                             "preferences": []}
    for i in range(count):
        n = s * PER_SESSION + i
        stamp = f"2026-01-{1 + s % 28:02d}T{10 + i // 3600 % 10:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"
        slot = i % 20
        if slot < 12:
            content = _text(n, 18) + (" mail ops@example.com" if slot == 0 else "")
            rows["conversation"].append({"id": f"msg-{i}", "timestamp": stamp, "agent_id": "architect",
                                         "role": "assistant" if i % 2 else "user", "content": content,
                                         "context": {"topic": "design"}})
        elif slot < 15:
            rows["decisions"].append({"id": f"dec-{i}", "timestamp": stamp, "made_by": "architect",
                                      "decision": _text(n, 8), "rationale": _text(n + 1, 12),
                                      "alternatives_considered": [{"option": "MySQL",
                                                                   "rejected_reason": "licensing"}],
                                      "impact": "high", "tags": ["database"]})
        elif slot < 18:
            rows["findings"].append({"id": f"finding-{i}", "timestamp": stamp, "discovered_by": "analyst",
                                     "category": "scalability", "severity": "medium",
                                     "description": _text(n, 10), "status": "open"})
        else:
            rows["preferences"].append({"id": f"pref-{i}", "timestamp": stamp, "category": "style",
                                        "key": f"pref_{i}", "value": _text(n, 3), "confidence": 0.8})
    return rows


def build_tree(root: Path, records: int) -> list[Path]:
    """A bmad tree of ``records`` records (sessions count as records); its JSONL files."""
    files: list[Path] = []
    sessions = max(1, -(-records // (PER_SESSION + 1)))
    left = records
    for s in range(sessions):
        folder = root / ".bmad" / "memory" / "sessions" / f"sess-bench-{s:05d}"
        folder.mkdir(parents=True)
        manifest = {"session_id": folder.name, "user_id": f"user-{s % 7}", "agent_ids": ["architect"],
                    "metadata": {"project_name": "bench", "tags": ["bench"]}}
        (folder / "manifest.json").write_text(json.dumps(manifest))
        count = min(PER_SESSION, left - 1)
        left -= count + 1
        for name, rows in _session_rows(s, count).items():
            path = folder / f"{name}.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
            files.append(path)
    return files


def raw_anchors(files: list[Path], base: Path) -> dict[str, float]:
    """msgspec decoding of every line, and py-lmdb putting every line in one transaction."""
    lines = [line for f in files for line in f.read_bytes().splitlines() if line]
    decode = msgspec.json.Decoder().decode
    started = time.perf_counter()
    for line in lines:
        decode(line)
    decode_s = time.perf_counter() - started
    env = lmdb.open(str(base / "raw-lmdb"), map_size=8 << 30)
    started = time.perf_counter()
    with env.begin(write=True) as txn:
        for n, line in enumerate(lines):
            txn.put(n.to_bytes(8, "big"), line, append=True)
    env.sync(True)
    put_s = time.perf_counter() - started
    env.close()
    return {"raw_decode_rps": len(lines) / decode_s, "raw_lmdb_rps": len(lines) / put_s, "lines": len(lines)}


def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    log(f"building a bmad tree of {args.records} records")
    files = build_tree(base / "src", args.records)
    with MemoryLog.open(base / "store", embedder=None) as mem:
        log("importing")
        started = time.perf_counter()
        recs = read_source("bmad", base / "src")
        read_s = time.perf_counter() - started
        report = ingest(mem.store, "bmad", recs)
        import_s = time.perf_counter() - started
        log("catching up the projections")
        started = time.perf_counter()
        mem.search("database", record_access=False)
        index_s = time.perf_counter() - started
    anchors = raw_anchors(files, base)
    return {"records": len(recs), "written": report.written, "import_s": round(import_s, 3),
            "read_s": round(read_s, 3), "ingest_s": round(import_s - read_s, 3),
            "import_rps": round(len(recs) / import_s), "index_s": round(index_s, 3),
            "raw_decode_rps": round(anchors["raw_decode_rps"]),
            "raw_lmdb_rps": round(anchors["raw_lmdb_rps"]),
            "import_vs_decode": round(anchors["raw_decode_rps"] / (len(recs) / import_s), 1)}


def table(r: dict[str, Any]) -> str:
    rows = [["import (read + decide + one transaction)", f"{r['import_rps']:,} records/s",
             f"{r['import_s']} s"],
            ["  of which reading the tree", "", f"{r['read_s']} s"],
            ["projections catch-up (views, text index)", "", f"{r['index_s']} s"],
            ["anchor: msgspec decode of the same lines", f"{r['raw_decode_rps']:,} lines/s", ""],
            ["anchor: py-lmdb puts of the same lines", f"{r['raw_lmdb_rps']:,} lines/s", ""]]
    return "\n".join([f"bmad import of {r['records']:,} records ({r['written']:,} written)",
                      *align(["measure", "rate", "time"], rows),
                      f"import is {r['import_vs_decode']}x slower than decoding alone"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", type=Path, help="Parent of the scratch directory.")
    return run_main(parser.parse_args(), run, table, "memlog-bench-import-")


if __name__ == "__main__":
    sys.exit(main())
