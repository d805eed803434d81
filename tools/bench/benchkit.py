"""Plumbing shared by the benchmarks in tools/: progress, percentiles, profiles,
verdicts, aligned tables, the scratch directory around a run, and a block run
with the garbage collector off."""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import json
import math
import pstats
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "align",
    "collector_off",
    "dir_bytes",
    "load_corpus",
    "log",
    "percentile",
    "profile_text",
    "run_main",
    "verdict",
]

PROFILE_LINES = 22


@contextlib.contextmanager
def collector_off() -> Iterator[None]:
    """The garbage collector off for the block (as it was after): a floor timed
    beside a large corpus held in memory is then not charged with collections
    that walk that corpus."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def log(message: str) -> None:
    """Progress to stderr (stdout stays clean for --json)."""
    print(message, file=sys.stderr, flush=True)


def load_corpus() -> ModuleType:
    """tools/bench/corpus.py (tools/ is not a package)."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import corpus

    return corpus


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def profile_text(profiler: cProfile.Profile, title: str) -> str:
    """A cProfile table by own time and by cumulative time."""
    buf = io.StringIO()
    stats = pstats.Stats(profiler, stream=buf)
    stats.strip_dirs()
    buf.write(f"\n=== {title}: by own time ===\n")
    stats.sort_stats("tottime").print_stats(PROFILE_LINES)
    buf.write(f"=== {title}: by cumulative time ===\n")
    stats.sort_stats("cumulative").print_stats(PROFILE_LINES)
    return buf.getvalue()


def verdict(ok: bool) -> str:
    """PASS or MISS."""
    return "PASS" if ok else "MISS"


def align(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns, two spaces apart."""
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    return ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in [head, *rows]]


def dir_bytes(path: Path) -> int:
    """Bytes of every file under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_main(args: argparse.Namespace, run: Callable[[argparse.Namespace, Path], dict[str, Any]],
             table: Callable[[dict[str, Any]], str], prefix: str,
             emit: Callable[[str], None] = print) -> int:
    """Run in a scratch directory (under ``args.dir`` if given), remove it, print the result."""
    parent = getattr(args, "dir", None)
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        result = run(args, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    emit(json.dumps(result, indent=2) if args.json else table(result))
    return 0
