"""Soak: real kill -9 at random times, then recovery, then checks.

Each trial copies a prepared store and runs one workload in real processes:

- ``writers``: 4 processes append messages; each writes the id of every
  append that returned (acknowledged) to a side file, fsynced;
- ``delete``: a process deletes an entry that holds a unique text (the purge
  included), while another process appends;
- ``search``: 2 processes search in a loop (catching the index up, recording
  accesses);
- ``replay``: a process rebuilds every projection.

After a random delay (0.05-1.5 s) every process gets SIGKILL. Then one open
of the store (``memlog stats``) recovers it, and the trial counts:

- acknowledged events lost: acknowledged ids that ``show`` cannot find;
- leaks: the deleted text found anywhere under the data directory by a byte
  scan, although the entry reads as deleted;
- broken commands: ``stats``, ``search``, ``show``, ``audit verify``,
  ``purge``, ``audit deletions``, ``replay`` that exit non-zero or by signal;
- false verified: a verified ``purge.completed`` while a leak was found.

The goal is 0 for each. Usage::

    python tools/ops/soak_crash.py [--trials N] [--seed S] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))  # the shared kit
from benchkit import log, run_main

from commands import MemoryLog
from eventstore import MemlogError

WORKLOADS = ("writers", "delete", "search", "replay")
SECRET = "soak-secret-text-that-a-purge-must-remove-7c41"
CHECKS = (("stats",), ("search", "message"), ("audit", "verify"), ("purge",), ("audit", "deletions"),
          ("replay",))

_WRITER = """
import os, sys
from commands import MemoryLog
from eventstore import MemlogError
acked = open(sys.argv[2], "a")
with MemoryLog.open(sys.argv[1]) as mem:
    sid = mem.start_session(user_id="soak")
    for i in range(100000):
        entry = mem.add_message(sid, role="user", content=f"soak message {i} from {os.getpid()}")
        acked.write(entry + "\\n"); acked.flush(); os.fsync(acked.fileno())
"""
_DELETER = """
import sys
from commands import MemoryLog
from eventstore import MemlogError
with MemoryLog.open(sys.argv[1]) as mem:
    mem.delete(ids=[sys.argv[2]], reason="soak", requested_by="soak")
"""
_SEARCHER = """
import sys
from commands import MemoryLog
from eventstore import MemlogError
with MemoryLog.open(sys.argv[1]) as mem:
    for i in range(100000):
        mem.search(["message", "database", "pool", "soak"][i % 4], limit=5)
"""
_REPLAYER = """
import sys
from commands import MemoryLog
from eventstore import MemlogError
with MemoryLog.open(sys.argv[1]) as mem:
    mem.replay()
"""


def _template(base: Path) -> tuple[Path, str]:
    """A store of a few hundred entries, one of them holding the text to delete."""
    root = base / "template"
    with MemoryLog.open(root) as mem:
        sid = mem.start_session(user_id="soak")
        with mem.batch():
            for i in range(300):
                mem.add_message(sid, role="user", content=f"message {i} about the database pool {i % 7}")
        target = mem.add_message(sid, role="user", content=f"keep {SECRET} private")
        mem.search("database")
    return root, target


def _spawn(code: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _start(workload: str, store: Path, target: str, acked: Path) -> list[subprocess.Popen[bytes]]:
    if workload == "writers":
        return [_spawn(_WRITER, str(store), str(acked)) for _ in range(4)]
    if workload == "delete":
        return [_spawn(_DELETER, str(store), target), _spawn(_WRITER, str(store), str(acked))]
    if workload == "search":
        return [_spawn(_SEARCHER, str(store)) for _ in range(2)]
    return [_spawn(_REPLAYER, str(store))]


def _memlog(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "commands", "--dir", str(store), "--json", *args],
                          capture_output=True, text=True, timeout=300, input="")


def _scan(root: Path, needle: bytes) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*")
            if p.is_file() and not p.is_symlink() and needle in p.read_bytes()]


def _lost(store: Path, ids: list[str]) -> int:
    """Acknowledged entries that the recovered store does not show."""
    missing = 0
    with MemoryLog.open(store, create=False) as mem:
        for entry_id in ids:
            try:
                mem.show(entry_id)
            except MemlogError:
                missing += 1
    return missing


def _trial(base: Path, template: Path, target: str, n: int, rng: random.Random) -> dict[str, Any]:
    store, acked = base / f"t{n}", base / f"acked-{n}.txt"
    shutil.copytree(template, store, symlinks=True)
    workload = rng.choice(WORKLOADS)
    procs = _start(workload, store, target, acked)
    time.sleep(rng.uniform(0.05, 1.5))
    for proc in procs:
        proc.send_signal(signal.SIGKILL)
    for proc in procs:
        proc.wait()
    recovered = _memlog(store, "stats")
    broken = [] if recovered.returncode == 0 else ["open"]
    ids = acked.read_text().split() if acked.exists() else []
    lost = _lost(store, ids)
    shown = _memlog(store, "show", target)
    deleted = shown.returncode == 0 and json.loads(shown.stdout).get("state") == "deleted"
    leaks = _scan(store, SECRET.encode()) if deleted else []
    for argv in CHECKS:
        done = _memlog(store, *argv)
        if done.returncode != 0:
            broken.append(" ".join(argv))
    with MemoryLog.open(store, create=False) as mem:
        verified = [r for r in mem.deletions() if r.purge_verified]
    shutil.rmtree(store, ignore_errors=True)
    return {"workload": workload, "acked": len(ids), "lost": lost, "leaks": len(leaks),
            "broken": broken, "false_verified": int(bool(leaks) and bool(verified)), "deleted": deleted}


def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    """Every trial, then the totals."""
    rng = random.Random(args.seed)
    template, target = _template(base)
    trials = []
    started = time.perf_counter()
    for n in range(args.trials):
        trials.append(_trial(base, template, target, n, rng))
        last = trials[-1]
        log(f"trial {n + 1}/{args.trials}: {last['workload']:<8} lost {last['lost']} leaks {last['leaks']} "
            f"broken {last['broken'] or '-'}")
    return {
        "trials": len(trials), "seed": args.seed, "seconds": round(time.perf_counter() - started, 1),
        "by_workload": {w: sum(t["workload"] == w for t in trials) for w in WORKLOADS},
        "acknowledged_checked": sum(t["acked"] for t in trials),
        "acknowledged_lost": sum(t["lost"] for t in trials),
        "deletions_committed": sum(t["deleted"] for t in trials),
        "leaks_after_recovery": sum(t["leaks"] for t in trials),
        "broken_commands_after_recovery": sum(len(t["broken"]) for t in trials),
        "broken": sorted({b for t in trials for b in t["broken"]}),
        "false_verified_records": sum(t["false_verified"] for t in trials),
    }


def _table(result: dict[str, Any]) -> str:
    keys = ("trials", "by_workload", "acknowledged_checked", "acknowledged_lost", "deletions_committed",
            "leaks_after_recovery", "broken_commands_after_recovery", "broken", "false_verified_records",
            "seconds")
    return "\n".join(f"{k:32} {result[k]}" for k in keys)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=int(os.environ.get("SOAK_SEED", "1")))
    parser.add_argument("--dir", type=Path, default=None, help="Where to put the scratch stores.")
    parser.add_argument("--json", action="store_true")
    return run_main(parser.parse_args(), run, _table, "memlog-soak-")


if __name__ == "__main__":
    raise SystemExit(main())
