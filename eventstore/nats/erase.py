"""Erasure on the NATS log.

A tombstone (an append whose header names ``erases``) commits first; then the
payload messages of the erased seqs are deleted with erase on
(``STREAM.MSG.DELETE`` with ``no_erase: false``: each replica overwrites the
message's bytes in its message block when it applies the delete). Headers,
commitments and the chain stay, so ``verify`` still passes.

:func:`purge` redoes every deletion a crash may have left undone, erases the
payloads no chunk names (orphans of appends that never committed), then waits
until every replica of the stream is current, which means it has applied the
deletes, or raises :class:`PurgeUnverifiedError` naming the replicas that are
not. What it cannot reach: each replica's Raft log keeps the delete's
proposal and the original append's entry until the Raft log is compacted.
nats-server (2.12 to 2.15) snapshots a stream and compacts its Raft log on a
timer of 2 minutes plus a random 0 to 60 s per stream and server start (or
sooner, once 8 MiB or 65536 entries wait; a failed snapshot is retried after
15 s; a graceful shutdown snapshots too). None of it is configurable, so the
bound is :data:`RAFT_BOUND_SECONDS`: 180 s plus one retry, rounded up (measured
here: 176 s in the worst case seen). On a server outside a cluster a stream
has no Raft log, and the report states a bound of 0 s.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_right
from collections.abc import Iterable

from ..backend import PurgeReport
from ..errors import PurgeUnverifiedError
from .client import NatsApiError
from .store import Store

__all__ = ["RAFT_BOUND_SECONDS", "delete_payloads", "erase_seqs", "purge"]

RAFT_BOUND_SECONDS = 200.0
ORPHAN_AGE = 300.0
_NOT_FOUND = (10037, 10043, 10057)  # no message found / sequence not found: already deleted
_PIPELINE = 128


def delete_payloads(store: Store, stream_seqs: Iterable[int]) -> int:
    """Delete these payload messages with erase on; how many existed."""
    seqs = sorted(set(stream_seqs))

    async def one(seq: int) -> int:
        try:
            await store.client.api(f"$JS.API.STREAM.MSG.DELETE.{store.name}",
                                   {"seq": seq, "no_erase": False})
        except NatsApiError as exc:
            if exc.err_code in _NOT_FOUND:
                return 0
            raise
        return 1

    async def all_of() -> int:
        done = 0
        for start in range(0, len(seqs), _PIPELINE):
            done += sum(await asyncio.gather(*(one(s) for s in seqs[start:start + _PIPELINE])))
        return done

    return store.client.run(all_of(), timeout=store.client.timeout * (1 + len(seqs) // 500))


def erase_seqs(store: Store, seqs: Iterable[int]) -> int:
    """Delete the payload messages of erased event ``seqs`` (their tombstone is committed)."""
    wanted = sorted(set(seqs) - store.erased_done)
    if not wanted:
        return 0
    records = store.chunk_records(wanted)
    done = delete_payloads(store, (r.payload_seq for r in records))
    store.erased_done.update(wanted)  # this client saw them gone: the next purge skips them
    return done


def purge(store: Store, timeout: float) -> PurgeReport:
    """Finish every erasure, erase orphans, and wait for every replica."""
    started = time.monotonic()
    with store.lock:
        index = store.catch_up()
        erased = erase_seqs(store, index.erased)
        candidates, swept = _orphans(store)
        orphans = delete_payloads(store, candidates)
        store.swept_to = swept
    lagging = _wait_for_replicas(store, started + timeout)
    if lagging:
        raise PurgeUnverifiedError(
            f"stream {store.name}: replicas {', '.join(lagging)} have not applied the erasure yet; "
            "run the purge again")
    replicas = _replica_names(store)
    return PurgeReport(
        files_rewritten=(*(f"nats:{store.name}@{name}" for name in replicas),
                         f"raft-log-bound:{int(raft_bound(store))}s"),
        bytes_before=0, bytes_after=0, bytes_wiped=erased + orphans,
        generation=0, seconds=time.monotonic() - started)


def raft_bound(store: Store) -> float:
    """Seconds until no Raft log holds an erased payload: 0 outside a cluster."""
    return RAFT_BOUND_SECONDS if store.client.server_info.get("cluster") else 0.0


def _orphans(store: Store) -> tuple[list[int], int]:
    """Payload messages that no chunk names and that are older than
    :data:`ORPHAN_AGE` (an append publishes its payloads before its chunks and
    gives up well within that time), past the last sweep of this client; and
    the stream seq the sweep reached. Only chunks published after the oldest
    candidate can name it, so only those are read."""
    cutoff = time.time() - ORPHAN_AGE
    old: list[int] = []
    for seq, stamp in store.payload_stamps(store.swept_to + 1):
        if stamp >= cutoff:
            break
        old.append(seq)
    if not old:
        return [], store.swept_to
    index = store.index
    positions = list(range(bisect_right(index.chunk_seqs, old[0]), len(index.chunk_seqs)))
    named: set[int] = set()
    for start in range(0, len(positions), 256):
        for chunk in store.chunks(positions[start:start + 256]).values():
            named.update(r.payload_seq for r in chunk.records)
    return [seq for seq in old if seq not in named], old[-1]


def _replica_status(store: Store) -> list[tuple[str, bool]]:
    info = store.client.run(store.client.api(f"$JS.API.STREAM.INFO.{store.name}"))
    cluster = info.get("cluster") or {}
    out = [(str(cluster.get("leader") or "leader"), True)]
    for replica in cluster.get("replicas") or []:
        out.append((str(replica.get("name")), bool(replica.get("current")) and not replica.get("lag")))
    return out


def _replica_names(store: Store) -> list[str]:
    return [name for name, _ in _replica_status(store)]


def _wait_for_replicas(store: Store, deadline: float) -> list[str]:
    """Poll the stream's cluster state until every replica is current; the
    names of those that are not when ``deadline`` passes."""
    while True:
        lagging = [name for name, current in _replica_status(store) if not current]
        if not lagging or time.monotonic() > deadline:
            return lagging
        time.sleep(0.1)
