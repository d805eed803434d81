#!/usr/bin/env python3
"""Peak memory of a replay, measured in a child process (for tools/bench/bench_projections.py).

Usage::

    python tools/bench/replay_rss.py LOG_DIR WORK_DIR {scan,views,full}

runs one pass over the log at ``LOG_DIR`` in this (fresh) process and prints one
JSON object: ``peak_rss_mb`` (``ru_maxrss``: every resident page, the log's and
the views' memory-mapped file pages included) and ``peak_anon_mb`` (the highest
``RssAnon`` sampled every 20 ms: the process's own heap, without mapped files)
and ``worker_peak_rss_mb`` / ``worker_peak_anon_mb`` (its children's: a
replay's vector worker; ``ru_maxrss``, and the highest sampled ``RssAnon``).
``scan`` reads and decodes the log (the anchor), ``views`` replays it into fresh
views, ``full`` runs ``Projections.replay`` (views, search, vectors) in
``WORK_DIR``. :func:`measure` runs it as a child and returns the object.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["measure"]

_SAMPLE_S = 0.02


def measure(log_dir: Path, work: Path, mode: str) -> dict[str, Any]:
    """Run ``mode`` over the log in a child process; its memory figures."""
    out = subprocess.run([sys.executable, __file__, str(log_dir), str(work), mode], check=True,
                         capture_output=True, text=True)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _anon_kb(pid: str = "self") -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:  # a child that just ended
        pass
    return 0


def _children() -> list[str]:
    """The pids of this process's children (a replay's vector worker)."""
    pid = os.getpid()
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as found:
            return found.read().split()
    except OSError:
        return []


class _Sampler(threading.Thread):
    """The highest ``RssAnon`` seen while it runs."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_kb = _anon_kb()
        self.children_kb = 0  # the highest sum of the children's RssAnon
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(_SAMPLE_S):
            self.peak_kb = max(self.peak_kb, _anon_kb())
            self.children_kb = max(self.children_kb, sum(map(_anon_kb, _children())))


def _pass(log_dir: Path, work: Path, mode: str) -> int:
    from eventstore import EventLog
    from projections import Projections, ViewStore

    with EventLog.open(log_dir) as elog:
        if mode == "scan":
            return sum(1 for rec in elog.read() if rec.event is not None)
        if mode == "views":
            store = ViewStore(work / "views", sync=False, events_at=elog.events_at)
            try:
                return store.apply(lambda after: elog.read(after + 1))
            finally:
                store.close()
        proj = Projections(work, elog, sync=False)  # the default embedder, as `memlog replay`
        try:
            return proj.replay()
        finally:
            proj.close()


def main(argv: list[str]) -> int:
    log_dir, work, mode = Path(argv[0]), Path(argv[1]), argv[2]
    work.mkdir(mode=0o700, parents=True, exist_ok=True)
    sampler = _Sampler()
    sampler.start()
    started = time.perf_counter()
    done = _pass(log_dir, work, mode)
    seconds = time.perf_counter() - started
    sampler.stop.set()
    sampler.join()
    sampler.peak_kb = max(sampler.peak_kb, _anon_kb())
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux
    children_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the vector worker
    print(json.dumps({"mode": mode, "events": done, "seconds": round(seconds, 3),
                      "peak_rss_mb": round(peak_kb / 1024, 1),
                      "worker_peak_rss_mb": round(children_kb / 1024, 1),
                      "worker_peak_anon_mb": round(sampler.children_kb / 1024, 1),
                      "peak_anon_mb": round(sampler.peak_kb / 1024, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
