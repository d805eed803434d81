#!/usr/bin/env python3
"""Benchmark the MemoryLog facade against the layer beneath it, in one run.

Usage::

    python tools/bench/bench_api.py [--events N] [--json] [--queries Q] [--repeats R]
                              [--dir PATH] [--profile]

Each facade figure is measured next to the same work done one layer down:

(a) single durable writes: ``MemoryLog.add_message`` (one call, one commit)
    against ``EventLog.append`` of an equivalent ``EntryRecorded`` (same
    content, session stream, kind, role and agent; built off the clock), one
    event per call, sync on for both;
(b) batched writes: 10k ``add_message`` calls inside ``with mem.batch():``
    against ``EventLog.append_many`` of the same 10k one-event appends;
(c) search: ``mem.search(text, limit=10, record_access=False)`` against
    ``run_search`` on ``mem.proj.search_index`` with the same ``SearchQuery``
    (as of None), on a corpus of N entries (``tools/bench/corpus.py``), after the
    projections have caught up. Each query runs on both sides, and which side
    goes first alternates (the second finds the query's pages warm).

The two sides are interleaved (blocks of 100 single writes, one 10k batch, one
query at a time) in fresh directories, so they see the same disk. Throughputs
are the best of ``--repeats`` runs; latencies are percentiles over all queries
after a short warm-up. The overhead factor is layer rate / facade rate for
writes and facade latency / projection latency for search; the target is
<= 1.5x for each.

``--profile`` prints cProfile tables (stderr) of single and batched
``add_message`` and of ``mem.search``. Progress goes to stderr; the table (or
with ``--json`` one JSON object) goes to stdout. memlog is used only through the
public API of :mod:`eventstore`, :mod:`projections` and :mod:`commands`.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import lmdb

from commands import MemoryLog
from eventstore import AppendRequest, EntryRecorded, EventLog, LogSettings, SessionStarted, now_micros
from projections import SearchQuery, run_search

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import align, load_corpus, log, percentile, profile_text, run_main, verdict

BATCH = 10_000
SINGLE_MAX = 2_000
SINGLE_BLOCK = 100
SESSIONS = 8
ACTOR = "memlog"  # the facade's default actor
AGENT = "developer"
USER = "user000"
SEED = 7
LIMIT = 10
WARMUP_QUERIES = 50
OVERHEAD_TARGET = 1.5
PROFILE_LINES = 22


# -- the two sides of a write benchmark --------------------------------------------

@dataclass(slots=True)
class Sides:
    """A facade store and a bare log with the same sessions, plus prepared input."""

    mem: MemoryLog
    elog: EventLog
    sids: list[str]
    texts: Sequence[str]
    events: list[EntryRecorded] = field(default_factory=list)

    def close(self) -> None:
        """Close both stores."""
        self.mem.close()
        self.elog.close()


def open_sides(base: Path, label: str, texts: Sequence[str]) -> Sides:
    """Fresh stores (sync on) with ``SESSIONS`` sessions each; log events built here."""
    mem = MemoryLog.open(base / f"{label}-api", sync=True, record_access=False)
    elog = EventLog.open(base / f"{label}-log", LogSettings(sync=True))
    sids = [mem.start_session(user_id=USER, agent_ids=[AGENT]) for _ in range(SESSIONS)]
    for sid in sids:
        elog.append(f"session:{sid}", [SessionStarted(session_id=sid, user_id=USER, agent_ids=(AGENT,))],
                    actor=ACTOR)
    mem.proj.catch_up()
    base_us = now_micros()
    events = [
        EntryRecorded(entry_id=f"msg-{i:012x}", kind="message", content=text, occurred_at=base_us + i,
                      session_id=sids[i % SESSIONS], user_id=USER, agent_id=AGENT, role="assistant")
        for i, text in enumerate(texts)
    ]
    return Sides(mem, elog, sids, texts, events)


def api_single(s: Sides, start: int, stop: int) -> None:
    """One ``add_message`` per item."""
    for i in range(start, stop):
        s.mem.add_message(s.sids[i % SESSIONS], role="assistant", content=s.texts[i], agent_id=AGENT)


def log_single(s: Sides, start: int, stop: int) -> None:
    """One ``EventLog.append`` per item."""
    for i in range(start, stop):
        event = s.events[i]
        s.elog.append(f"session:{event.session_id}", [event], actor=ACTOR)


def api_batch(s: Sides, start: int, stop: int) -> None:
    """``add_message`` for every item inside one ``mem.batch()``."""
    with s.mem.batch():
        api_single(s, start, stop)


def log_batch(s: Sides, start: int, stop: int) -> None:
    """One ``append_many`` of one-event appends."""
    s.elog.append_many([AppendRequest(f"session:{e.session_id}", [e], ACTOR)
                        for e in s.events[start:stop]])


@dataclass(slots=True)
class Pair:
    """Best-of timings of the facade and the layer beneath over the same count."""

    count: int
    api: list[float] = field(default_factory=list)
    layer: list[float] = field(default_factory=list)

    def eps(self) -> tuple[float, float]:
        """Events per second of the best runs: (facade, layer)."""
        return self.count / min(self.api), self.count / min(self.layer)


Step = Callable[[Sides, int, int], None]


def measure_writes(base: Path, label: str, texts: Sequence[str], block: int, repeats: int,
                   api_step: Step, log_step: Step) -> Pair:
    """Interleave ``block`` facade writes with ``block`` log writes until ``texts`` are written."""
    pair = Pair(len(texts))
    for rep in range(repeats):
        os.sync()
        sides = open_sides(base, f"{label}-{rep}", texts)
        api = layer = 0.0
        try:
            for start in range(0, len(texts), block):
                stop = min(len(texts), start + block)
                started = time.perf_counter()
                api_step(sides, start, stop)
                mid = time.perf_counter()
                log_step(sides, start, stop)
                layer += time.perf_counter() - mid
                api += mid - started
            if sides.mem.log.head().seq != sides.elog.head().seq:
                raise RuntimeError("the facade and the log wrote different event counts")
        finally:
            sides.close()
        shutil.rmtree(base / f"{label}-{rep}-api")
        shutil.rmtree(base / f"{label}-{rep}-log")
        pair.api.append(api)
        pair.layer.append(layer)
        log(f"  {label} run {rep + 1}/{repeats}: facade {len(texts) / api:,.0f} ev/s, "
            f"log {len(texts) / layer:,.0f} ev/s")
    return pair


# -- search ------------------------------------------------------------------------

@dataclass(slots=True)
class Latencies:
    """Per-query seconds through the facade and straight on the projection."""

    facade: list[float] = field(default_factory=list)
    projection: list[float] = field(default_factory=list)
    facade_hits: int = 0
    projection_hits: int = 0


def open_search_store(base: Path, corpus: ModuleType,
                      entries: int) -> tuple[MemoryLog, float, dict[str, int]]:
    """A store holding the corpus, projections caught up; (store, catch-up seconds, counts).

    The counts (entries in the views, documents in the index) show whether
    the catch-up was complete.
    """
    mem = MemoryLog.open(base / "search-store", sync=True, record_access=False)
    corpus.write_corpus(mem.log, entries, SEED)
    started = time.perf_counter()
    mem.proj.catch_up(search=True)
    seconds = time.perf_counter() - started
    assert mem.proj.search_index is not None
    searchers = mem.proj.search_index.searchers()
    with mem.proj.read() as views:
        counts = {"search_store_views_entries": views.counters().get("entries", 0),
                  "search_store_index_docs": sum(s.num_docs for _, s in searchers) - len(searchers)}
    if any(v != entries for v in counts.values()):
        log(f"  INCOMPLETE catch-up of the search store: {counts} for {entries:,} entries")
    return mem, seconds, counts


def measure_search(mem: MemoryLog, queries: Sequence[str]) -> Latencies:
    """Facade and projection search, query by query, after a warm-up."""
    index = mem.proj.search_index
    assert index is not None
    out = Latencies()

    def facade(text: str) -> tuple[float, int]:
        started = time.perf_counter()
        results = mem.search(text, limit=LIMIT, record_access=False)
        return time.perf_counter() - started, len(results)

    def projection(text: str) -> tuple[float, int]:
        started = time.perf_counter()
        hits = run_search(index, SearchQuery(text=text, limit=LIMIT), None)
        return time.perf_counter() - started, min(LIMIT, len(hits))

    def one(text: str, record: bool, facade_first: bool) -> None:
        # The side that runs second finds the query's index pages warm, so the
        # order alternates from query to query.
        if facade_first:
            (f_s, f_n), (p_s, p_n) = facade(text), projection(text)
        else:
            (p_s, p_n), (f_s, f_n) = projection(text), facade(text)
        if record:
            out.facade.append(f_s)
            out.projection.append(p_s)
            out.facade_hits += f_n
            out.projection_hits += p_n

    for n, text in enumerate(queries[:WARMUP_QUERIES]):
        one(text, record=False, facade_first=n % 2 == 0)
    for n, text in enumerate(queries, 1):
        one(text, record=True, facade_first=n % 2 == 0)
        if n % 250 == 0:
            log(f"  {n:,}/{len(queries):,} queries")
    return out


# -- profiles ----------------------------------------------------------------------

def profile_writes(base: Path, texts: Sequence[str]) -> None:
    """cProfile of single and batched ``add_message`` (stderr)."""
    for label, count, step in (("single add_message", min(len(texts), 500), api_single),
                               ("batched add_message", min(len(texts), BATCH), api_batch)):
        sides = open_sides(base, "profile", texts[:count])
        profiler = cProfile.Profile()
        try:
            profiler.enable()
            step(sides, 0, count)
            profiler.disable()
        finally:
            sides.close()
            shutil.rmtree(base / "profile-api")
            shutil.rmtree(base / "profile-log")
        log(profile_text(profiler, f"{label} x {count:,}"))


def profile_search(mem: MemoryLog, queries: Sequence[str]) -> None:
    """cProfile of ``mem.search`` over the queries (stderr)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for text in queries:
        mem.search(text, limit=LIMIT, record_access=False)
    profiler.disable()
    log(profile_text(profiler, f"mem.search x {len(queries):,}"))


# -- report ------------------------------------------------------------------------

def collect(single: Pair, batch: Pair, lat: Latencies, catch_up_s: float, counts: dict[str, int],
            args: argparse.Namespace) -> dict[str, Any]:
    """All figures as one flat dict (the --json object)."""
    s_api, s_log = single.eps()
    b_api, b_log = batch.eps()
    ms = 1000.0
    f50, f99 = percentile(lat.facade, 50) * ms, percentile(lat.facade, 99) * ms
    p50, p99 = percentile(lat.projection, 50) * ms, percentile(lat.projection, 99) * ms
    queries = len(lat.facade)
    out: dict[str, Any] = {
        "events": args.events, "single_events": single.count, "batch_events": batch.count,
        "batch_size": BATCH, "search_entries": args.events, "queries": queries,
        "repeats": args.repeats, "statistic": f"best of {args.repeats}",
        "api_single_eps": round(s_api), "log_single_eps": round(s_log),
        "single_overhead": round(s_log / s_api, 3),
        "api_batch_eps": round(b_api), "log_batch_eps": round(b_log),
        "batch_overhead": round(b_log / b_api, 3),
        "facade_search_p50_ms": round(f50, 4), "projection_search_p50_ms": round(p50, 4),
        "facade_search_p99_ms": round(f99, 4), "projection_search_p99_ms": round(p99, 4),
        "search_overhead": round(f50 / p50, 3),
        "facade_results_mean": round(lat.facade_hits / queries, 2),
        "projection_hits_mean": round(lat.projection_hits / queries, 2),
        "search_catch_up_seconds": round(catch_up_s, 3), **counts,
        "search_store_complete": all(v == args.events for v in counts.values()),
        "runs_seconds": {"api_single": single.api, "log_single": single.layer,
                         "api_batch": batch.api, "log_batch": batch.layer},
        "lmdb": f"py-lmdb {lmdb.__version__} (LMDB {'.'.join(map(str, lmdb.version()))})",
        "python": platform.python_version(), "cpus": os.cpu_count(),
    }
    out["pass"] = {
        "single": s_log / s_api <= OVERHEAD_TARGET,
        "batch": b_log / b_api <= OVERHEAD_TARGET,
        "search": f50 / p50 <= OVERHEAD_TARGET,
    }
    return out


def table(r: dict[str, Any]) -> str:
    """The human-readable report."""
    ok = r["pass"]
    rows = [
        ("single write (1/commit, sync)", f"{r['api_single_eps']:>9,} ev/s",
         f"{r['log_single_eps']:>9,} ev/s", f"{r['single_overhead']:.2f}x", "<= 1.5x",
         verdict(ok["single"])),
        ("batched write (10k/txn, sync)", f"{r['api_batch_eps']:>9,} ev/s",
         f"{r['log_batch_eps']:>9,} ev/s", f"{r['batch_overhead']:.2f}x", "<= 1.5x",
         verdict(ok["batch"])),
        ("search p50 (limit 10)", f"{r['facade_search_p50_ms']:>10.3f} ms",
         f"{r['projection_search_p50_ms']:>10.3f} ms", f"{r['search_overhead']:.2f}x", "<= 1.5x",
         verdict(ok["search"])),
    ]
    head = ("measure", "facade", "layer beneath", "overhead", "target", "result")
    lines = [
        f"MemoryLog facade vs the layer beneath, interleaved: {r['single_events']:,} single writes, "
        f"{r['batch_events']:,} batched, {r['queries']:,} queries on {r['search_entries']:,} "
        f"entries; {r['statistic']} runs per throughput",
        f"{r['lmdb']}, Python {r['python']}, {r['cpus']} CPUs",
        "",
        *align(head, rows),
    ]
    lines += [
        "",
        "overhead = layer rate / facade rate (writes), facade p50 / projection p50 (search).",
        "Layers: EventLog.append / append_many of equivalent entry.recorded events (writes);",
        "run_search on mem.proj.search_index with the same SearchQuery (search).",
        f"p99: facade {r['facade_search_p99_ms']:.3f} ms, projection "
        f"{r['projection_search_p99_ms']:.3f} ms; mean results per query: facade "
        f"{r['facade_results_mean']}, projection {r['projection_hits_mean']} (capped at 10);",
        f"search projections caught up over the corpus in {r['search_catch_up_seconds']:.2f} s "
        "(off the clock).",
    ]
    if not r["search_store_complete"]:
        lines.append(f"INCOMPLETE search store: views hold {r['search_store_views_entries']:,} "
                     f"entries, the index {r['search_store_index_docs']:,} documents "
                     f"(expected {r['search_entries']:,}).")
    return "\n".join(lines)


# -- main --------------------------------------------------------------------------

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=100_000,
                        help="batched writes, and corpus entries for the search")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--queries", type=int, default=1000, help="search queries")
    parser.add_argument("--repeats", type=int, default=3, help="runs per throughput; best is kept")
    parser.add_argument("--dir", type=Path, default=None, metavar="PATH",
                        help="parent of the scratch directory (default: the system temp dir)")
    parser.add_argument("--profile", action="store_true",
                        help="print cProfile tables of add_message and mem.search (stderr)")
    args = parser.parse_args(argv)
    if args.events < 1 or args.repeats < 1 or args.queries < 1:
        parser.error("--events, --repeats and --queries must be >= 1")
    return args


def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    """Every measurement, in one run."""
    corpus = load_corpus()
    log(f"generating {args.events:,} message texts")
    source = corpus.Corpus(SEED + 1)
    texts = [source.text() for _ in range(args.events)]
    n_single = min(args.events, SINGLE_MAX)
    log(f"(a) single durable writes, {n_single:,} per side")
    single = measure_writes(base, "single", texts[:n_single], SINGLE_BLOCK, args.repeats,
                            api_single, log_single)
    log(f"(b) batched writes, {args.events:,} per side in batches of {BATCH:,}")
    batch = measure_writes(base, "batch", texts, BATCH, args.repeats, api_batch, log_batch)
    if args.profile:
        profile_writes(base, texts)
    log(f"(c) search: writing a corpus of {args.events:,} entries")
    mem, catch_up_s, counts = open_search_store(base, corpus, args.events)
    try:
        queries = corpus.Corpus(SEED).queries(args.queries)
        log(f"  {len(queries):,} queries")
        lat = measure_search(mem, queries)
        if args.profile:
            profile_search(mem, queries)
    finally:
        mem.close()
    return collect(single, batch, lat, catch_up_s, counts, args)


def main(argv: Sequence[str] | None = None, emit: Callable[[str], None] = print) -> int:
    """Run the benchmark; the scratch directory is removed afterwards."""
    return run_main(parse_args(argv), run, table, "memlog-bench-api-", emit)


if __name__ == "__main__":
    sys.exit(main())
