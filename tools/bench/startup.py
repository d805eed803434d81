"""How fast the ``memlog`` command starts, beside the import floor of its three
native libraries measured in the same run.

Times, as the median of ``--runs`` fresh processes each: ``memlog --help``,
``memlog --json search x`` and ``memlog --json context SID`` on a store of
``--entries`` corpus entries (built once in a scratch directory), and
``python -c "import lmdb, msgspec, tantivy"`` (the floor). Each figure is also
printed as a ratio to the floor.

The processes run as an installed memlog does, from bytecode caches: the
caches go to a scratch ``PYTHONPYCACHEPREFIX`` (the tree stays clean, and
``PYTHONDONTWRITEBYTECODE`` is lifted for them), written by a warm-up run of
each command. ``--from-source`` writes no caches instead
(``PYTHONDONTWRITEBYTECODE``): a module without a ``__pycache__`` beside it
is compiled on each start.

    python tools/bench/startup.py [--runs N] [--entries N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import load_corpus

from commands import MemoryLog
from eventstore import EventLog

GOALS_MS = {"help_ms": 150.0, "search_ms": 300.0, "context_ms": 350.0}
FLOOR = [sys.executable, "-c", "import lmdb, msgspec, tantivy"]
_SCRIPT = Path(sys.executable).parent / "memlog"  # the console script agents call
MEMLOG = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "commands"]


def build_store(data_dir: Path, entries: int) -> str:
    """Write ``entries`` corpus entries into ``data_dir``'s log, open the store
    once (so its projections are built), and return one session's id."""
    corpus = load_corpus()
    data_dir.mkdir(mode=0o700)
    with EventLog.open(data_dir / "log") as elog:
        corpus.write_corpus(elog, entries)
    with MemoryLog.open(data_dir):
        pass
    _, started = next(iter(corpus.Corpus(7).session_events()))
    return str(started.session_id)


def child_env(base: Path, from_source: bool) -> dict[str, str]:
    """The environment of the measured processes: bytecode caches in ``base``, or none."""
    env = dict(os.environ)
    if from_source:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
    return env


def median_ms(argv: list[str], runs: int, env: Mapping[str, str]) -> float:
    """The median wall time of ``runs`` fresh processes of ``argv``, after one warm-up."""
    times = []
    for n in range(runs + 1):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        if n:
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def measure(base: Path, runs: int, entries: int, from_source: bool = False) -> dict[str, Any]:
    """The startup figures and their ratios to the floor."""
    store = base / "store"
    session = build_store(store, entries)
    env = child_env(base, from_source)
    at = [*MEMLOG, "--dir", str(store), "--json"]
    out: dict[str, Any] = {"runs": runs, "entries": entries, "bytecode_cache": not from_source}
    out["floor_ms"] = median_ms(FLOOR, runs, env)
    out["help_ms"] = median_ms([*MEMLOG, "--help"], runs, env)
    out["search_ms"] = median_ms([*at, "search", "x"], runs, env)
    out["context_ms"] = median_ms([*at, "context", session], runs, env)
    for key in GOALS_MS:
        out[key.removesuffix("_ms") + "_floor_ratio"] = out[key] / out["floor_ms"]
        out[key.removesuffix("_ms") + "_goal_met"] = out[key] <= GOALS_MS[key]
    return out


def table(result: dict[str, Any]) -> str:
    """The figures as text, one line each."""
    lines = [f"import floor (lmdb, msgspec, tantivy): {result['floor_ms']:.1f} ms"]
    for key, goal in GOALS_MS.items():
        name = key.removesuffix("_ms")
        lines.append(f"{name:<8} {result[key]:7.1f} ms  {result[name + '_floor_ratio']:5.2f}x floor"
                     f"  goal <= {goal:.0f} ms: {'met' if result[name + '_goal_met'] else 'missed'}")
    return "\n".join(lines)


def main() -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--from-source", action="store_true", help="write no bytecode caches")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="startup-"))
    try:
        result = measure(base, args.runs, args.entries, args.from_source)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result, indent=2) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
