#!/usr/bin/env python3
"""What the single durable append's guards cost, next to raw LMDB in the same run.

A floor, not a goal: the append without its guards is not a store anyone
may ship, so its figure bounds from below what the guarded append can reach.

Usage::

    python tools/bench/append_guards.py [--singles N] [--repeats R] [--json]

Runs tools/bench/bench_log.py's single appends (b) (one event per call and per
commit, sync on, interleaved with raw LMDB committing the same records 100
appends at a time) several times over, each time with one more of the
append's guards taken out, cumulatively:

1. ``all guards``: the code as it ships;
2. ``no lock, no generation``: the maintenance lock's ``flock`` pair and the
   generation file's check (what keeps a purge or a replaced store in another
   process from losing or corrupting an append) are skipped;
3. ``no concealment``: the recent payload is stored behind a constant nonce,
   not concealed under its segment's key (what keeps a deleted payload's bytes
   out of the main environment's freed pages);
4. ``no validating decode``: the payload's encoding is not decoded again to
   check its constraints (msgspec's constructors skip them).

The steps take turns within each repeat, so all of them see the same disk and
the same machine; the best run of each side is kept. This is a measurement of
parts, never a setting: the guards are taken out by replacing functions in
this process only, and put back after each step.

``append_single_ratio`` of step 1 is ``tools/bench/bench_log.py``'s figure; the
last step's ratio is what a single append could reach with all four guards
gone, the rest of its Python (checks, records, chain, puts, the call chain)
kept.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_log import SINGLE_BLOCK, make_plan, paired_run
from log_content import make_event

from eventstore import codec
from eventstore.lmdb import segments as segments_mod
from eventstore.lmdb import write as write_mod
from eventstore.storage import env as env_mod
from eventstore.storage import files as files_mod

STEPS = ("all guards", "no lock, no generation", "no concealment", "no validating decode")
_PLAIN_NONCE = bytes(16)


class _NoDecode:
    """A decoder that checks nothing (step 4)."""

    @staticmethod
    def decode(data: bytes) -> None:
        return None


def _replace(undo: list[tuple[Any, str, Any]], owner: Any, name: str, value: Any) -> None:
    undo.append((owner, name, getattr(owner, name)))
    setattr(owner, name, value)


@contextlib.contextmanager
def without(step: int) -> Iterator[None]:
    """The first ``step`` guards after step 0 taken out, for the block."""
    undo: list[tuple[Any, str, Any]] = []
    try:
        if step >= 1:
            _replace(undo, files_mod.MaintenanceLock, "hold_shared", lambda self: None)
            _replace(undo, files_mod.MaintenanceLock, "release_shared", lambda self: None)
            _replace(undo, env_mod.SharedEnv, "_current_generation", lambda self: self.generation)
        if step >= 2:
            _replace(undo, write_mod, "conceal", lambda key, stored: _PLAIN_NONCE + stored)
            _replace(undo, segments_mod, "reveal", lambda key, value: bytes(value)[len(_PLAIN_NONCE):])
        if step >= 3:
            _replace(undo, codec, "_event_decoder", _NoDecode)
        yield
    finally:
        for owner, name, value in reversed(undo):
            setattr(owner, name, value)


def measure(singles: int, repeats: int, base: Path) -> list[dict[str, Any]]:
    """Per step: the best memlog and raw seconds over ``repeats`` turns."""
    plan = make_plan([make_event(i) for i in range(singles)], 1)
    ours: list[list[float]] = [[] for _ in STEPS]
    raw: list[list[float]] = [[] for _ in STEPS]
    for rep in range(repeats):
        for step in range(len(STEPS)):
            run = base / f"{rep}-{step}"
            os.sync()
            with without(step):
                o, r, _, _ = paired_run(run / "log", run / "raw", plan, SINGLE_BLOCK)
            shutil.rmtree(run)
            ours[step].append(o)
            raw[step].append(r)
            print(f"  run {rep + 1}/{repeats}, {STEPS[step]}: {r / o:.3f}x", file=sys.stderr)
    return [{
        "step": name, "append_single_eps": round(singles / min(ours[k])),
        "raw_single_eps": round(singles / min(raw[k])),
        "append_single_ratio": round(min(raw[k]) / min(ours[k]), 3),
        "run_ratios": [round(r / o, 3) for o, r in zip(ours[k], raw[k], strict=True)],
        "us_per_append": round(min(ours[k]) / singles * 1e6, 1),
        "raw_us_per_append": round(min(raw[k]) / singles * 1e6, 1),
    } for k, name in enumerate(STEPS)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--singles", type=int, default=3_000, help="single appends per run")
    parser.add_argument("--repeats", type=int, default=3, help="turns of every step; best is kept")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.singles < 1 or args.repeats < 1:
        parser.error("--singles and --repeats must be >= 1")
    base = Path(tempfile.mkdtemp(prefix="append-guards-"))
    started = time.perf_counter()
    try:
        steps = measure(args.singles, args.repeats, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    result = {"singles": args.singles, "repeats": args.repeats, "statistic": f"best of {args.repeats}",
              "steps": steps, "append_single_ratio": steps[0]["append_single_ratio"],
              "append_single_unguarded_ratio": steps[-1]["append_single_ratio"],
              "seconds": round(time.perf_counter() - started, 1)}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{'step':<26} {'memlog us':>10} {'raw us':>8} {'ratio':>7}  runs")
    for s in steps:
        print(f"{s['step']:<26} {s['us_per_append']:>10.1f} {s['raw_us_per_append']:>8.1f} "
              f"{s['append_single_ratio']:>6.3f}x  {s['run_ratios']}")
    print("each step takes one more guard out (see the module doc); raw LMDB commits the same records")


if __name__ == "__main__":
    main()
