"""Benchmark: compact a 10 MB session; flush a resource of 8k tokens; the cost of the checks on write.

    python tools/bench/bench_lifecycle.py [--mb 10] [--entry-bytes 1000] [--appends 300]
                                    [--resource-appends 2000] [--json] [--dir PATH]

Builds one session of ``--mb`` MiB of message content (default 10, seed 000's
cap) through the public API in one batch with the automatic check off, catches
the views up, then times ``mem.compact(session)``: the plan (ranking every
entry by seed 000's blend, no content read), reading the removed entries, the
default ExtractiveSummariser over them, and the append of the summary and
``session.compacted``. The search index follows at its next catch-up, timed
apart (``search_catch_up_s``).

Anchor, measured in the same run: the raw work any compaction must do at
least, with the log alone: reading and decoding the session's stream
(``raw_read_session_s``) plus one durable append of events of the summary's
size into a scratch log (``raw_append_s``); ``raw_anchor_s`` is their sum.

The check on write: ``--appends`` durable single appends to a small session
with ``auto_compact``/``auto_summarise`` on (neither threshold reached), against
the same with both off, interleaved (``check_overhead_ratio``, medians), and
the check's own median time (``check_us``).

Memory resources (measured by ``tools/bench/bench_resources.py``'s functions, in the
same run): ``flush_s``, the append that flushes a resource of 8k tokens, beside
the summariser alone and a plain append; ``append_overhead_ratio``, a
resource's append (its TTL, flush and eviction checks) against a plain
``add_message``, interleaved medians.

Goals: ``compact_10mb_s`` < 1 s; ``append_overhead_ratio`` <= 1.3.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_resources import TARGET as APPEND_TARGET
from bench_resources import measure_appends, measure_flush
from benchkit import log as progress
from benchkit import run_main, verdict

from commands import MemoryLog
from eventstore import EventLog, SessionCompacted

TARGET_S = 1.0
_WORDS = ("cache", "warmup", "ledger", "replica", "postgres", "latency", "schema", "deploy", "index",
          "queue", "retry", "shard", "tenant", "billing", "invoice", "budget", "rollout", "canary",
          "migration", "vacuum", "backup", "restore", "audit", "token", "session", "agent", "memory",
          "summary", "decision", "finding", "lesson", "handoff", "project")


def _text(rng: random.Random, size: int) -> str:
    out: list[str] = []
    used = 0
    while used < size:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 16))).capitalize() + "."
        out.append(sentence)
        used += len(sentence) + 1
    return " ".join(out)[:size]


def build(root: Path, mb: float, entry_bytes: int) -> tuple[str, int]:
    """One session of ``mb`` MiB of messages; returns its id and entry count."""
    rng = random.Random(17)
    count = int(mb * 2**20) // entry_bytes + 1
    with MemoryLog.open(root, embedder=None, auto_compact=False, auto_summarise=False) as mem:
        sid = mem.start_session(user_id="bench")
        with mem.batch():
            for i in range(count):
                mem.add_message(sid, role="user" if i % 2 else "assistant", content=_text(rng, entry_bytes),
                                occurred_at=1_767_225_600_000_000 + i * 60_000_000)
        mem.search("cache", limit=1, record_access=False)  # views and search catch up
    return sid, count


def compact(root: Path, sid: str) -> dict[str, Any]:
    with MemoryLog.open(root, embedder=None) as mem:
        before = mem.session(sid).statistics["size_bytes"]
        started = time.perf_counter()
        report = mem.compact(sid)[0]
        seconds = time.perf_counter() - started
        started = time.perf_counter()
        mem.search("cache", limit=1, record_access=False)
        catch_up = time.perf_counter() - started
        after = mem.session(sid).statistics["size_bytes"]
    assert report.compacted and after == report.bytes_after
    return {"compact_10mb_s": round(seconds, 3), "search_catch_up_s": round(catch_up, 3),
            "bytes_before": before, "bytes_after": after, "removed": len(report.removed_ids)}


def anchor(root: Path, sid: str, scratch: Path) -> dict[str, Any]:
    """The log alone: read the session's stream; append events of the compaction's size."""
    with EventLog.open(root / "log") as log:
        started = time.perf_counter()
        events = [rec.event for rec in log.read_stream(f"session:{sid}") if rec.event is not None]
        read_s = time.perf_counter() - started
    done = [e for e in events if isinstance(e, SessionCompacted)]
    summary = next(e for e in events if getattr(e, "entry_id", None) == done[0].summary_entry_id)
    with EventLog.open(scratch / "log") as raw:
        started = time.perf_counter()
        raw.append(f"session:{sid}", [summary, done[0]], actor="bench")
        append_s = time.perf_counter() - started
    return {"raw_read_session_s": round(read_s, 3), "raw_append_s": round(append_s, 4),
            "raw_anchor_s": round(read_s + append_s, 3)}


def check_overhead(base: Path, n: int) -> dict[str, Any]:
    """Single durable appends to two stores opened side by side, one with the
    check on and one with it off, interleaved append by append (so the disk's
    noise falls on both alike); medians of the per-append latencies, and the
    check's own time (the ``on_recorded`` hook) apart."""
    with MemoryLog.open(base / "on", embedder=None) as on, \
            MemoryLog.open(base / "off", embedder=None, auto_compact=False, auto_summarise=False) as off:
        hook = on.store.on_recorded
        assert hook is not None
        spent: list[float] = []

        def timed(entry: Any) -> None:
            started = time.perf_counter()
            hook(entry)
            spent.append(time.perf_counter() - started)

        on.store.on_recorded = timed
        sids = (on.start_session(), off.start_session())
        times: tuple[list[float], list[float]] = ([], [])
        for i in range(n):
            for k, mem in enumerate((on, off)):
                started = time.perf_counter()
                mem.add_message(sids[k], role="user", content=f"short note {i} on the cache")
                times[k].append(time.perf_counter() - started)
    with_check, without = statistics.median(times[0]), statistics.median(times[1])
    return {"append_with_check_ms": round(with_check * 1000, 3),
            "append_without_check_ms": round(without * 1000, 3),
            "check_overhead_ratio": round(with_check / without, 3),
            "check_us": round(statistics.median(spent) * 1e6, 1)}


def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    progress(f"building a session of {args.mb} MiB")
    sid, count = build(base / "store", args.mb, args.entry_bytes)
    progress(f"{count:,} entries; compacting")
    result: dict[str, Any] = {"mb": args.mb, "entries": count, **compact(base / "store", sid)}
    result.update(anchor(base / "store", sid, base / "scratch"))
    progress("measuring the check on write")
    result.update(check_overhead(base / "appends", args.appends))
    progress("flushing a resource of 8k tokens; resource appends against add_message")
    result.update(measure_flush(base / "resources", 3))
    result.update(measure_appends(base / "resources", args.resource_appends))
    result["target_s"] = TARGET_S
    result["pass"] = result["compact_10mb_s"] < TARGET_S and result["append_overhead_ratio"] <= APPEND_TARGET
    return result


def table(r: dict[str, Any]) -> str:
    return "\n".join([
        f"compact one session of {r['mb']} MiB ({r['entries']:,} entries): "
        f"{r['bytes_before']:,} -> {r['bytes_after']:,} bytes, {r['removed']:,} entries folded",
        f"  compact_10mb_s       {r['compact_10mb_s']:8.3f} s   "
        f"(target < {TARGET_S} s: {verdict(r['pass'])})",
        f"  raw anchor           {r['raw_anchor_s']:8.3f} s   (read the session's stream "
        f"{r['raw_read_session_s']:.3f} s + append the summary {r['raw_append_s']:.4f} s)",
        f"  search catch-up      {r['search_catch_up_s']:8.3f} s   (next search, apart)",
        f"check on write: {r['append_with_check_ms']:.3f} ms per append against "
        f"{r['append_without_check_ms']:.3f} ms without ({r['check_overhead_ratio']:.2f}x); "
        f"the check itself {r['check_us']:.1f} us",
        f"  flush_s              {r['flush_s']:8.4f} s   (summariser alone {r['flush_summarise_s']:.4f} s, "
        f"plain append {r['flush_plain_append_s']:.4f} s)",
        f"  append_overhead_ratio {r['append_overhead_ratio']:7.2f}x   "
        f"(resource {r['append_resource_ms']:.3f} ms vs add_message {r['append_plain_ms']:.3f} ms; "
        f"target <= {APPEND_TARGET}x: "
        f"{verdict(r['append_overhead_ratio'] <= APPEND_TARGET)})",
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--entry-bytes", type=int, default=1000)
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument("--resource-appends", type=int, default=2000, help="resource appends per side")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", type=Path, default=None)
    return run_main(parser.parse_args(), run, table, "bench-lifecycle-")


if __name__ == "__main__":
    sys.exit(main())
