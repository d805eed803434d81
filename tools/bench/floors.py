"""Floors for the benchmarks' ratios: the least a replay or a batched append
could cost, measured in the same run as their raw anchors.

- :func:`views_write_floor`: raw LMDB writing every record a views replay
  left in its environment (each database's items in key order, one
  ``putmulti`` with ``append`` per chunk, one transaction, sync off and one
  ``env.sync`` at the end, as the replay writes). A replay reads and decodes
  the log (the anchor) and writes these records, so ``anchor / (anchor +
  floor)`` is the ratio it would reach if it spent nothing in between.
- :func:`views_build_floor`: the least CPython a replay spends between the
  log's decoded records and LMDB: each entry's five records (``by_seq``,
  ``entries``, ``by_hash`` with its lookup, ``by_time``, ``by_session``) and a
  lesson's four (formation ``L`` and ``E``, upkeep ``A`` and ``a``, made by
  the views' own ``lesson_items``) built in one tight pass per chunk of
  records (a tuple encoded in place of the stored version, a constant ranking
  value, a lesson's scope from its own fields;
  no statistics, counters, checks or other events), each database's chunk
  sorted and written with one ``putmulti`` (appended when it can be), sync
  off, one ``env.sync`` at the end. The records are read and decoded off its
  clock. ``anchor / (anchor + floor)`` bounds ``replay_ratio`` more tightly
  than the write alone: the floor leaves out work the replay must do, so the
  bound is generous.
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
  generous. Its tighter form counts the views' build floor
  (:func:`views_build_floor`) in place of their write, and the making of
  every document as memlog's search projection makes it (``entry_document``,
  the JSON it gives ``add_json``), timed call by call while the raw corpus is
  built, and the default embedder's CPU over every entry's text
  (:func:`embed_floor`, as the vector worker embeds them); it still leaves out
  the views' other work, the vectors' store and the swap.
- :func:`embed_floor`: the default embedder over every entry's searchable
  text, 256 at a time, as a replay's vector worker embeds them.
"""

from __future__ import annotations

import itertools
import os
import shutil
import struct
import time
import zlib
from collections.abc import Iterator, Sequence
from hashlib import sha256
from pathlib import Path
from typing import Any

import lmdb
import msgspec
from benchkit import collector_off

from commands.app.forgetting.scan import usable_cpus
from eventstore import EntryRecorded, Event, EventLog
from projections import default_embedder
from projections.views.formation import lesson_items as formation_items
from projections.views.keys import u64 as _U64
from projections.views.scopes import scope_key
from projections.views.upkeep import lesson_items as upkeep_items

__all__ = ["append_floor", "embed_floor", "rebuild_floor", "views_build_floor", "views_write_floor"]

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


_RANK = struct.Struct(">Bdq").pack
_DBS = (b"by_seq", b"entries", b"by_hash", b"by_time", b"by_session", b"formation", b"upkeep")
BUILD_CHUNK = 16_384  # records decoded off the clock, then built and written (a run's size)


def views_build_floor(elog: EventLog, head: int, scratch: Path, map_size: int) -> float:
    """Seconds the least CPython takes to build and write the views' entry and
    lesson records of the log's first ``head`` records (see the module doc),
    into a fresh environment at ``scratch`` (removed after)."""
    env = lmdb.open(str(scratch), max_dbs=16, map_size=map_size, sync=False)
    seconds = 0.0
    try:
        dbs = [env.open_db(name) for name in _DBS]
        records = elog.read(1, head)
        with env.begin(write=True) as txn:
            while chunk := list(itertools.islice(records, BUILD_CHUNK)):
                started = time.perf_counter()
                for db, items in zip(dbs, _records(chunk, txn.get), strict=True):
                    _put(txn.cursor(db=db), items)
                seconds += time.perf_counter() - started
            started = time.perf_counter()
        env.sync(True)
        seconds += time.perf_counter() - started
    finally:
        env.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return seconds


def _put(cursor: Any, items: list[tuple[bytes, bytes]]) -> None:
    """``items`` sorted, in one ``putmulti``, appended when every key is past the last."""
    if items:
        items.sort()
        cursor.putmulti(items, append=not cursor.last() or bytes(cursor.key()) < items[0][0])


def _records(chunk: Sequence[Any], get: Any) -> list[list[tuple[bytes, bytes]]]:
    """Each database's records of a chunk's entries, in one pass (see the module doc)."""
    encode, u64, rank, crc = msgspec.msgpack.Encoder().encode, _U64, _RANK, zlib.crc32
    by_seq: list[tuple[bytes, bytes]] = []
    entries, hashes, when, session, formation, upkeep = [], [], [], [], [], []
    for rec in chunk:
        e = rec.event
        if type(e) is not EntryRecorded:
            continue
        seq, at, eid = rec.header.seq, e.occurred_at, e.entry_id.encode()
        key, hkey, sid = u64(seq), crc(eid).to_bytes(4, "big") + eid, (e.session_id or "").encode()
        get(hkey)
        time_key = u64(at) + b"\0" + eid
        by_seq.append((key, rank(1, 0.5, at) + eid))
        entries.append((eid + b"\0" + key, encode((
            e.entry_id, e.kind, "live", seq, rec.header.recorded_at, seq, seq, None,
            len(e.content.encode()), e.importance, None, e.session_id, e.user_id, at))))
        hashes.append((hkey, b""))
        when.append((time_key, sid))
        session.append((sid + b"\0" + time_key, e.kind.encode()))
        if e.kind == "lesson":  # the views' own record makers (one lesson in about eight entries)
            scope = scope_key(e.user_id, e.agent_id)
            formation += formation_items(scope, eid, e.content, seq)
            upkeep += upkeep_items(scope, eid, at)
    return [by_seq, entries, hashes, when, session, formation, upkeep]


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


def embed_floor(texts: Sequence[str], step: int = 256) -> float:
    """Seconds the default embedder takes over ``texts`` (every entry's
    searchable text), ``step`` at a time as a replay's vector worker embeds
    them, each block's rows cast to the stored float16; 0 without numpy."""
    embedder = default_embedder()
    if embedder is None:
        return 0.0
    with collector_off():  # the caller holds a corpus: its collections are not the embedder's work
        started = time.perf_counter()
        for start in range(0, len(texts), step):
            embedder.embed(texts[start : start + step]).astype("<f2")
        return time.perf_counter() - started


def rebuild_floor(raw_s: float, raw_cpu_s: float, scan_s: float, views_s: float,
                  make_s: float = 0.0, cores: int | None = None) -> float:
    """Seconds a full rebuild takes at least (see the module doc): raw Tantivy's
    CPU, the log's scan + decode, the views' part ``views_s`` (their write, or
    their build floor) and the making of the documents and their vectors
    ``make_s`` over the cores, and never less than raw Tantivy's wall time ``raw_s``."""
    return max(raw_s, (raw_cpu_s + scan_s + views_s + make_s) / (cores or usable_cpus()))
