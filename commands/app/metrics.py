"""Process metrics: counters and latency histograms, aggregate numbers only.

One registry per process (:data:`METRICS`). The writer observes every log
append it makes and the search use case every search; nothing here ever holds
content or ids. :func:`render` writes the Prometheus text exposition format
(version 0.0.4): the registry's series plus the store's gauges that the health
module passes in.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Final

__all__ = ["BUCKETS", "METRICS", "Histogram", "Metrics", "render"]

# Seconds: from 100 microseconds (an append without fsync) to 10 s (a purge-sized write).
BUCKETS: Final = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                  0.5, 1.0, 2.5, 5.0, 10.0)


class Histogram:
    """Cumulative-bucket latency histogram (Prometheus semantics)."""

    def __init__(self, buckets: tuple[float, ...] = BUCKETS) -> None:
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)  # the last one is +Inf
        self.sum = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, seconds)] += 1
        self.sum += seconds
        self.count += 1

    def lines(self, name: str) -> Iterator[str]:
        running = 0
        for bound, n in zip((*map(_num, self.buckets), "+Inf"), self.counts, strict=True):
            running += n
            yield f'{name}_bucket{{le="{bound}"}} {running}'
        yield f"{name}_sum {_num(self.sum)}"
        yield f"{name}_count {self.count}"


class Metrics:
    """Thread-safe counters and histograms of this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counters: dict[str, int] = {}
        self.histograms: dict[str, Histogram] = {"append": Histogram(), "search": Histogram()}

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counters[name] = self.counters.get(name, 0) + n

    def observe(self, name: str, seconds: float) -> None:
        with self._lock:
            self.histograms.setdefault(name, Histogram()).observe(seconds)

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """Observe the block's duration under ``name`` (also when it raises)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.observe(name, time.perf_counter() - started)

    def snapshot(self) -> tuple[dict[str, int], dict[str, Histogram]]:
        with self._lock:
            copies = {}
            for key, h in self.histograms.items():
                copy = Histogram(h.buckets)
                copy.counts, copy.sum, copy.count = list(h.counts), h.sum, h.count
                copies[key] = copy
            return dict(self.counters), copies


METRICS: Final = Metrics()

_HELP: Final = {
    "memlog_events_total": ("counter", "Events in the log, by type."),
    "memlog_entries": ("gauge", "Entries in the views, by kind."),
    "memlog_deletions_total": ("counter", "Deletion requests recorded in the log."),
    "memlog_purges_total": ("counter", "Purges completed (purge.completed events)."),
    "memlog_compactions_total": ("counter", "Session compactions (session.compacted events)."),
    "memlog_summaries_total": ("counter", "Session summaries (session.summarised events)."),
    "memlog_flushes_total": ("counter", "Resource flushes (resource.flushed events)."),
    "memlog_evictions_total": ("counter", "Resource evictions (resource.evicted events)."),
    "memlog_bytes": ("gauge", "Bytes on disk, by part of the data directory."),
    "memlog_projection_lag_events": ("gauge", "Events of the log a projection has not applied yet."),
    "memlog_head_seq": ("gauge", "The log's head seq."),
    "memlog_searches_total": ("counter", "Searches run by this process."),
    "memlog_appends_total": ("counter", "Log appends made by this process."),
    "memlog_append_seconds": ("histogram", "Latency of this process's log appends (seconds)."),
    "memlog_search_seconds": ("histogram", "Latency of this process's searches (seconds)."),
}


def render(store_series: Mapping[str, Mapping[str, float]], metrics: Metrics = METRICS) -> str:
    """The Prometheus text of ``store_series`` (name -> {label text or "": value})
    and of the process registry."""
    counters, histograms = metrics.snapshot()
    series = {name: dict(values) for name, values in store_series.items()}
    series["memlog_searches_total"] = {"": counters.get("searches", 0)}
    series["memlog_appends_total"] = {"": counters.get("appends", 0)}
    out: list[str] = []
    for name, (kind, text) in _HELP.items():
        out += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        if kind == "histogram":
            out += histograms[name.split("_")[1]].lines(name)
            continue
        for labels, value in sorted(series.get(name, {"": 0}).items()):
            out.append(f"{name}{{{labels}}} {_num(value)}" if labels else f"{name} {_num(value)}")
    return "\n".join(out) + "\n"


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
