#!/usr/bin/env python3
"""Benchmark the memlog event log next to raw LMDB writing the same bytes.

Usage::

    python tools/bench/bench_log.py [--events N] [--json] [--purge-gib G] [--dir PATH]

In one run it measures, each against py-lmdb used directly in the same run:

(a) batched durable appends, 10k events per transaction: memlog makes one
    ``log.append`` call of 10k ``EntryRecorded`` events per transaction (streams
    take turns); raw LMDB runs one write transaction per 10k records with the
    puts our log makes for each event (header, payload, event-id index and stream
    index, into databases of the same names) plus its per-transaction
    bookkeeping (stream version, head), with the same flags (sync on);
(b) single durable appends, one event per call and per commit; raw LMDB makes
    the same put-set in one transaction per event;
(c) a full read: memlog streams ``log.read()`` and touches every decoded event;
    raw LMDB scans the headers and payloads databases with cursors, no decode;
(d) concurrent single appends: the appends of (b) by 4 threads at once
    (``--threads``; thread t takes every t-th), which share commits (group
    commit); the anchor is raw LMDB's single appends of (b) in the same run:
    with one commit per append raw LMDB cannot go faster with more threads (its
    writer lock serialises the commits), so (d)'s ratio says how much the
    sharing buys.

With (a) it times the floor of an append over the same events (tools/bench/floors.py);
``append_batch_floor_ratio`` is the best ``append_batch_ratio`` the run allows.

The two sides are interleaved: memlog appends a block (one 10k transaction for
(a), 100 single appends for (b)), the block is read back through the public API
and turned into raw bytes off the clock (the same event ids, header and payload
encodings and index keys; hash, commitment and salt as random bytes of the
same sizes), then raw LMDB writes it; so the raw side times LMDB only and both
sides see the same disk. Each measurement runs ``--repeats`` times in fresh
directories (after ``os.sync()``) and the best run of each side is reported.

``--purge-gib G`` also builds a log of about G GiB, erases one payload with an
``EntriesDeleted`` tombstone, and times ``log.purge()`` (best of the repeats,
one fresh erasure before each); the anchor is a bare compacting copy of the
same file by py-lmdb.

Progress goes to stderr; the table (or with ``--json`` one JSON object) goes to
stdout. The memlog side uses only the public API of :mod:`eventstore`.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lmdb

from eventstore import (
    AppendRequest,
    EntriesDeleted,
    EntryRecorded,
    EventLog,
    LogSettings,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import align, dir_bytes, log, run_main, verdict
from floors import append_floor
from log_content import STREAMS, make_event
from raw_lmdb import (
    DB_NAMES,
    PREFIX_BYTES,
    SALT_BYTES,
    encode,
    open_raw,
    raw_bytes,
    raw_scan,
    raw_scan_decode,
    raw_write,
)

BATCH = 10_000
SINGLE_MAX = 3_000
SINGLE_BLOCK = 100  # single appends interleave with raw commits in blocks of this many
THREADS = 4  # (d): threads appending at once (--threads)
ACTOR = "bench"
BATCH_TARGET_EPS = 400_000.0
BATCH_TARGET_RATIO = 0.4
SINGLE_TARGET_RATIO = 0.8
READ_TARGET_EPS = 1_000_000.0
PURGE_BUDGET_S = 2.0

Plan = list[tuple[str, list[EntryRecorded]]]


def make_plan(events: Sequence[EntryRecorded], per_append: int) -> Plan:
    """Split events into appends of ``per_append``; the streams take turns."""
    plan: Plan = []
    for n, start in enumerate(range(0, len(events), per_append)):
        plan.append((f"session:s{n % STREAMS}", list(events[start : start + per_append])))
    return plan


# -- the memlog side ---------------------------------------------------------------

def paired_run(ours_dir: Path, raw_dir: Path, plan: Plan, block: int) -> tuple[float, ...]:
    """Write ``plan`` with memlog and with raw LMDB, interleaved ``block`` appends at a time.

    memlog appends a block (one ``append`` call per append of the plan); its
    records are read back and turned into raw bytes off the clock; then raw
    LMDB writes the same block. Interleaving gives both sides the same disk
    weather. Returns (memlog s, raw s, header bytes, payload bytes).
    """
    ours = raw = 0.0
    header_bytes = payload_bytes = 0
    with EventLog.open(ours_dir, LogSettings(sync=True)) as elog:
        env, dbs = open_raw(raw_dir, _map_size(plan))
        try:
            for start in range(0, len(plan), block):
                part = plan[start : start + block]
                started = time.perf_counter()
                results = [elog.append(stream, events, actor=ACTOR) for stream, events in part]
                ours += time.perf_counter() - started
                data = raw_bytes(elog, results[0].first_seq, results[-1].last_seq, part)
                header_bytes += data.header_bytes
                payload_bytes += data.payload_bytes
                started = time.perf_counter()
                raw_write(env, dbs, data.txns)
                raw += time.perf_counter() - started
        finally:
            env.close()
    return ours, raw, header_bytes, payload_bytes


def concurrent_run(path: Path, plan: Plan, threads: int) -> float:
    """memlog: ``threads`` threads append ``plan`` at once (thread t takes every
    t-th append), in a fresh directory; seconds from the first start to the last return."""
    errors: list[BaseException] = []
    os.sync()
    with EventLog.open(path, LogSettings(sync=True)) as elog:
        def work(share: Plan) -> None:
            try:
                for stream, events in share:
                    elog.append(stream, events, actor=ACTOR)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        workers = [threading.Thread(target=work, args=(plan[t::threads],)) for t in range(threads)]
        started = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        seconds = time.perf_counter() - started
        if errors or elog.head().seq != sum(len(events) for _, events in plan):
            raise errors[0] if errors else RuntimeError("the concurrent appends did not all land")
    shutil.rmtree(path)
    log(f"  concurrent run: memlog {len(plan) / seconds:,.0f} appends/s ({threads} threads)")
    return seconds


def memlog_read(path: Path) -> tuple[float, int]:
    """Stream the whole log, touching every decoded event; (seconds, events)."""
    with EventLog.open(path) as elog:
        started = time.perf_counter()
        count = 0
        for rec in elog.read():
            if rec.event is not None:
                count += 1
        return time.perf_counter() - started, count


# -- measurements ------------------------------------------------------------------

@dataclass(slots=True)
class Pair:
    """Best-of timings of memlog and its raw anchor over the same event count."""

    events: int
    ours: list[float] = field(default_factory=list)
    raw: list[float] = field(default_factory=list)
    sizes: tuple[float, float] = (0.0, 0.0)  # mean header and payload value bytes
    decode: list[float] = field(default_factory=list)  # reads: raw scan + decode

    def eps(self) -> tuple[float, float]:
        """Events per second of the best runs: (memlog, raw)."""
        return self.events / min(self.ours), self.events / min(self.raw)

    def run_ratios(self) -> list[float]:
        """memlog/raw speed of each run (the sides of a run are interleaved)."""
        return [round(r / o, 3) for o, r in zip(self.ours, self.raw, strict=True)]


def _map_size(plan: Plan) -> int:
    payload = sum(len(encode(event)) for _, events in plan for event in events)
    return max(256 << 20, 4 * payload + 1024 * sum(len(events) for _, events in plan))


def measure_appends(base: Path, plan: Plan, label: str, block: int, repeats: int,
                    keep: bool) -> Pair:
    """Time ``plan`` with memlog and raw LMDB (see :func:`paired_run`), ``repeats`` times.

    Every run writes fresh directories after an ``os.sync()``. With ``keep`` the
    last run's directories stay (``base/label-{log,raw}``) for the read measurement.
    """
    pair = Pair(sum(len(events) for _, events in plan))
    for rep in range(repeats):
        ours_dir, raw_dir = base / f"{label}-log-{rep}", base / f"{label}-raw-{rep}"
        os.sync()
        ours_s, raw_s, header_bytes, payload_bytes = paired_run(ours_dir, raw_dir, plan, block)
        pair.ours.append(ours_s)
        pair.raw.append(raw_s)
        pair.sizes = (header_bytes / pair.events + PREFIX_BYTES,
                      payload_bytes / pair.events + SALT_BYTES)
        ours, raw = pair.events / ours_s, pair.events / raw_s
        log(f"  {label} run {rep + 1}/{repeats}: memlog {ours:,.0f} ev/s, raw {raw:,.0f} ev/s")
        if keep and rep == repeats - 1:
            ours_dir.rename(base / f"{label}-log")
            raw_dir.rename(base / f"{label}-raw")
        else:
            shutil.rmtree(ours_dir)
            shutil.rmtree(raw_dir)
    return pair


def measure_read(base: Path, label: str, events: int, repeats: int) -> Pair:
    """Full read with decode (memlog) against a raw two-cursor scan."""
    pair = Pair(events)
    for rep in range(repeats):
        seconds, count = memlog_read(base / f"{label}-log")
        if count != events:
            raise RuntimeError(f"memlog read {count} events, expected {events}")
        pair.ours.append(seconds)
        env, dbs = open_raw(base / f"{label}-raw", 0)
        try:
            started = time.perf_counter()
            if raw_scan(env, dbs) != events:
                raise RuntimeError("raw scan count differs")
            pair.raw.append(time.perf_counter() - started)
            started = time.perf_counter()
            if raw_scan_decode(env, dbs) != events:
                raise RuntimeError("raw scan + decode count differs")
            pair.decode.append(time.perf_counter() - started)
        finally:
            env.close()
        ours, raw = pair.events / pair.ours[-1], pair.events / pair.raw[-1]
        log(f"  read run {rep + 1}/{repeats}: memlog {ours:,.0f} ev/s, raw scan {raw:,.0f} ev/s, "
            f"raw scan + decode {pair.events / pair.decode[-1]:,.0f} ev/s")
    return pair


# -- purge -------------------------------------------------------------------------

@dataclass(slots=True)
class PurgeResult:
    """Timings of erase + purge on a large log, and the raw compact-copy anchor."""

    events: int
    log_bytes: int
    bytes_after: int
    erase: list[float] = field(default_factory=list)
    purge: list[float] = field(default_factory=list)
    copy: list[float] = field(default_factory=list)
    verify_seconds: float = 0.0
    verify_ok: bool = False


def build_large_log(elog: EventLog, path: Path, gib: float) -> list[tuple[int, str]]:
    """Append 2-4 KiB entries in 10k batches until the files reach ``gib`` GiB.

    Returns ``(seq, entry_id)`` of a few entries per batch, candidates to erase.
    """
    target = int(gib * (1 << 30))
    victims: list[tuple[int, str]] = []
    n = 0
    while dir_bytes(path) < target:
        events = [make_event(n + i, size=2048) for i in range(BATCH)]
        requests = [AppendRequest(stream, evs, ACTOR) for stream, evs in make_plan(events, BATCH)]
        result = elog.append_many(requests)[0]
        victims += [(result.first_seq + j, events[j].entry_id) for j in range(0, BATCH, 997)]
        n += BATCH
        if n % (10 * BATCH) == 0:
            log(f"  purge: built {n:,} events, {dir_bytes(path) / (1 << 30):.2f} GiB")
    return victims


def erase_and_purge(elog: EventLog, victim: tuple[int, str], k: int) -> tuple[float, float, Any]:
    """Erase one payload with a tombstone, then purge; (erase s, purge s, report)."""
    seq, entry_id = victim
    tomb = EntriesDeleted(request_id=f"bench-del-{k}", entry_ids=(entry_id,), erased_seqs=(seq,),
                          counts_by_kind={"message": 1})
    started = time.perf_counter()
    elog.erase([seq], tomb, stream="system", actor=ACTOR)
    erased = time.perf_counter()
    report = elog.purge()
    return erased - started, time.perf_counter() - erased, report


def raw_compact_copy(path: Path, scratch: Path) -> float:
    """Anchor: py-lmdb compacting copy of the same file, fsynced; seconds."""
    env = lmdb.open(str(path), readonly=True, max_dbs=len(DB_NAMES) + 2, lock=False)
    try:
        scratch.mkdir(mode=0o700)
        started = time.perf_counter()
        env.copy(str(scratch), compact=True)
        fd = os.open(scratch / "data.mdb", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return time.perf_counter() - started
    finally:
        env.close()
        shutil.rmtree(scratch, ignore_errors=True)


def measure_purge(base: Path, gib: float, repeats: int) -> PurgeResult:
    """Build a ~``gib`` GiB log, then time erase + purge ``repeats`` times."""
    path = base / "purge-log"
    log(f"purge: building a log of about {gib:g} GiB")
    with EventLog.open(path) as elog:
        victims = build_large_log(elog, path, gib)
        res = PurgeResult(elog.head().seq, 0, 0)
        for k in range(repeats):
            victim = victims[(len(victims) // 2 + k) % len(victims)]
            erase_s, purge_s, report = erase_and_purge(elog, victim, k)
            res.erase.append(erase_s)
            res.purge.append(purge_s)
            res.log_bytes, res.bytes_after = report.bytes_before, report.bytes_after
            log(f"  purge run {k + 1}/{repeats}: erase {erase_s:.3f} s, purge {purge_s:.3f} s, "
                f"{report.bytes_before / (1 << 30):.2f} GiB")
        started = time.perf_counter()
        res.verify_ok = elog.verify().ok
        res.verify_seconds = time.perf_counter() - started
    for k in range(repeats):
        res.copy.append(raw_compact_copy(path, base / f"raw-copy-{k}"))
    log(f"  raw compacting copy: best {min(res.copy):.3f} s")
    shutil.rmtree(path)
    return res


# -- report ------------------------------------------------------------------------

def collect(batch: Pair, single: Pair, read: Pair, concurrent: list[float], floor: float,
            purge: PurgeResult | None, args: argparse.Namespace) -> dict[str, Any]:
    """All figures as one flat dict (the --json object); ``floor``: seconds of
    :func:`floors.append_floor` over the batched events."""
    b_ours, b_raw = batch.eps()
    s_ours, s_raw = single.eps()
    c_ours = single.events / min(concurrent)
    r_ours, r_raw = read.eps()
    out: dict[str, Any] = {
        "events": batch.events, "batch_size": BATCH, "single_events": single.events,
        "repeats": args.repeats, "statistic": f"best of {args.repeats}",
        "append_batch_eps": round(b_ours), "raw_batch_eps": round(b_raw),
        "append_batch_ratio": round(b_ours / b_raw, 3),
        "append_floor_us": round(floor / batch.events * 1e6, 2),
        "append_batch_floor_ratio": round(1 / (1 + floor * b_raw / batch.events), 3),
        "append_single_eps": round(s_ours), "raw_single_eps": round(s_raw),
        "append_single_ratio": round(s_ours / s_raw, 3),
        "append_concurrent_eps": round(c_ours), "append_concurrent_threads": args.threads,
        "append_concurrent_ratio": round(c_ours / s_raw, 3),
        "read_decode_eps": round(r_ours), "raw_scan_eps": round(r_raw),
        "read_ratio": round(r_ours / r_raw, 3),
        "raw_scan_decode_eps": round(read.events / min(read.decode)),
        "read_decode_ratio": round(r_ours * min(read.decode) / read.events, 3),
        "header_value_mean_bytes": round(batch.sizes[0], 1),
        "payload_value_mean_bytes": round(batch.sizes[1], 1),
        "append_batch_ratio_runs": batch.run_ratios(),
        "append_single_ratio_runs": single.run_ratios(),
        "runs_seconds": {
            "append_batch": batch.ours, "raw_batch": batch.raw,
            "append_single": single.ours, "raw_single": single.raw, "append_concurrent": concurrent,
            "read_decode": read.ours, "raw_scan": read.raw, "raw_scan_decode": read.decode,
        },
        "lmdb": f"py-lmdb {lmdb.__version__} (LMDB {'.'.join(map(str, lmdb.version()))})",
        "python": platform.python_version(), "cpus": os.cpu_count(),
    }
    out["pass"] = {
        "append_batch": b_ours >= BATCH_TARGET_EPS and b_ours / b_raw >= BATCH_TARGET_RATIO,
        "append_single": s_ours / s_raw >= SINGLE_TARGET_RATIO,
        "read_decode": r_ours >= READ_TARGET_EPS,
    }
    if purge is not None:
        out.update(_purge_fields(purge))
        out["pass"]["purge"] = out["purge_total_seconds"] < PURGE_BUDGET_S
    return out


def _purge_fields(p: PurgeResult) -> dict[str, Any]:
    return {
        "purge_seconds": round(min(p.purge), 4), "purge_erase_seconds": round(min(p.erase), 4),
        "purge_total_seconds": round(min(e + s for e, s in zip(p.erase, p.purge, strict=True)), 4),
        "purge_log_bytes": p.log_bytes, "purge_bytes_after": p.bytes_after,
        "purge_events": p.events, "purge_verify_seconds": round(p.verify_seconds, 3),
        "purge_verify_ok": p.verify_ok, "raw_compact_copy_seconds": round(min(p.copy), 4),
        "purge_runs_seconds": p.purge,
    }


def table(r: dict[str, Any]) -> str:
    """The human-readable report."""
    rows = [
        ("batched append (10k/txn, sync)", f"{r['append_batch_eps']:>11,} ev/s",
         f"{r['raw_batch_eps']:>11,} ev/s", f"{r['append_batch_ratio']:.3f}x",
         ">= 400k ev/s and >= 0.4x raw", verdict(r["pass"]["append_batch"])),
        ("single append (1/commit, sync)", f"{r['append_single_eps']:>11,} ev/s",
         f"{r['raw_single_eps']:>11,} ev/s", f"{r['append_single_ratio']:.3f}x",
         ">= 0.8x raw", verdict(r["pass"]["append_single"])),
        (f"single append, {r['append_concurrent_threads']} threads",
         f"{r['append_concurrent_eps']:>11,} ev/s", f"{r['raw_single_eps']:>11,} ev/s",
         f"{r['append_concurrent_ratio']:.3f}x", "(shared commits)", ""),
        ("full read + decode", f"{r['read_decode_eps']:>11,} ev/s",
         f"{r['raw_scan_eps']:>11,} ev/s", f"{r['read_ratio']:.3f}x",
         ">= 1M ev/s", verdict(r["pass"]["read_decode"])),
        ("  vs raw scan + decode", f"{r['read_decode_eps']:>11,} ev/s",
         f"{r['raw_scan_decode_eps']:>11,} ev/s", f"{r['read_decode_ratio']:.3f}x", "", ""),
    ]
    if "purge_seconds" in r:
        total = r["purge_total_seconds"]
        rows.append((f"erase 1 + purge ({r['purge_log_bytes'] / (1 << 30):.2f} GiB)",
                     f"{total:>13.3f} s", f"{r['raw_compact_copy_seconds']:>13.3f} s",
                     f"{total / r['raw_compact_copy_seconds']:.3f}x",
                     "< 2 s (section 8, log part)", verdict(r["pass"]["purge"])))
    head = ("measure", "memlog", "raw LMDB anchor", "ratio", "target", "result")
    lines = [
        f"memlog event log vs raw LMDB, same bytes, same batches: {r['events']:,} events "
        f"(single appends: {r['single_events']:,}); {r['statistic']} runs per figure",
        f"{r['lmdb']}, Python {r['python']}, {r['cpus']} CPUs; mean stored value: "
        f"header {r['header_value_mean_bytes']} B, payload {r['payload_value_mean_bytes']} B",
        "",
        *align(head, rows),
    ]
    lines += _notes(r)
    return "\n".join(lines)


def _notes(r: dict[str, Any]) -> list[str]:
    notes = [
        "",
        "ratio = memlog / raw. Raw anchors: (a)/(b) py-lmdb puts of the same header, payload,",
        "event-id and stream-index records plus stream/head bookkeeping, sync on, same",
        "transaction sizes; (c) two-cursor scan of headers + payloads, no decode, and the",
        "same scan with msgspec decode of each header and payload (raw_scan_decode_eps);",
        "(d) raw LMDB's single appends of (b): one commit per append, which threads cannot share.",
        f"(a)'s floor (tools/bench/floors.py): {r['append_floor_us']} us an event beyond raw LMDB, "
        f"so at best {r['append_batch_floor_ratio']}x.",
        f"ratio of each paired run: batched {r['append_batch_ratio_runs']}, "
        f"single {r['append_single_ratio_runs']}",
    ]
    if "purge_seconds" in r:
        notes += [
            f"purge: {r['purge_events']:,} events; best erase {r['purge_erase_seconds']:.3f} s, "
            f"best purge {r['purge_seconds']:.3f} s, best erase+purge "
            f"{r['purge_total_seconds']:.3f} s;",
            f"file {r['purge_log_bytes']:,} -> {r['purge_bytes_after']:,} B; verify afterwards "
            f"{r['purge_verify_seconds']:.2f} s, ok={r['purge_verify_ok']}; "
            "anchor = bare compacting copy of the same file + fsync.",
        ]
    return notes


# -- main --------------------------------------------------------------------------

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=200_000, help="events for (a) and (c)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--purge-gib", type=float, default=None, metavar="G",
                        help="also time erase + purge on a log of about G GiB")
    parser.add_argument("--dir", type=Path, default=None, metavar="PATH",
                        help="parent of the scratch directory (default: the system temp dir)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure; best is kept")
    parser.add_argument("--threads", type=int, default=THREADS, help="threads appending at once in (d)")
    args = parser.parse_args(argv)
    if args.events < 1 or args.repeats < 1 or args.threads < 1:
        parser.error("--events, --repeats and --threads must be >= 1")
    if args.purge_gib is not None and args.purge_gib <= 0:
        parser.error("--purge-gib must be > 0")
    return args


def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    """Every measurement, in one run."""
    log(f"generating {args.events:,} events")
    events = [make_event(i) for i in range(args.events)]
    log(f"(a) batched appends, {BATCH:,} events per transaction")
    batch = measure_appends(base, make_plan(events, BATCH), "batch", 1, args.repeats, keep=True)
    floor = min(append_floor(events) for _ in range(args.repeats))
    n_single = min(args.events, SINGLE_MAX)
    log(f"(b) single appends, {n_single:,} commits")
    plan = make_plan(events[:n_single], 1)
    single = measure_appends(base, plan, "single", SINGLE_BLOCK, args.repeats, keep=False)
    log(f"(d) single appends by {args.threads} threads at once, {n_single:,} appends")
    concurrent = [concurrent_run(base / f"concurrent-{k}", plan, args.threads) for k in range(args.repeats)]
    log("(c) full read with decode")
    read = measure_read(base, "batch", args.events, args.repeats)
    for name in ("batch-log", "batch-raw"):
        shutil.rmtree(base / name)
    purge = measure_purge(base, args.purge_gib, args.repeats) if args.purge_gib else None
    return collect(batch, single, read, concurrent, floor, purge, args)


def main(argv: Sequence[str] | None = None, emit: Callable[[str], None] = print) -> int:
    """Run the benchmark; the scratch directory is removed afterwards."""
    return run_main(parse_args(argv), run, table, "memlog-bench-", emit)


if __name__ == "__main__":
    sys.exit(main())
