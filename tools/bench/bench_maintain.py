"""Benchmark: ``memlog maintain`` on a store of 100k entries and 1,000 sessions.

    python tools/bench/bench_maintain.py [--sessions 1000] [--entries 100000] [--json] [--dir PATH]

Builds the store through the public API (batches, automatic compaction and
summaries off, no embedder), with every kind of work ``maintain`` does present
but, for the idle run, none of it due. Then:

- ``maintain_idle_s``: ``mem.maintain()`` with nothing due (the best of 5 runs;
  each asks every step what is due: the views' session statistics, the lesson
  counts per scope, the resource instances, the sessions' extraction marks);
- ``maintain_due_s``: one run with 10% of the sessions due (see ``_make_due``:
  sessions past their compaction threshold, closed sessions not yet extracted,
  ephemeral sessions past the count limit, lessons past the per-scope limit),
  and what it did, per step;
- ``maintain_idle_cli_s``: ``memlog maintain`` as cron runs it, a new process
  (interpreter start, imports, opening the store, the run).

Anchor, measured in the same run: ``raw_lmdb_sessions_s``, a raw LMDB pass over
the views' session statistics (one read per session: the least any "is anything
due?" over every session costs), and ``raw_open_s``, opening the store.

Goal: ``maintain_idle_s`` < 0.5 s.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import lmdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import align, run_main, verdict
from benchkit import log as progress

from commands import MemoryLog

TARGET_S = 0.5
LIMIT = 64 * 1024  # the bench's session size limit: a normal session stays far under it
_WORDS = ("cache", "warmup", "ledger", "replica", "postgres", "latency", "schema", "deploy", "index",
          "queue", "retry", "shard", "tenant", "billing", "invoice", "budget", "rollout", "canary")


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)) + "."


EPHEMERAL = 75  # ephemeral sessions built (the bench's ephemeral_max_count: none due)
LESSON_LIMIT = 10  # the bench's lesson_limit
LESSON_SCOPES = 25  # scopes built holding LESSON_LIMIT lessons each
CONFIG = (f"session_limit_bytes = {LIMIT}\nsemantic = false\nephemeral_max_count = {EPHEMERAL}\n"
          f"lesson_limit = {LESSON_LIMIT}\n")


def _options(**more: Any) -> dict[str, Any]:
    return {"embedder": None, "auto_compact": False, "auto_summarise": False, "session_limit_bytes": LIMIT,
            "ephemeral_max_count": EPHEMERAL, "lesson_limit": LESSON_LIMIT, **more}


def _lessons(mem: MemoryLog, sid: str, rng: random.Random, count: int) -> None:
    for _ in range(count):  # random words: no two alike, so dedup adds each
        mem.record_lesson(sid, content="Learned: " + " ".join(f"w{rng.randrange(10**6)}" for _ in range(8)),
                          agent_id="agent")


def build(path: Path, sessions: int, entries: int, rng: random.Random) -> list[str]:
    """``sessions`` sessions of ``entries // sessions`` messages each, 10 per user;
    the last EPHEMERAL are ephemeral; the first LESSON_SCOPES users' first sessions
    hold LESSON_LIMIT lessons each."""
    per = max(1, entries // sessions)
    sids: list[str] = []
    with MemoryLog.open(path, **_options()) as mem:
        for start in range(0, sessions, 50):
            with mem.batch():
                for n in range(start, min(sessions, start + 50)):
                    sid = mem.start_session(user_id=f"user{n // 10}", agent_ids=["agent"],
                                            ephemeral=n >= sessions - EPHEMERAL)
                    for i in range(per):
                        mem.add_message(sid, role="user" if i % 2 == 0 else "assistant",
                                        content=_text(rng, 12))
                    if n % 10 == 0 and n // 10 < LESSON_SCOPES:
                        _lessons(mem, sid, rng, LESSON_LIMIT)
                    sids.append(sid)
            progress(f"  built {len(sids)}/{sessions} sessions")
        mem.stats()  # bring the views up to the head
        mem.proj.refit()  # the shard count a maintained store of this size has
    return sids


def _make_due(path: Path, sids: list[str], rng: random.Random) -> dict[str, int]:
    """Make 10% of the sessions due, a quarter each way: grown past their
    compaction threshold; closed without extraction; LESSON_SCOPES scopes two
    lessons over the limit; ephemeral sessions past the count."""
    share = max(4, len(sids) // 10) // 4
    grown, closed = sids[1:1 + share], sids[1 + share:1 + 2 * share]
    with MemoryLog.open(path, **_options(extract_on_close=False, handoff_on_close=False)) as mem:
        with mem.batch():
            for sid in grown:
                for _ in range(52):
                    mem.add_message(sid, role="user", content=_text(rng, 160))
            for sid in closed:
                mem.add_message(sid, role="assistant", content="We decided to read from the replica.")
            for n in range(min(share, LESSON_SCOPES)):
                _lessons(mem, sids[n * 10], rng, 2)
            for n in range(share):
                mem.start_session(user_id=f"user{n}", ephemeral=True)
        for sid in closed:
            mem.close_session(sid)
        mem.stats()
    return {"compaction": len(grown), "extraction": len(closed), "retention_count": min(share, LESSON_SCOPES),
            "ephemeral": share}


def _idle(path: Path, runs: int = 5) -> tuple[float, int]:
    with MemoryLog.open(path, create=False, **_options()) as mem:
        best, due = float("inf"), 0
        for _ in range(runs):
            report = mem.maintain()
            best, due = min(best, report.seconds), due + report.due
    return best, due


def _raw(path: Path) -> tuple[float, float]:
    started = time.perf_counter()
    with MemoryLog.open(path, create=False, **_options()):
        pass
    opened = time.perf_counter() - started
    env = lmdb.open(str(path / "proj" / "views"), readonly=True, lock=False, max_dbs=64, subdir=True)
    try:
        started = time.perf_counter()
        db = env.open_db(b"session_stats", create=False)
        with env.begin(db=db) as txn:
            for _, value in txn.cursor():
                len(value)  # touch every record, as a due check over every session must
        scanned = time.perf_counter() - started
    finally:
        env.close()
    return scanned, opened


def _cli(path: Path) -> float:
    env = {**os.environ, "MEMLOG_SEMANTIC": "false"}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "commands", "--dir", str(path), "maintain"], check=True,
                   capture_output=True, env=env)
    return time.perf_counter() - started


def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    rng = random.Random(18)
    path = base / "store"
    progress(f"building {args.entries} entries in {args.sessions} sessions ...")
    started = time.perf_counter()
    sids = build(path, args.sessions, args.entries, rng)
    (path / "config.toml").write_text(CONFIG)
    built = time.perf_counter() - started
    idle, idle_due = _idle(path)
    scanned, opened = _raw(path)
    cli = _cli(path)
    made = _make_due(path, sids, rng)
    with MemoryLog.open(path, create=False, **_options()) as mem:
        report = mem.maintain()
        after = mem.maintain(dry_run=True)
    return {
        "sessions": args.sessions, "entries": args.entries, "build_s": round(built, 1),
        "maintain_idle_s": round(idle, 4), "idle_due": idle_due,
        "maintain_idle_cli_s": round(cli, 3),
        "maintain_due_s": round(report.seconds, 3), "made_due": made,
        "due_items": report.due, "due_failed": report.failed,
        "due_steps": {s.name: {"items": len(s.due), "events": s.events, "seconds": s.seconds}
                      for s in report.steps},
        "due_after": after.due,
        "raw_lmdb_sessions_s": round(scanned, 5), "raw_open_s": round(opened, 3),
        "target_idle_s": TARGET_S, "idle_verdict": verdict(idle < TARGET_S and idle_due == 0),
    }


def table(r: dict[str, Any]) -> str:
    rows = [
        ["maintain, nothing due", f"{r['maintain_idle_s']:.4f} s",
         f"raw LMDB pass over {r['sessions']} session stats {r['raw_lmdb_sessions_s']:.5f} s",
         f"{r['idle_verdict']} (< {r['target_idle_s']} s)"],
        ["memlog maintain (new process)", f"{r['maintain_idle_cli_s']:.3f} s",
         f"opening the store {r['raw_open_s']:.3f} s", ""],
        ["maintain, 10% due", f"{r['maintain_due_s']:.3f} s",
         f"{r['due_items']} items, {r['due_failed']} failed; due after: {r['due_after']}", ""],
    ]
    steps = [[f"  {name}", f"{s['items']} items, {s['seconds']:.3f} s", f"{s['events']} events", ""]
             for name, s in r["due_steps"].items()]
    head = [f"bench_maintain: {r['entries']} entries, {r['sessions']} sessions (built in {r['build_s']} s)",
            "figure", "anchor", "verdict"]
    return "\n".join(align(head, rows + steps))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", type=Path, help="scratch directory parent (default: the system's)")
    return run_main(parser.parse_args(), run, table, "bench-maintain-")


if __name__ == "__main__":
    raise SystemExit(main())
