"""Search on a small store, for tools/bench/bench_projections.py: memlog's whole
search path next to its Tantivy part and raw Tantivy on the same documents.

:func:`measure_small_child` measures in a fresh process of its own
(``python tools/bench/bench_small_store.py DIR QUERIES [--profile]`` measures in a
new directory under DIR, removes it, and prints the latencies as JSON): an
agent with a small store runs in such a process, not in one that has just
built, replayed and searched a million events, whose heap made the same
searches about 1.5 times as slow (1.15 ms against 0.73 to 0.80 ms, raw
Tantivy's anchor unchanged).
"""

from __future__ import annotations

import cProfile
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import tantivy
from benchkit import load_corpus, log, profile_text
from raw_tantivy import SCHEMA, build_raw_corpus, or_words, raw_tantivy_build

from eventstore import EventLog
from projections import Projections, SearchQuery, run_search

__all__ = ["SEED", "SMALL_ENTRIES", "SMALL_TARGET_MS", "Small", "measure_small", "measure_small_child"]

WARMUP_QUERIES = 50
LIMIT = 10
SEED = 7
SMALL_ENTRIES = 1_000
SMALL_TARGET_MS = 1.0
_NOW = 4_000_000_000_000_000  # microseconds, after every corpus time


@dataclass(slots=True)
class Small:
    """Search latencies on a small store (``SMALL_ENTRIES`` entries)."""

    shards: int = 0
    full: list[float] = field(default_factory=list)      # Projections.search, text mode
    run: list[float] = field(default_factory=list)       # run_search (Tantivy candidates)
    raw: list[float] = field(default_factory=list)       # raw Tantivy, the same words OR-joined
    profile: cProfile.Profile | None = None


def measure_small(base: Path, queries: Sequence[str], profile: bool) -> Small:
    """(d) a store of ``SMALL_ENTRIES`` entries: memlog's whole search path
    (``Projections.search``: catch-up check, snapshot, candidates, ranking; text
    mode, limit 10), its Tantivy part (``run_search``) and raw Tantivy on the
    same documents (one index), query by query."""
    corpus = load_corpus()
    out = Small()
    with EventLog.open(base / "small-log") as elog:
        corpus.write_corpus(elog, SMALL_ENTRIES, SEED)
        raw = build_raw_corpus(elog)
        raw_tantivy_build(base / "small-raw", SCHEMA, raw.docs)
        raw_index = tantivy.Index(SCHEMA, path=str(base / "small-raw"))
        raw_index.reload()
        searcher = raw_index.searcher()
        (base / "small").mkdir(mode=0o700)
        proj = Projections(base / "small", elog, embedder=None)
        try:
            proj.replay()
            assert proj.search_index is not None
            out.shards = len(proj.search_index.shards)
            for n, query in enumerate([*queries[:WARMUP_QUERIES], *queries]):
                t0 = time.perf_counter()
                proj.search(SearchQuery(text=query, limit=LIMIT, mode="text"), now=_NOW)
                t1 = time.perf_counter()
                run_search(proj.search_index, SearchQuery(text=query, limit=LIMIT), None)
                t2 = time.perf_counter()
                searcher.search(raw_index.parse_query(" OR ".join(or_words(query)), ["content"]), LIMIT,
                                count=False)
                t3 = time.perf_counter()
                if n >= WARMUP_QUERIES:
                    out.full.append(t1 - t0)
                    out.run.append(t2 - t1)
                    out.raw.append(t3 - t2)
            if profile:
                out.profile = cProfile.Profile()
                out.profile.enable()
                for query in queries:
                    proj.search(SearchQuery(text=query, limit=LIMIT, mode="text"), now=_NOW)
                out.profile.disable()
        finally:
            proj.close()
    return out


def measure_small_child(base: Path, queries: int, profile: bool) -> Small:
    """:func:`measure_small` in a fresh child process (the corpus's first
    ``queries`` queries, as the caller's); its profile goes to stderr."""
    argv = [sys.executable, __file__, str(base), str(queries), *(["--profile"] if profile else [])]
    out = subprocess.run(argv, check=True, stdout=subprocess.PIPE, text=True)
    found = json.loads(out.stdout)
    return Small(shards=found["shards"], full=found["full"], run=found["run"], raw=found["raw"])


def main(argv: list[str]) -> int:
    """The child: measure in a new directory under DIR (removed after),
    print the latencies as JSON."""
    if len(argv) < 2 or not argv[1].isdigit() or int(argv[1]) < 1 or any(a != "--profile" for a in argv[2:]):
        print("usage: python tools/bench/bench_small_store.py DIR QUERIES [--profile]", file=sys.stderr)
        return 2
    parent, count, profile = Path(argv[0]), int(argv[1]), "--profile" in argv[2:]
    parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="small-", dir=parent))
    try:
        small = measure_small(base, load_corpus().Corpus(SEED).queries(count), profile)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if small.profile is not None:
        log(profile_text(small.profile, f"Projections.search x {count:,} on {SMALL_ENTRIES:,} entries"))
    print(json.dumps({"shards": small.shards, "full": small.full, "run": small.run, "raw": small.raw}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
