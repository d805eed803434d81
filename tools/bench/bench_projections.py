#!/usr/bin/env python3
"""Benchmark memlog's projections next to raw Tantivy and SQLite FTS5 on one corpus.

Usage::

    python tools/bench/bench_projections.py [--events N] [--json] [--queries Q] [--shards S]
                                      [--fts5-queries F] [--repeats R] [--dir PATH]
                                      [--profile] [--no-presize]

It writes a deterministic corpus log of N entries (``tools/bench/corpus.py``: Zipf
words, six kinds, 200 sessions) and measures, in one run:

(a) replay into views: ``ViewStore(fresh dir, sync=False, events_at=...).apply(...)`` over the log
    (one transaction), then one ``env.sync``; the anchor is a scan + decode of
    the same log (``log.read()``, touching every event), interleaved with it;
(b) full rebuild including search: ``Projections(fresh dir, log).replay()``
    (views + sharded Tantivy, the swap and its fsyncs); the anchor is raw
    Tantivy indexing the same documents (an equivalent schema, content =
    ``searchable_text(entry)``, the same filter fields; one writer with
    tantivy's default heap and threads; commit at the end). The raw Document
    list is built once, off the clock: the raw figure times indexing only,
    while memlog's rebuild also reads, decodes, applies views and builds its
    documents (the off-clock build time is reported as ``raw_doc_build_s``);
(c) search latency over Q mixed queries (``Corpus.queries``), limit 10,
    interleaved query by query: memlog ``run_search`` on the rebuilt projection
    (as of None); raw Tantivy ``parse_query`` of the same words OR-joined on
    ``content``; SQLite FTS5 (``fts5(content)``, the same words OR-joined,
    ``ORDER BY rank LIMIT 10``) on the same texts. An FTS5 OR query ranks every
    matching row (hundreds of ms at 1M entries), so FTS5 runs on an evenly
    spaced subset of ``--fts5-queries`` of the same queries (default 200).

(d) search on a small store (``SMALL_ENTRIES``, 1,000 entries; tools/bench/bench_small_store.py):
    memlog's whole search path (``Projections.search``, text mode, limit 10:
    the catch-up check, the snapshot, the candidates and their ranking) as
    ``small_store_search_p50_ms``, its Tantivy part (``run_search``) and raw
    Tantivy on the same documents, query by query, in a fresh child process
    (as an agent with a small store runs it).

(e) peak memory of a replay: ``Projections.replay`` (views, search and vectors
    with the default embedder, as ``memlog replay``) in a fresh child process,
    ``replay_peak_rss_mb`` (``ru_maxrss``, mapped file pages included) and
    ``replay_peak_anon_mb`` (the highest ``RssAnon`` sampled); the anchor is a
    child that only scans and decodes the log (tools/bench/replay_rss.py).
    ``replay_ratio`` is (a)'s memlog / anchor (``replay_views_ratio``, kept).
    (a) also times raw LMDB writing the records the replay left (``raw_views_write_s``,
    tools/bench/floors.py): ``replay_floor_ratio`` = anchor / (anchor + that write) is the
    ratio of a replay that spent nothing between reading the log and writing.
    It also times the least CPython that builds the entries' and lessons'
    records from the decoded log and writes them (``views_build_floor_s``,
    tools/bench/floors.py): ``replay_build_floor_ratio`` = anchor / (anchor + that)
    is the ratio of a replay that did only that.
    (b) also times raw Tantivy's CPU (``raw_tantivy_cpu_s``, its threads included):
    a rebuild reads the log, writes the views' records and indexes, so it takes at
    least ``rebuild_floor_s``, those three parts' CPU over the cores (never less than
    raw Tantivy's own time), and ``rebuild_floor_ratio`` = raw Tantivy's time / that
    floor bounds ``rebuild_ratio`` (tools/bench/floors.py). ``rebuild_build_floor_s`` and
    ``rebuild_build_floor_ratio`` bound it more tightly: the views' build floor in
    place of their write, plus the making of the documents as memlog makes them
    (``doc_make_s``: ``entry_document`` over every entry, timed off the clock while
    the raw documents are built) and the default embedder over every entry's text
    (``embed_floor_s``, tools/bench/floors.py).

The projection's shard count is fitted to the store as memlog does (one per
32,768 events, a power of two, at most 32; ``--shards N`` fixes it). Raw
Tantivy queries ask for no hit count (``count=False``), as memlog's do: a
count stops Tantivy's block-max WAND pruning. The raw anchors live in
tools/bench/raw_tantivy.py.

Throughput figures are the best of ``--repeats`` runs in fresh directories
(after ``os.sync()``); latencies are percentiles over all queries after a short
warm-up. Every replay is checked afterwards (counters of the views, documents
in the index); an incomplete one is reported and fails its target.

``ViewStore`` grows its LMDB map by retrying the write transaction (re-reading
the log from its checkpoint). (a) sets the map of the fresh views environment
to a size that fits before applying, so that the figure is the replay itself,
unless ``--no-presize``. Every replay's completeness is checked and reported.

``--profile`` also prints cProfile tables (stderr) of a views replay and of the
memlog search loop. Progress goes to stderr; the table (or with ``--json`` one
JSON object) goes to stdout. memlog is used only through the public API of
:mod:`eventstore` and :mod:`projections`.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lmdb
import tantivy

from eventstore import EventLog
from projections import (
    Projections,
    SearchQuery,
    ViewStore,
    build_schema,
    run_search,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_small_store import SEED, SMALL_ENTRIES, SMALL_TARGET_MS, Small, measure_small_child
from benchkit import dir_bytes, load_corpus, log, percentile, profile_text, run_main
from floors import embed_floor, rebuild_floor, views_build_floor, views_write_floor
from projections_report import table
from raw_tantivy import RawCorpus, build_raw_corpus, fts5_build, or_words, raw_tantivy_build
from replay_rss import measure as measure_memory

REPLAY_TARGET_RATIO = 0.5
REPLAY_RSS_BUDGET_MB = 500.0
_SCHEMA = build_schema()
REBUILD_TARGET_RATIO = 0.8
SEARCH_P50_TARGET_RATIO = 2.0
SEARCH_P99_BUDGET_MS = 5.0
FTS5_TARGET_SPEEDUP = 10.0
WARMUP_QUERIES = 50
LIMIT = 10
PROFILE_EVENTS = 200_000
PROFILE_LINES = 22


# -- memlog side -------------------------------------------------------------------

def scan_decode(elog: EventLog) -> tuple[float, int]:
    """Stream the whole log, touching every decoded event; (seconds, events)."""
    started = time.perf_counter()
    count = 0
    for rec in elog.read():
        if rec.event is not None:
            count += 1
    return time.perf_counter() - started, count


def views_replay(path: Path, elog: EventLog, map_size: int | None,
                 until: int | None = None) -> tuple[float, dict[str, int]]:
    """Apply the log to fresh views (sync off, one sync at the end); (seconds, counters)."""
    store = ViewStore(path, sync=False, events_at=elog.events_at)
    try:
        if map_size is not None:
            store.shared.env.set_mapsize(map_size)
        started = time.perf_counter()
        store.apply(lambda after: elog.read(after + 1, until))
        store.shared.env.sync(True)
        seconds = time.perf_counter() - started
        with store.read() as views:
            counters = views.counters()
        return seconds, counters
    finally:
        store.close()


def search_docs(proj: Projections) -> int:
    """Entry documents in the projection's index (without the checkpoint documents)."""
    assert proj.search_index is not None
    searchers = proj.search_index.searchers()
    return int(sum(s.num_docs for _, s in searchers)) - len(searchers)


# -- measurements ------------------------------------------------------------------

@dataclass(slots=True)
class Pair:
    """Timings of memlog and its anchor over the same work."""

    count: int
    ours: list[float] = field(default_factory=list)
    raw: list[float] = field(default_factory=list)
    complete: bool = True
    detail: dict[str, int] = field(default_factory=dict)
    floor: list[float] = field(default_factory=list)  # (a): raw LMDB writing the views' records
    build: list[float] = field(default_factory=list)  # (a): the least CPython building and writing them
    raw_cpu: list[float] = field(default_factory=list)  # (b): raw Tantivy's CPU seconds, all threads

    def rates(self) -> tuple[float, float]:
        """Per-second rates of the best runs: (memlog, anchor)."""
        return self.count / min(self.ours), self.count / min(self.raw)


def measure_views(base: Path, elog: EventLog, head: int, entries: int, repeats: int,
                  presize: bool) -> Pair:
    """(a) views replay and scan + decode, interleaved, ``repeats`` times."""
    pair = Pair(head)
    map_size = max(1 << 30, 4 * dir_bytes(base / "log")) if presize else None
    for rep in range(repeats):
        os.sync()
        seconds, count = scan_decode(elog)
        if count != head:
            raise RuntimeError(f"scan read {count} events, expected {head}")
        pair.raw.append(seconds)
        path = base / f"views-{rep}"
        seconds, counters = views_replay(path, elog, map_size)
        floor, records = views_write_floor(path, base / f"views-floor-{rep}")
        shutil.rmtree(path)
        pair.ours.append(seconds)
        pair.floor.append(floor)
        pair.build.append(views_build_floor(elog, head, base / f"views-build-{rep}",
                                            map_size or 4 * dir_bytes(base / "log")))
        pair.detail = {"views_events_applied": counters.get("events", 0),
                       "views_entries": counters.get("entries", 0), "views_records": records}
        if pair.detail["views_events_applied"] != head or pair.detail["views_entries"] != entries:
            pair.complete = False
            log(f"  INCOMPLETE views replay: {pair.detail} for {head:,} events, {entries:,} entries")
        log(f"  views run {rep + 1}/{repeats}: replay {head / pair.ours[-1]:,.0f} ev/s, "
            f"scan+decode {head / pair.raw[-1]:,.0f} ev/s")
    return pair


def measure_rebuild(base: Path, elog: EventLog, raw: RawCorpus, schema: Any, shards: int,
                    repeats: int) -> tuple[Pair, Projections, Path]:
    """(b) ``Projections.replay`` and raw Tantivy, interleaved; the last of each is kept."""
    entries = len(raw.rows)
    pair = Pair(entries)
    proj: Projections | None = None
    raw_dir = base / "raw-tantivy-0"
    for rep in range(repeats):
        if proj is not None:
            proj.close()
            shutil.rmtree(base / f"rebuild-{rep - 1}")
            shutil.rmtree(raw_dir)
        data = base / f"rebuild-{rep}"
        data.mkdir(mode=0o700)
        os.sync()
        proj = Projections(data, elog, shards=shards or None, sync=True)
        started = time.perf_counter()
        proj.replay()
        pair.ours.append(time.perf_counter() - started)
        raw_dir = base / f"raw-tantivy-{rep}"
        os.sync()
        seconds, cpu = raw_tantivy_build(raw_dir, schema, raw.docs)
        pair.raw.append(seconds)
        pair.raw_cpu.append(cpu)
        with proj.read() as views:
            counters = views.counters()
        pair.detail = {"rebuild_views_entries": counters.get("entries", 0),
                       "rebuild_search_docs": search_docs(proj)}
        if any(v != entries for v in pair.detail.values()):
            pair.complete = False
            log(f"  INCOMPLETE rebuild: {pair.detail} for {entries:,} entries")
        log(f"  rebuild run {rep + 1}/{repeats}: memlog {entries / pair.ours[-1]:,.0f} docs/s, "
            f"raw Tantivy {entries / pair.raw[-1]:,.0f} docs/s")
    assert proj is not None
    return pair, proj, raw_dir


@dataclass(slots=True)
class Latencies:
    """Per-query seconds of each engine, over the same queries."""

    memlog: list[float] = field(default_factory=list)
    raw: list[float] = field(default_factory=list)
    fts5: list[float] = field(default_factory=list)
    memlog_empty: int = 0
    raw_empty: int = 0
    fts5_empty: int = 0


def measure_search(proj: Projections, raw_dir: Path, schema: Any, conn: sqlite3.Connection,
                   queries: Sequence[str], fts5_every: int) -> Latencies:
    """(c) memlog, raw Tantivy and FTS5 (every ``fts5_every``-th query), query by query."""
    assert proj.search_index is not None
    index = proj.search_index
    raw_index = tantivy.Index(schema, path=str(raw_dir))
    raw_index.reload()
    searcher = raw_index.searcher()
    sql = "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT 10"
    out = Latencies()

    def one(query: str, record: bool, fts5: bool) -> None:
        words = or_words(query)
        started = time.perf_counter()
        hits = run_search(index, SearchQuery(text=query, limit=LIMIT), None)
        mid = time.perf_counter()
        raw_hits = searcher.search(raw_index.parse_query(" OR ".join(words), ["content"]), LIMIT,
                                   count=False).hits
        mid2 = time.perf_counter()
        if fts5:
            match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
            rows = conn.execute(sql, (match,)).fetchall()
            end = time.perf_counter()
        if record:
            out.memlog.append(mid - started)
            out.raw.append(mid2 - mid)
            out.memlog_empty += not hits
            out.raw_empty += not raw_hits
            if fts5:
                out.fts5.append(end - mid2)
                out.fts5_empty += not rows

    for n, query in enumerate(queries[:WARMUP_QUERIES]):
        one(query, record=False, fts5=n < 5)
    for n, query in enumerate(queries, 1):
        one(query, record=True, fts5=n % fts5_every == 0)
        if n % 250 == 0:
            log(f"  {n:,}/{len(queries):,} queries")
    return out


# -- profiles ----------------------------------------------------------------------

def profile_views(base: Path, elog: EventLog, head: int) -> None:
    """cProfile of a views replay of the first ``PROFILE_EVENTS`` events (stderr)."""
    until = min(head, PROFILE_EVENTS)
    map_size = max(1 << 30, 4 * dir_bytes(base / "log"))
    profiler = cProfile.Profile()
    path = base / "views-profile"
    profiler.enable()
    views_replay(path, elog, map_size, until)
    profiler.disable()
    shutil.rmtree(path)
    log(profile_text(profiler, f"views replay of {until:,} events"))


def profile_search(proj: Projections, queries: Sequence[str]) -> None:
    """cProfile of memlog ``run_search`` over the queries (stderr)."""
    assert proj.search_index is not None
    profiler = cProfile.Profile()
    profiler.enable()
    for query in queries:
        run_search(proj.search_index, SearchQuery(text=query, limit=LIMIT), None)
    profiler.disable()
    log(profile_text(profiler, f"run_search x {len(queries):,}"))


# -- report ------------------------------------------------------------------------

def measure_replay_memory(base: Path) -> dict[str, Any]:
    """(e) peak memory of a replay (``Projections.replay``: views, search, vectors,
    as ``memlog replay``) next to a scan + decode of the same log, each in a
    fresh child process (tools/bench/replay_rss.py)."""
    scan = measure_memory(base / "log", base / "rss-scan", "scan")
    full = measure_memory(base / "log", base / "rss-replay", "full")
    shutil.rmtree(base / "rss-scan")
    shutil.rmtree(base / "rss-replay")
    log(f"  replay peak RSS {full['peak_rss_mb']:,.0f} MB (anon {full['peak_anon_mb']:,.0f} MB); "
        f"scan + decode {scan['peak_rss_mb']:,.0f} MB (anon {scan['peak_anon_mb']:,.0f} MB)")
    return {"replay_peak_rss_mb": full["peak_rss_mb"], "replay_peak_anon_mb": full["peak_anon_mb"],
            "raw_scan_peak_rss_mb": scan["peak_rss_mb"], "raw_scan_peak_anon_mb": scan["peak_anon_mb"],
            "replay_worker_peak_rss_mb": full["worker_peak_rss_mb"],
            "replay_worker_peak_anon_mb": full["worker_peak_anon_mb"], "replay_rss_run_s": full["seconds"]}


def collect(views: Pair, rebuild: Pair, lat: Latencies, raw: RawCorpus, fts5_s: float,
            write_s: float, args: argparse.Namespace, head: int, small: Small, shards: int,
            memory: dict[str, Any]) -> dict[str, Any]:
    """All figures as one flat dict (the --json object)."""
    v_ours, v_raw = views.rates()
    r_ours, r_raw = rebuild.rates()
    ms = 1000.0
    p50, p99 = percentile(lat.memlog, 50) * ms, percentile(lat.memlog, 99) * ms
    raw50, raw99 = percentile(lat.raw, 50) * ms, percentile(lat.raw, 99) * ms
    f50, f99 = percentile(lat.fts5, 50) * ms, percentile(lat.fts5, 99) * ms
    entries = len(raw.rows)
    best = rebuild.raw.index(min(rebuild.raw))
    floor_s = rebuild_floor(rebuild.raw[best], rebuild.raw_cpu[best], min(views.raw), min(views.floor))
    build_floor_s = rebuild_floor(rebuild.raw[best], rebuild.raw_cpu[best], min(views.raw),
                                  min(views.build), raw.make_s + raw.embed_s)
    out: dict[str, Any] = {
        "events": head, "entries": entries, "shards": shards, "queries": len(lat.memlog),
        "shards_rule": "fixed" if args.shards else "fitted (1 per 32,768 events, power of two, <= 32)",
        "repeats": args.repeats, "statistic": f"best of {args.repeats}",
        "replay_views_eps": round(v_ours), "raw_scan_decode_eps": round(v_raw),
        "replay_views_ratio": round(v_ours / v_raw, 3), "replay_ratio": round(v_ours / v_raw, 3),
        "raw_views_write_s": round(min(views.floor), 3),
        "replay_floor_ratio": round(min(views.raw) / (min(views.raw) + min(views.floor)), 3),
        "views_build_floor_s": round(min(views.build), 3),
        "replay_build_floor_ratio": round(min(views.raw) / (min(views.raw) + min(views.build)), 3),
        **memory,
        "views_presized": not args.no_presize, "views_complete": views.complete, **views.detail,
        "rebuild_all_docs_per_s": round(r_ours), "raw_tantivy_docs_per_s": round(r_raw),
        "rebuild_ratio": round(r_ours / r_raw, 3),
        "raw_tantivy_cpu_s": round(rebuild.raw_cpu[best], 3), "rebuild_floor_s": round(floor_s, 3),
        "rebuild_floor_ratio": round(rebuild.raw[best] / floor_s, 3),
        "doc_make_s": round(raw.make_s, 3), "embed_floor_s": round(raw.embed_s, 3),
        "rebuild_build_floor_s": round(build_floor_s, 3),
        "rebuild_build_floor_ratio": round(rebuild.raw[best] / build_floor_s, 3),
        "rebuild_complete": rebuild.complete, **rebuild.detail,
        "raw_doc_build_s": round(raw.build_s, 3),
        "raw_tantivy_incl_doc_build_docs_per_s": round(entries / (min(rebuild.raw) + raw.build_s)),
        "fts5_queries": len(lat.fts5),
        "search_p50_ms": round(p50, 4), "search_p99_ms": round(p99, 4),
        "raw_tantivy_p50_ms": round(raw50, 4), "raw_tantivy_p99_ms": round(raw99, 4),
        "fts5_p50_ms": round(f50, 4), "fts5_p99_ms": round(f99, 4),
        "search_p50_ratio": round(p50 / raw50, 3), "fts5_speedup_p50": round(f50 / p50, 2),
        "small_store_entries": SMALL_ENTRIES, "small_store_shards": small.shards,
        "small_store_search_p50_ms": round(percentile(small.full, 50) * ms, 4),
        "small_store_search_p99_ms": round(percentile(small.full, 99) * ms, 4),
        "small_store_run_search_p50_ms": round(percentile(small.run, 50) * ms, 4),
        "small_store_raw_tantivy_p50_ms": round(percentile(small.raw, 50) * ms, 4),
        "empty_results": {"memlog": lat.memlog_empty, "raw_tantivy": lat.raw_empty,
                          "fts5": lat.fts5_empty},
        "fts5_build_rows_per_s": round(entries / fts5_s),
        "corpus_write_eps": round(head / write_s),
        "runs_seconds": {"replay_views": views.ours, "scan_decode": views.raw,
                         "rebuild": rebuild.ours, "raw_tantivy": rebuild.raw},
        "tantivy": tantivy.__version__ if hasattr(tantivy, "__version__") else "?",
        "raw_tantivy_writer": "one writer, default heap (128 MB) and threads",
        "raw_tantivy_query": "parse_query of the words OR-joined on content, limit 10, count=False",
        "sqlite": sqlite3.sqlite_version,
        "lmdb": f"py-lmdb {lmdb.__version__} (LMDB {'.'.join(map(str, lmdb.version()))})",
        "python": platform.python_version(), "cpus": os.cpu_count(),
    }
    out["pass"] = {
        "replay_views": views.complete and v_ours / v_raw >= REPLAY_TARGET_RATIO,
        "replay_memory": memory["replay_peak_rss_mb"] < REPLAY_RSS_BUDGET_MB,
        "rebuild": rebuild.complete and r_ours / r_raw >= REBUILD_TARGET_RATIO,
        "search_p50": p50 <= SEARCH_P50_TARGET_RATIO * raw50,
        "search_p99": p99 < SEARCH_P99_BUDGET_MS,
        "search_vs_fts5": f50 >= FTS5_TARGET_SPEEDUP * p50,
        "small_store_search": percentile(small.full, 50) * ms <= SMALL_TARGET_MS,
    }
    return out


# -- main --------------------------------------------------------------------------

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=200_000, help="corpus entries in the log")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--queries", type=int, default=1000, help="search queries (>= 1000 advised)")
    parser.add_argument("--shards", type=int, default=0,
                        help="a fixed search shard count (default 0: fitted to the store, as memlog does)")
    parser.add_argument("--fts5-queries", type=int, default=200,
                        help="how many of the queries also run on FTS5 (evenly spaced)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per throughput; best is kept")
    parser.add_argument("--dir", type=Path, default=None, metavar="PATH",
                        help="parent of the scratch directory (default: the system temp dir)")
    parser.add_argument("--profile", action="store_true",
                        help="print cProfile tables of a views replay and of run_search (stderr)")
    parser.add_argument("--no-presize", action="store_true",
                        help="let the views environment grow its map during (a)")
    args = parser.parse_args(argv)
    if min(args.events, args.repeats, args.queries, args.fts5_queries) < 1:
        parser.error("--events, --repeats, --queries and --fts5-queries must be >= 1")
    if not 0 <= args.shards <= 64:
        parser.error("--shards must be 0 (fitted) or 1..64")
    return args


def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    """Every measurement, in one run."""
    corpus = load_corpus()
    with EventLog.open(base / "log") as elog:
        log(f"writing a corpus of {args.events:,} entries")
        started = time.perf_counter()
        head = corpus.write_corpus(elog, args.events, SEED)
        write_s = time.perf_counter() - started
        log(f"(a) replay into views vs scan + decode, {head:,} events")
        views = measure_views(base, elog, head, args.events, args.repeats, not args.no_presize)
        log("(e) peak memory of a replay (child processes)")
        memory = measure_replay_memory(base)
        log("building raw Tantivy documents and FTS5 rows (off the clock)")
        raw = build_raw_corpus(elog)
        raw.embed_s = embed_floor([text for _, text in raw.rows])
        schema = build_schema()
        log(f"(b) full rebuild vs raw Tantivy, {len(raw.rows):,} documents")
        rebuild, proj, raw_dir = measure_rebuild(base, elog, raw, schema, args.shards, args.repeats)
        raw.docs = []  # the documents are not needed any more
        try:
            log("building the SQLite FTS5 table")
            conn, fts5_s = fts5_build(base / "fts5.db", raw.rows)
            try:
                queries = corpus.Corpus(SEED).queries(args.queries)
                log(f"(c) search latency, {len(queries):,} queries")
                every = max(1, len(queries) // args.fts5_queries)
                lat = measure_search(proj, raw_dir, schema, conn, queries, every)
            finally:
                conn.close()
            if args.profile:
                profile_views(base, elog, head)
                profile_search(proj, queries)
            assert proj.search_index is not None
            shards = len(proj.search_index.shards)
        finally:
            proj.close()
    log(f"(d) small store: {SMALL_ENTRIES:,} entries, {len(queries):,} queries (a child process)")
    small = measure_small_child(base / "small-store", len(queries), args.profile)
    return collect(views, rebuild, lat, raw, fts5_s, write_s, args, head, small, shards, memory)


def main(argv: Sequence[str] | None = None, emit: Callable[[str], None] = print) -> int:
    """Run the benchmark; the scratch directory is removed afterwards."""
    return run_main(parse_args(argv), run, table, "memlog-bench-proj-", emit)


if __name__ == "__main__":
    sys.exit(main())
