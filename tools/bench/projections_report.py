"""The human-readable report of tools/bench/bench_projections.py (its --json object as a table)."""

from __future__ import annotations

from typing import Any

from benchkit import align, verdict

__all__ = ["table"]


def table(r: dict[str, Any]) -> str:
    """The human-readable report."""
    ok = r["pass"]
    rows = [
        ("replay into views", f"{r['replay_views_eps']:>10,} ev/s",
         f"{r['raw_scan_decode_eps']:>10,} ev/s", f"{r['replay_views_ratio']:.3f}x",
         ">= 0.5x scan+decode", verdict(ok["replay_views"])),
        ("replay peak RSS (child)", f"{r['replay_peak_rss_mb']:>12,.0f} MB",
         f"{r['raw_scan_peak_rss_mb']:>12,.0f} MB",
         f"{r['replay_peak_rss_mb'] / r['raw_scan_peak_rss_mb']:.2f}x", "< 500 MB",
         verdict(ok["replay_memory"])),
        ("full rebuild incl. search", f"{r['rebuild_all_docs_per_s']:>8,} docs/s",
         f"{r['raw_tantivy_docs_per_s']:>8,} docs/s", f"{r['rebuild_ratio']:.3f}x",
         ">= 0.8x raw Tantivy", verdict(ok["rebuild"])),
        ("search p50 (limit 10)", f"{r['search_p50_ms']:>12.3f} ms",
         f"{r['raw_tantivy_p50_ms']:>12.3f} ms", f"{r['search_p50_ratio']:.2f}x",
         "<= 2x raw Tantivy", verdict(ok["search_p50"])),
        ("search p99 (limit 10)", f"{r['search_p99_ms']:>12.3f} ms",
         f"{r['raw_tantivy_p99_ms']:>12.3f} ms",
         f"{r['search_p99_ms'] / r['raw_tantivy_p99_ms']:.2f}x", "< 5 ms", verdict(ok["search_p99"])),
        ("search p50 vs SQLite FTS5", f"{r['search_p50_ms']:>12.3f} ms",
         f"{r['fts5_p50_ms']:>12.3f} ms", f"{1 / r['fts5_speedup_p50']:.3f}x",
         ">= 10x faster than FTS5", verdict(ok["search_vs_fts5"])),
        (f"small store search p50 ({r['small_store_entries']:,})",
         f"{r['small_store_search_p50_ms']:>12.3f} ms",
         f"{r['small_store_raw_tantivy_p50_ms']:>12.3f} ms",
         f"{r['small_store_search_p50_ms'] / r['small_store_raw_tantivy_p50_ms']:.1f}x",
         "<= 1 ms", verdict(ok["small_store_search"])),
    ]
    head = ("measure", "memlog", "anchor", "ratio", "target", "result")
    lines = [
        f"memlog projections vs raw anchors, same corpus: {r['entries']:,} entries, "
        f"{r['events']:,} events, {r['shards']} shards, {r['queries']:,} queries "
        f"({r['fts5_queries']:,} on FTS5); "
        f"{r['statistic']} runs per throughput",
        f"{r['tantivy']}, SQLite {r['sqlite']}, {r['lmdb']}, Python {r['python']}, "
        f"{r['cpus']} CPUs",
        "",
        *align(head, rows),
    ]
    lines += _notes(r)
    return "\n".join(lines)


def _notes(r: dict[str, Any]) -> list[str]:
    notes = [
        "",
        "ratio = memlog / anchor (for FTS5: memlog p50 / FTS5 p50). Anchors: scan + decode of the",
        "same log via log.read(); raw Tantivy: one writer indexing the same documents (list built",
        f"off the clock in {r['raw_doc_build_s']:.2f} s; with that build included it would be "
        f"{r['raw_tantivy_incl_doc_build_docs_per_s']:,} docs/s);",
        "raw Tantivy / FTS5 queries: the same words OR-joined on content, limit 10 (Tantivy: no",
        "hit count, which would stop its block-max WAND pruning).",
        f"raw Tantivy p99 {r['raw_tantivy_p99_ms']:.3f} ms, FTS5 p99 {r['fts5_p99_ms']:.3f} ms; "
        f"FTS5 build {r['fts5_build_rows_per_s']:,} rows/s; corpus write "
        f"{r['corpus_write_eps']:,} ev/s.",
        f"small store ({r['small_store_entries']:,} entries, {r['small_store_shards']} shard(s)): "
        f"whole search path (Projections.search, text mode) p50 {r['small_store_search_p50_ms']:.3f} ms, "
        f"p99 {r['small_store_search_p99_ms']:.3f} ms; its Tantivy part (run_search) "
        f"{r['small_store_run_search_p50_ms']:.3f} ms.",
        f"queries without hits: memlog {r['empty_results']['memlog']}, raw Tantivy "
        f"{r['empty_results']['raw_tantivy']}, FTS5 {r['empty_results']['fts5']}.",
    ]
    notes.append(f"replay peak memory (Projections.replay in a child, default embedder): RSS "
                 f"{r['replay_peak_rss_mb']:,.0f} MB, of which anonymous (heap, not mapped files) "
                 f"{r['replay_peak_anon_mb']:,.0f} MB; its vector worker: RSS "
                 f"{r['replay_worker_peak_rss_mb']:,.0f} MB, anonymous "
                 f"{r['replay_worker_peak_anon_mb']:,.0f} MB; scan + decode child: RSS "
                 f"{r['raw_scan_peak_rss_mb']:,.0f} MB, anonymous {r['raw_scan_peak_anon_mb']:,.0f} MB.")
    notes.append(f"views replay floor: raw LMDB writes the {r['views_records']:,} records the replay left in "
                 f"{r['raw_views_write_s']:.3f} s; scan + decode plus that write would give "
                 f"{r['replay_floor_ratio']:.3f}x (tools/bench/floors.py).")
    notes.append(f"views build floor: the least CPython builds the entries' and lessons' records from "
                 f"the decoded log and writes them in {r['views_build_floor_s']:.3f} s; scan + decode "
                 f"plus that would give {r['replay_build_floor_ratio']:.3f}x (tools/bench/floors.py).")
    notes.append(f"rebuild floor: raw Tantivy used {r['raw_tantivy_cpu_s']:.3f} CPU-s (its threads "
                 f"included); with the scan + decode and the views' write, over the cores, a rebuild "
                 f"takes at least {r['rebuild_floor_s']:.3f} s: {r['rebuild_floor_ratio']:.3f}x at most "
                 f"(tools/bench/floors.py).")
    notes.append(f"rebuild build floor: with the views' build floor in place of their write and the "
                 f"documents made as memlog makes them ({r['doc_make_s']:.3f} s) and embedded "
                 f"({r['embed_floor_s']:.3f} s), a rebuild takes at "
                 f"least {r['rebuild_build_floor_s']:.3f} s: {r['rebuild_build_floor_ratio']:.3f}x at most.")
    if r["views_presized"]:
        notes.append("views replay ran with the LMDB map pre-sized (see the module doc).")
    if not r["views_complete"]:
        notes.append(f"INCOMPLETE views replay: events applied {r['views_events_applied']:,}, "
                     f"entries {r['views_entries']:,} (expected {r['events']:,} / "
                     f"{r['entries']:,}).")
    if not r["rebuild_complete"]:
        notes.append(f"INCOMPLETE rebuild: views hold {r['rebuild_views_entries']:,} entries, the "
                     f"index {r['rebuild_search_docs']:,} documents (expected {r['entries']:,}); "
                     "its rate counts the expected documents.")
    return notes
