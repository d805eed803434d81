#!/usr/bin/env python3
"""Benchmark the NATS JetStream log next to raw nats-py and LMDB.

Usage::

    python tools/bench/bench_nats.py [--json] [--events N] [--single N] [--replay-events N]
                               [--profile] [--dir PATH]

It starts its own servers with tools/ops/nats_cluster.py (R1: one node; R3: three
nodes on loopback, a stream of 3 replicas), one after the other, and stops
them at exit (also on an error). On each it measures, in the same run:

(a) single appends: ``EventLog.append`` of one ``EntryRecorded`` per call on a
    ``nats://`` log, each acknowledged (durable) before the next; 8 streams
    take turns;
(b) batched appends: one ``append`` of ``BATCH`` events per call;
(c) the raw anchor of (a) and (b): nats-py on the same server, in another
    stream of the same configuration, publishing the very messages memlog
    wrote (read back off the clock, same bytes): per append, the payload
    messages (``Nats-Msg-Id``, pipelined as the backend does) and then one
    atomic batch of the commit chunks and stream markers
    (``Nats-Batch-Id``/``-Sequence``/``-Commit``, ``Nats-Msg-Id`` on the chunks,
    ``Nats-Expected-Last-Subject-Sequence`` on the first chunk and on each
    marker). Memlog and raw alternate block by block, so both see the same
    load. The floor of one append is also shown (``raw_..._publish1_eps``):
    one JetStream publish per event with both headers, which is what a log
    with one message per event could reach;
(d) replay: a corpus (tools/bench/corpus.py) written to a fresh stream, then
    ``MemoryLog.open(fresh dir, log=url, embedder=None).replay()`` (what
    ``memlog --log URL replay`` does: views and search, rebuilt from the shared
    log); anchors: a raw nats-py read of every message of that stream (batched
    direct gets, no decode) and the same replay from a local LMDB log.

The LMDB anchors of (a) and (b) are the embedded log (sync on) doing the same
appends. Progress goes to stderr; the table (or with ``--json`` one JSON
object) goes to stdout. ``--profile`` prints a cProfile table of the single
append path on R3 to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import shutil
import signal
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import nats
from nats.aio.msg import Msg

from commands import MemoryLog
from eventstore import EventLog, LogSettings

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))  # nats_cluster
from bench_log import Plan, make_plan
from benchkit import log, profile_text, run_main, verdict
from corpus import write_corpus
from log_content import make_event
from nats_cluster import Cluster

BATCH = 1000  # events per batched append
SINGLE_BLOCK = 50  # single appends per alternation block
PIPELINE = 256  # payload publishes in flight (as the backend)
TARGET_RATIO = 0.7
ACTOR = "bench"

Group = tuple[list[tuple[str, bytes, dict[str, str]]], list[tuple[str, bytes, dict[str, str]]]]


def location(cluster: Cluster, stream: str) -> str:
    """The memlog ``nats://`` location of ``stream`` on ``cluster``."""
    return f"nats://{','.join(u.removeprefix('nats://') for u in cluster.urls)}/{stream}"


# -- raw nats-py -------------------------------------------------------------------

class Raw:
    """nats-py on its own event loop (this thread): the raw anchor."""

    def __init__(self, cluster: Cluster) -> None:
        self.loop = asyncio.new_event_loop()
        self.nc = self.run(nats.connect(servers=cluster.urls))
        self.last_h = 0
        self.last_v: dict[str, int] = {}

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        self.run(self.nc.close())
        self.loop.close()

    async def request(self, subject: str, data: bytes, headers: dict[str, str]) -> dict[str, Any]:
        msg = await self.nc.request(subject, data, timeout=30, headers=headers)
        reply: dict[str, Any] = json.loads(msg.data)
        if "error" in reply:
            raise RuntimeError(f"raw publish on {subject}: {reply['error']}")
        return reply

    async def direct(self, stream: str, start: int, count: int, subject: str) -> list[Msg]:
        """Messages from stream seq ``start`` on (batched direct gets, like the backend)."""
        out: list[Msg] = []
        while len(out) < count:
            inbox = self.nc.new_inbox()
            sub = await self.nc.subscribe(inbox)
            body = {"seq": start, "batch": min(1024, count - len(out)), "next_by_subj": subject,
                    "max_bytes": 8 << 20}
            await self.nc.publish(f"$JS.API.DIRECT.GET.{stream}", json.dumps(body).encode(), reply=inbox)
            got = 0
            while True:
                msg = await sub.next_msg(timeout=30)
                if (msg.headers or {}).get("Status"):
                    break
                out.append(msg)
                got += 1
            await sub.unsubscribe()
            if not got:
                break
            start = int(out[-1].headers["Nats-Sequence"]) + 1  # type: ignore[index]
        return out

    async def append(self, group: Group) -> None:
        """One append as the backend makes it: payloads, then one atomic batch."""
        payloads, commits = group
        for at in range(0, len(payloads), PIPELINE):
            await asyncio.gather(*(self.request(s, d, h) for s, d, h in payloads[at:at + PIPELINE]))
        batch, first_h = uuid.uuid4().hex, True
        sent = []
        for n, (subject, data, headers) in enumerate(commits, 1):
            hdr = {**headers, "Nats-Batch-Id": batch, "Nats-Batch-Sequence": str(n)}
            if subject.endswith(".h") and first_h:
                hdr["Nats-Expected-Last-Subject-Sequence"], first_h = str(self.last_h), False
            elif not subject.endswith(".h"):
                hdr["Nats-Expected-Last-Subject-Sequence"] = str(self.last_v.get(subject, 0))
            sent.append((subject, data, hdr))
        for subject, data, hdr in sent[:-1]:
            await self.nc.publish(subject, data, headers=hdr)
        subject, data, hdr = sent[-1]
        ack = await self.request(subject, data, {**hdr, "Nats-Batch-Commit": "1"})
        base = int(ack["seq"]) - len(sent) + 1  # a batch's messages are consecutive
        for k, (subject, _, _) in enumerate(sent):
            if subject.endswith(".h"):
                self.last_h = base + k
            else:
                self.last_v[subject] = base + k

    async def publish1(self, subject: str, payloads: Sequence[tuple[str, bytes, dict[str, str]]]) -> None:
        """The floor: one publish per event, each with both headers."""
        for _, data, headers in payloads:
            hdr = {"Nats-Msg-Id": "f" + headers.get("Nats-Msg-Id", uuid.uuid4().hex)[1:],
                   "Nats-Expected-Last-Subject-Sequence": str(self.last_v.get(subject, 0))}
            ack = await self.request(subject, data, hdr)
            self.last_v[subject] = int(ack["seq"])


def groups_of(msgs: list[Msg], ours: str, raw: str) -> list[Group]:
    """Memlog's messages in stream order, split into appends (payloads, then
    chunks and markers), moved to the raw stream's subjects."""
    out: list[Group] = []
    for msg in msgs:
        headers = msg.headers or {}
        subject = raw + headers["Nats-Subject"].removeprefix(ours)
        keep = {"Nats-Msg-Id": headers["Nats-Msg-Id"]} if "Nats-Msg-Id" in headers else {}
        item = (subject, bytes(msg.data), keep)
        if subject.endswith(".p"):
            if not out or out[-1][1]:
                out.append(([], []))
            out[-1][0].append(item)
        else:
            if not out:
                out.append(([], []))
            out[-1][1].append(item)
    return out


def stream_last(raw: Raw, stream: str) -> int:
    """The last stream seq of ``stream``."""
    msg = raw.run(raw.nc.request(f"$JS.API.STREAM.INFO.{stream}", b"", timeout=30))
    return int(json.loads(msg.data)["state"]["last_seq"])


# -- appends ---------------------------------------------------------------------

def paired_appends(cluster: Cluster, plan: Plan, block: int, label: str,
                   floor: bool) -> dict[str, float]:
    """Write ``plan`` through memlog and, block by block, the same messages raw."""
    ours, raw_name = f"m{label}", f"r{label}"
    EventLog.open(location(cluster, raw_name)).close()  # the raw stream: the same configuration
    raw = Raw(cluster)
    t_ours = t_raw = t_floor = 0.0
    try:
        with EventLog.open(location(cluster, ours)) as elog:
            for at in range(0, len(plan), block):
                part = plan[at:at + block]
                before = stream_last(raw, ours)
                started = time.perf_counter()
                for stream, events in part:
                    elog.append(stream, events, actor=ACTOR)
                t_ours += time.perf_counter() - started
                count = stream_last(raw, ours) - before
                groups = groups_of(raw.run(raw.direct(ours, before + 1, count, f"{ours}.>")), ours, raw_name)
                started = time.perf_counter()
                for group in groups:
                    raw.run(raw.append(group))
                t_raw += time.perf_counter() - started
                if floor:
                    started = time.perf_counter()
                    raw.run(raw.publish1(f"{raw_name}.v.one", [p for g in groups for p in g[0]]))
                    t_floor += time.perf_counter() - started
    finally:
        raw.close()
    count = sum(len(e) for _, e in plan)
    out = {"ours": count / t_ours, "raw": count / t_raw}
    if floor:
        out["floor"] = count / t_floor
    return out


def lmdb_appends(base: Path, plan: Plan) -> float:
    """The same appends on the embedded LMDB log (sync on): events per second."""
    path = base / f"lmdb-{len(plan)}"
    with EventLog.open(path, LogSettings(sync=True)) as elog:
        started = time.perf_counter()
        for stream, events in plan:
            elog.append(stream, events, actor=ACTOR)
        seconds = time.perf_counter() - started
    shutil.rmtree(path)
    return sum(len(e) for _, e in plan) / seconds


def profile_single(cluster: Cluster, plan: Plan) -> str:
    """cProfile of single appends on a fresh stream."""
    with EventLog.open(location(cluster, "prof")) as elog:
        profiler = cProfile.Profile()
        profiler.enable()
        for stream, events in plan:
            elog.append(stream, events, actor=ACTOR)
        profiler.disable()
    return profile_text(profiler, f"single append, {len(plan)} appends")


# -- replay ----------------------------------------------------------------------

def timed_replay(data_dir: Path, log_location: str | None) -> tuple[float, int]:
    """``MemoryLog.open(data_dir, log=...).replay()`` (text search, no vectors)."""
    with MemoryLog.open(data_dir, log=log_location, embedder=None) as mem:
        started = time.perf_counter()
        done = mem.replay()
        return time.perf_counter() - started, done


def replay(cluster: Cluster, base: Path, entries: int, label: str) -> dict[str, float]:
    """Replay a corpus from the cluster into fresh local projections, next to a
    raw read of the stream and (R3 only) the same replay from a local LMDB log."""
    stream = f"c{label}"
    with EventLog.open(location(cluster, stream)) as elog:
        head = write_corpus(elog, entries, batch=2000)
    seconds, done = timed_replay(base / f"replay-{label}", location(cluster, stream))
    if done != head:
        raise RuntimeError(f"replay applied {done} events, the log has {head}")
    raw = Raw(cluster)
    try:
        total = stream_last(raw, stream)
        started = time.perf_counter()
        got = len(raw.run(raw.direct(stream, 1, total, f"{stream}.>")))
        raw_s = time.perf_counter() - started
    finally:
        raw.close()
    if got != total:
        raise RuntimeError(f"raw read {got} of {total} messages")
    return {"ours": head / seconds, "raw": head / raw_s, "events": head}


def lmdb_replay(base: Path, entries: int) -> float:
    """The same corpus replayed from a local LMDB log."""
    data_dir = base / "replay-lmdb"
    with EventLog.open(data_dir / "log", LogSettings(sync=False)) as elog:
        head = write_corpus(elog, entries, batch=2000)
    seconds, done = timed_replay(data_dir, None)
    if done != head:
        raise RuntimeError(f"LMDB replay applied {done} events, the log has {head}")
    return head / seconds


# -- the run -----------------------------------------------------------------------

def on_cluster(nodes: int, base: Path, args: argparse.Namespace, plans: dict[str, Plan],
               out: dict[str, Any]) -> None:
    """Every NATS measurement on a fresh cluster of ``nodes`` servers (stopped at the end)."""
    label = f"r{nodes}"
    log(f"{label}: starting {nodes} node(s)")
    with Cluster(base / f"nats-{label}", nodes=nodes) as cluster:
        log(f"{label}: single appends ({len(plans['single'])})")
        single = paired_appends(cluster, plans["single"], SINGLE_BLOCK, f"{label}s", floor=True)
        log(f"{label}: batched appends ({len(plans['batch'])} x {BATCH})")
        batch = paired_appends(cluster, plans["batch"], 1, f"{label}b", floor=False)
        log(f"{label}: replay of {args.replay_events} entries")
        rep = replay(cluster, base, args.replay_events, label)
        if args.profile and nodes == 3:
            log(profile_text_safe(cluster, plans["single"][:300]))
    out.update({
        f"nats_{label}_single_eps": round(single["ours"]),
        f"raw_nats_{label}_single_eps": round(single["raw"]),
        f"nats_{label}_single_ratio": round(single["ours"] / single["raw"], 3),
        f"raw_nats_{label}_publish1_eps": round(single["floor"]),
        f"nats_{label}_batch_eps": round(batch["ours"]),
        f"raw_nats_{label}_batch_eps": round(batch["raw"]),
        f"nats_{label}_batch_ratio": round(batch["ours"] / batch["raw"], 3),
        f"nats_{label}_replay_eps": round(rep["ours"]),
        f"raw_nats_{label}_read_eps": round(rep["raw"]),
    })


def profile_text_safe(cluster: Cluster, plan: Plan) -> str:
    """The profile table, or why there is none."""
    try:
        return profile_single(cluster, plan)
    except Exception as exc:  # the figures matter more than the profile
        return f"profile failed: {type(exc).__name__}"


def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    """Every measurement; one result dict."""
    events = [make_event(i) for i in range(args.events + args.single)]
    plans = {"single": make_plan(events[:args.single], 1), "batch": make_plan(events[args.single:], BATCH)}
    out: dict[str, Any] = {"events": args.events, "single": args.single, "batch_size": BATCH,
                           "replay_events": args.replay_events}
    log("lmdb: single and batched appends, replay")
    out["lmdb_single_eps"] = round(lmdb_appends(base, plans["single"]))
    out["lmdb_batch_eps"] = round(lmdb_appends(base, plans["batch"]))
    out["lmdb_replay_eps"] = round(lmdb_replay(base, args.replay_events))
    for nodes in (1, 3):
        on_cluster(nodes, base, args, plans, out)
    out["nats_replay_eps"] = out["nats_r3_replay_eps"]
    out["target_ratio"] = TARGET_RATIO
    out["single_verdict"] = verdict(out["nats_r3_single_ratio"] >= TARGET_RATIO)
    out["batch_verdict"] = verdict(out["nats_r3_batch_ratio"] >= TARGET_RATIO)
    return out


FIGURES = (  # (label, key, raw anchor key, ratio key)
    ("{r} single append", "nats_{r}_single_eps", "raw_nats_{r}_single_eps", "nats_{r}_single_ratio"),
    ("{r} batched append", "nats_{r}_batch_eps", "raw_nats_{r}_batch_eps", "nats_{r}_batch_ratio"),
)


def table(r: dict[str, Any]) -> str:
    """Human-readable lines: figure (raw anchor ...) ratio, events per second."""
    lines = [f"NATS log benchmark, events/s: {r['single']} single appends, {r['events']} events in "
             f"appends of {r['batch_size']}, replay of a {r['replay_events']}-entry corpus"]
    for rep in ("r1", "r3"):
        for label, key, anchor, ratio in FIGURES:
            fig, raw = r[key.format(r=rep)], r[anchor.format(r=rep)]
            lines.append(f"{label.format(r=rep):<22} {fig:>8,}  (raw anchor {raw:,}: same messages, "
                         f"nats-py)  ratio {r[ratio.format(r=rep)]:.2f}")
        lines.append(f"{rep} one publish/event   {r[f'raw_nats_{rep}_publish1_eps']:>8,}  (raw floor: one "
                     "JetStream publish per event, both headers)")
        fig, raw = r[f"nats_{rep}_replay_eps"], r[f"raw_nats_{rep}_read_eps"]
        lines.append(f"{rep} replay (views+search) {fig:>7,}  (raw anchor {raw:,}: read every message, "
                     f"no decode)  ratio {fig / raw:.2f}; vs LMDB replay {fig / r['lmdb_replay_eps']:.2f}")
    for what, key in (("single append", "single"), ("batched append", "batch"), ("replay", "replay")):
        lmdb = r[f"lmdb_{key}_eps"]
        lines.append(f"lmdb {what:<17} {lmdb:>8,}  (nats r3 / lmdb {r[f'nats_r3_{key}_eps'] / lmdb:.2f})")
    lines.append(f"target: r3 ratio >= {r['target_ratio']}: single {r['single_verdict']}, "
                 f"batched {r['batch_verdict']}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000, help="events of the batched appends")
    parser.add_argument("--single", type=int, default=500, help="single appends")
    parser.add_argument("--replay-events", type=int, default=10_000, help="corpus entries replayed")
    parser.add_argument("--profile", action="store_true", help="cProfile the R3 single append (stderr)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--dir", type=Path, default=None, metavar="PATH", help="scratch parent directory")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None, emit: Callable[[str], None] = print) -> int:
    args = parse_args(argv)
    # The servers run in their own sessions: a SIGTERM must unwind through the
    # ``with Cluster`` blocks so that they are stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.events < BATCH or args.single < 1:
        raise SystemExit("--events must be at least the batch size and --single at least 1")
    return run_main(args, run, table, "bench-nats-", emit)


if __name__ == "__main__":
    sys.exit(main())
