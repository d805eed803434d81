#!/usr/bin/env python3
"""Benchmark memory resources (seed 003): the flush of an 8k-token resource
and the cost of a resource's checks on append, each beside a raw anchor
measured in the same run.

Usage::

    python tools/bench/bench_resources.py [--appends N] [--repeats R] [--json] [--dir PATH]

(a) ``flush_s``: a resource of limit 10,000 tokens (flush at 80%: 8,000
    tokens) is filled with 100-token items to just under 8,000 tokens; the
    append that crosses it flushes (reads the oldest 30% of the items,
    summarises them with the default ExtractiveSummariser, appends the summary,
    ``resource.flushed`` and the new item in one commit). ``flush_s`` is the
    best of ``--repeats`` such appends, each on a fresh resource. Anchors from
    the same run: ``flush_summarise_s``, the summariser alone on the same texts,
    and ``flush_plain_append_s``, one plain ``add_message`` of the same item.
(b) ``append_overhead_ratio``: ``ResourceHandle.append`` (checks on: TTL,
    flush and eviction plans, a resource of limit 8,000 tokens with three
    blocks 0.1/0.2/0.7, flushing as it goes) against ``MemoryLog.add_message``
    of the same texts in a session of the same store, in interleaved blocks of
    50, durable (sync on) for both. The ratio is the median resource append
    over the median plain append (target <= 1.3x); ``append_plain_ms`` is the
    anchor. Means are reported too (they include the flushes).

Progress goes to stderr; the table (or with ``--json`` one JSON object) to stdout.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from commands import MemoryLog
from commands.app import ExtractiveSummariser

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import align, log, run_main, verdict

FLUSH_LIMIT = 10_000
ITEM_TOKENS = 100
APPEND_LIMIT = 8_000
BLOCK = 50
TARGET = 1.3
THREE = [{"name": "system", "priority": 0, "ratio": 0.1}, {"name": "facts", "priority": 1, "ratio": 0.2},
         {"name": "turns", "priority": 2, "ratio": 0.7}]


def item_text(i: int, tokens: int = ITEM_TOKENS) -> str:
    """A text of ``tokens`` tokens (characters / 4), varied sentences."""
    words = ["cache", "index", "replica", "queue", "schema", "latency", "deploy", "retry", "shard"]
    out: list[str] = []
    n = i
    while sum(len(s) + 1 for s in out) < tokens * 4:
        out.append(f"Item {n} says the {words[n % 9]} and the {words[(n * 7) % 9]} need care.")
        n += 1
    return " ".join(out)[: tokens * 4]


def measure_flush(base: Path, repeats: int) -> dict[str, float]:
    """Best-of flush append, and its anchors."""
    flush, summarise, plain = [], [], []
    for rep in range(repeats):
        with MemoryLog.open(base / f"flush-{rep}", redact_on_ingest=False) as mem:
            mem.declare_resource({"id": "chat", "key": "{user_id}", "token_limit": FLUSH_LIMIT})
            chat = mem.resource("chat", user_id=f"u{rep}")
            n = int(FLUSH_LIMIT * 0.8) // ITEM_TOKENS - 1
            for i in range(n):
                chat.append(item_text(i))
            assert chat.tokens() < FLUSH_LIMIT * 0.8
            texts = [m.content for m in chat.read()][: int((n + 1) * 0.3)]
            started = time.perf_counter()
            chat.append(item_text(n))
            flush.append(time.perf_counter() - started)
            if not any(m.kind == "summary" for m in chat.read()):
                raise RuntimeError("the append did not flush")
            started = time.perf_counter()
            ExtractiveSummariser(max_chars=max(80, len(texts) * ITEM_TOKENS * 4 // 3))(texts)
            summarise.append(time.perf_counter() - started)
            sid = mem.start_session(user_id=f"u{rep}")
            started = time.perf_counter()
            mem.add_message(sid, role="user", content=item_text(n))
            plain.append(time.perf_counter() - started)
        log(f"  flush run {rep + 1}/{repeats}: {flush[-1] * 1000:.1f} ms")
    return {"flush_s": min(flush), "flush_summarise_s": min(summarise), "flush_plain_append_s": min(plain),
            "flush_items": n + 1, "flush_tokens": (n + 1) * ITEM_TOKENS}


def measure_appends(base: Path, appends: int) -> dict[str, float]:
    """Interleaved resource appends and plain add_message calls, per-call seconds."""
    texts = [item_text(i, 40) for i in range(appends)]
    res: list[float] = []
    plain: list[float] = []
    with MemoryLog.open(base / "appends", redact_on_ingest=False) as mem:
        mem.declare_resource({"id": "chat", "key": "{user_id}:{session_id}", "token_limit": APPEND_LIMIT,
                              "blocks": THREE})
        sid = mem.start_session(user_id="alice")
        chat = mem.resource("chat", user_id="alice", session_id=sid)
        steps: list[tuple[list[float], Callable[[str], object]]] = [
            (res, chat.append), (plain, lambda t: mem.add_message(sid, role="user", content=t))]
        for start in range(0, appends, BLOCK):
            for sink, call in steps if (start // BLOCK) % 2 == 0 else reversed(steps):
                for text in texts[start:start + BLOCK]:
                    began = time.perf_counter()
                    call(text)
                    sink.append(time.perf_counter() - began)
        flushes = sum(1 for r in mem.log.read() if r.type == "resource.flushed")
    med_res, med_plain = statistics.median(res), statistics.median(plain)
    return {"append_overhead_ratio": med_res / med_plain, "append_resource_ms": med_res * 1000,
            "append_plain_ms": med_plain * 1000, "append_resource_mean_ms": statistics.fmean(res) * 1000,
            "append_plain_mean_ms": statistics.fmean(plain) * 1000, "appends": appends,
            "append_flushes": flushes}


def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    """Every measurement, in one run."""
    log(f"(a) flush of a resource of {int(FLUSH_LIMIT * 0.8):,} tokens, {args.repeats} runs")
    flush = measure_flush(base, args.repeats)
    log(f"(b) {args.appends:,} resource appends against {args.appends:,} add_message, interleaved")
    appends = measure_appends(base, args.appends)
    return {**flush, **appends, "python": platform.python_version()}


def table(r: dict[str, Any]) -> str:
    """The human table."""
    rows = [
        ("flush of 8k tokens", f"{r['flush_s'] * 1000:.1f} ms",
         f"summariser {r['flush_summarise_s'] * 1000:.1f} ms, plain append "
         f"{r['flush_plain_append_s'] * 1000:.1f} ms", "-", "-"),
        ("append with checks (p50)", f"{r['append_resource_ms']:.3f} ms",
         f"add_message {r['append_plain_ms']:.3f} ms", f"{r['append_overhead_ratio']:.2f}x",
         verdict(r["append_overhead_ratio"] <= TARGET)),
    ]
    return "\n".join([
        f"memory resources: flush of {r['flush_items']} items ({r['flush_tokens']:,} tokens); "
        f"{r['appends']:,} appends per side ({r['append_flushes']} flushes on the resource side)",
        "", *align(("measure", "resource", "anchor (same run)", "ratio", f"<= {TARGET}x"), rows), "",
        f"means: resource {r['append_resource_mean_ms']:.3f} ms, add_message "
        f"{r['append_plain_mean_ms']:.3f} ms (the resource's mean includes its flushes)."])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--appends", type=int, default=2000, help="appends per side")
    parser.add_argument("--repeats", type=int, default=3, help="flush runs; best is kept")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--dir", type=Path, default=None, metavar="PATH",
                        help="parent of the scratch directory (default: the system temp dir)")
    args = parser.parse_args(argv)
    if args.appends < 1 or args.repeats < 1:
        parser.error("--appends and --repeats must be >= 1")
    return args


def main(argv: Sequence[str] | None = None, emit: Callable[[str], None] = print) -> int:
    """Run the benchmark; the scratch directory is removed afterwards."""
    return run_main(parse_args(argv), run, table, "memlog-bench-resources-", emit)


if __name__ == "__main__":
    sys.exit(main())
