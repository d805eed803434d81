"""The cost of lesson dedup (seed 004) per lesson write, with N live
lessons in the writer's scope.

Two stores are filled alike (``--lessons`` lessons of 12 random words in one
scope: every one passes the word-count prefilter, the worst case), one with
dedup on (``lesson_dedup_threshold`` 0.8), one off (0). Then ``--writes`` new
lessons (none a near copy) are written to each, interleaved, and the medians
compared. Also timed: the dedup check alone, cold (no word set cached: the
first check of a process, or the first after a deletion or redaction, reads
every candidate's text from the log).

    python tools/bench/bench_dedup.py [--lessons 500] [--writes 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from commands import MemoryLog
from commands.app.recording.dedup import find_copy


def _lesson(rng: random.Random, vocab: list[str]) -> str:
    return "Lesson: " + " ".join(rng.sample(vocab, 11))


def _fill(path: Path, threshold: float, lessons: int, seed: int) -> tuple[MemoryLog, str]:
    rng = random.Random(seed)
    vocab = [f"term{i}" for i in range(3000)]
    mem = MemoryLog.open(path, embedder=None, lesson_dedup_threshold=threshold)
    sid = mem.start_session(user_id="alice", agent_ids=["dev"])
    with mem.batch():
        for _ in range(lessons):
            mem.record_lesson(sid, content=_lesson(rng, vocab), agent_id="dev")
    return mem, sid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lessons", type=int, default=500)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(7)
    vocab = [f"word{i}" for i in range(3000)]
    with tempfile.TemporaryDirectory() as tmp:
        on, sid_on = _fill(Path(tmp) / "on", 0.8, args.lessons, 1)
        off, sid_off = _fill(Path(tmp) / "off", 0.0, args.lessons, 1)
        with on, off:
            with on.proj.read() as views:
                scope = len(views.scope_lessons("alice", "dev"))
            times: dict[str, list[float]] = {"on": [], "off": [], "check": []}
            for _ in range(args.writes):
                text = _lesson(rng, vocab)
                for name, mem, sid in (("on", on, sid_on), ("off", off, sid_off)):
                    start = time.perf_counter()
                    mem.record_lesson(sid, content=text, agent_id="dev")
                    times[name].append(time.perf_counter() - start)
                probe = on.store.entries.build("lesson", _lesson(rng, vocab), session_id=sid_on,
                                               agent_id="dev")
                start = time.perf_counter()
                with on.proj.read() as views:
                    assert find_copy(views, probe, 0.8) is None
                times["check"].append(time.perf_counter() - start)
    medians = {k: statistics.median(v) * 1000 for k, v in times.items()}
    out = {"lessons_in_scope": scope, "writes": args.writes,
           "write_dedup_on_ms": round(medians["on"], 3), "write_dedup_off_ms": round(medians["off"], 3),
           "dedup_overhead_ms": round(medians["on"] - medians["off"], 3),
           "dedup_check_cold_ms": round(medians["check"], 3)}
    if args.json:
        print(json.dumps(out))
    else:
        for key, value in out.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
