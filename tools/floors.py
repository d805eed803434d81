"""Floors for issue 19's ratios: the least a replay or a batched append
could cost, measured in the same run as their raw anchors.

- :func:`views_write_floor`: raw LMDB writing every record a views replay
  left in its environment (each database's items in key order, one
  ``putmulti`` with ``append`` per chunk, one transaction, sync off and one
  ``env.sync`` at the end, as the replay writes). A replay reads and decodes
  the log (the anchor) and writes these records, so ``anchor / (anchor +
  floor)`` is the ratio it would reach if it spent nothing in between.
- :func:`append_floor`: the per-event work an append must do beyond raw
  LMDB's puts, in one tight loop and nothing else: the payload's encoding and
  its validating decode (msgspec constructors skip constraint checks), the
  header's encoding, the commitment's and the chain's SHA-256. Raw LMDB writes
  bytes prepared off its clock, so ``raw / (raw + floor)`` bounds the batched
  append's ratio.
- :func:`rebuild_floor`: the least wall time of a full rebuild with search. It
  must read and decode the log (the replay's anchor), write the views' records
  (:func:`views_write_floor`) and index every document (raw Tantivy's CPU, its
  threads included, with the documents made off its clock); on ``cpus`` cores
  that CPU takes at least its sum over the cores, and never less than raw
  Tantivy's own wall time. Making the documents and the vectors is left out,
  so the bound it sets on ``rebuild_ratio`` (raw Tantivy's time / the floor) is
  generous.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator, Sequence
from hashlib import sha256
from pathlib import Path
from typing import Any

import lmdb
import msgspec

from commands.app.scan import usable_cpus
from eventstore import Event

__all__ = ["append_floor", "rebuild_floor", "views_write_floor"]

CHUNK = 100_000  # records read (off the clock) and written per putmulti


def _databases(env: Any) -> list[bytes]:
    with env.begin() as txn:
        return [bytes(key) for key, _ in txn.cursor()]


def _chunks(env: Any, db: Any) -> Iterator[list[tuple[bytes, bytes]]]:
    with env.begin(db=db) as txn:
        chunk: list[tuple[bytes, bytes]] = []
        for key, value in txn.cursor(db=db):
            chunk.append((bytes(key), bytes(value)))
            if len(chunk) == CHUNK:
                yield chunk
                chunk = []
        if chunk:
            yield chunk


def views_write_floor(views: Path, scratch: Path) -> tuple[float, int]:
    """Seconds raw LMDB takes to write the records of the views environment at
    ``views`` into a fresh one at ``scratch`` (removed after), and how many."""
    src = lmdb.open(str(views), max_dbs=128, readonly=True, lock=False)
    dst = lmdb.open(str(scratch), max_dbs=128, map_size=max(1 << 30, 2 * _size(views)), sync=False)
    seconds, records = 0.0, 0
    try:
        names = _databases(src)
        dbs = {name: dst.open_db(name) for name in names}
        txn = dst.begin(write=True)
        try:
            for name in names:
                for chunk in _chunks(src, src.open_db(name, create=False)):
                    started = time.perf_counter()
                    _, added = txn.cursor(db=dbs[name]).putmulti(chunk, append=True)
                    seconds += time.perf_counter() - started
                    if added != len(chunk):
                        raise RuntimeError(f"{name!r}: {added} of {len(chunk)} records written")
                    records += added
            started = time.perf_counter()
            txn.commit()
            dst.sync(True)
            seconds += time.perf_counter() - started
        except BaseException:
            txn.abort()
            raise
    finally:
        src.close()
        dst.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return seconds, records


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file())


def append_floor(events: Sequence[Event], stream: str = "bench") -> float:
    """Seconds of the per-event work an append does beyond raw LMDB's puts (see
    the module doc), over ``events``."""
    encode = msgspec.msgpack.Encoder().encode
    decode = msgspec.msgpack.Decoder(Event).decode
    salts = os.urandom(32 * len(events))
    link = bytes(32)
    now = time.time_ns() // 1000
    started = time.perf_counter()
    for n, event in enumerate(events):
        data = encode(event)
        decode(data)
        header = encode((n + 1, stream, n + 1, f"{n:032x}", "entry.recorded", now, "bench", None,
                         None, 1, ()))
        commitment = sha256(salts[32 * n : 32 * n + 32] + data).digest()
        link = sha256(link + header + commitment).digest()
    return time.perf_counter() - started


def rebuild_floor(raw_s: float, raw_cpu_s: float, scan_s: float, views_write_s: float,
                  cores: int | None = None) -> float:
    """Seconds a full rebuild takes at least (see the module doc): raw Tantivy's
    CPU, the log's scan + decode and the views' write over the cores, and never
    less than raw Tantivy's wall time ``raw_s``."""
    return max(raw_s, (raw_cpu_s + scan_s + views_write_s) / (cores or usable_cpus()))
