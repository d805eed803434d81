"""The raw-LMDB anchor of tools/bench/bench_log.py: the same records our log stores,
written and scanned with py-lmdb directly."""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lmdb
import msgspec

from eventstore import EntryRecorded, EventLog
from eventstore.envelope import Header
from eventstore.events import Event

__all__ = [
    "DB_NAMES",
    "PREFIX_BYTES",
    "SALT_BYTES",
    "RawBytes",
    "RawTxn",
    "encode",
    "open_raw",
    "raw_bytes",
    "raw_scan",
    "raw_scan_decode",
    "raw_write",
]

Plan = list[tuple[str, list[EntryRecorded]]]

# Mirrors the layout of the LMDB log (names and sizes only; see the module doc).
DB_NAMES = (b"headers", b"payloads", b"streams", b"stream_index", b"event_ids", b"meta")
PREFIX_BYTES = 64  # chain hash + commitment before each header
SALT_BYTES = 32  # salt before each payload
U64 = struct.Struct(">Q").pack

Record = tuple[bytes, bytes, bytes, bytes, bytes]  # key, header, payload, event id, index key


@dataclass(frozen=True, slots=True)
class RawTxn:
    """Precomputed bytes of one raw write transaction (one append)."""

    stream: bytes
    version: bytes
    head_seq: bytes
    head_hash: bytes
    head_time: bytes
    records: list[Record]


@dataclass(slots=True)
class RawBytes:
    """All raw transactions of a plan and the sizes of their values."""

    txns: list[RawTxn] = field(default_factory=list)
    header_bytes: int = 0
    payload_bytes: int = 0


encode = msgspec.msgpack.Encoder().encode


def raw_bytes(elog: EventLog, first: int, last: int, plan: Plan) -> RawBytes:
    """The bytes memlog stored for ``plan`` at seqs ``first..last``, read back.

    Headers and payloads are re-encoded from the log's records, which gives the
    stored bytes (same encoder, same values), so event ids, header sizes and
    key order are exactly our log's. Chain hash, commitment and salt are random
    bytes of the same sizes.
    """
    out = RawBytes()
    records = elog.read(first, last)
    for stream, events in plan:
        batch: list[Record] = []
        for _ in events:
            rec = next(records)
            header, payload = encode(rec.header), encode(rec.event)
            if rec.stream != stream:
                raise RuntimeError(f"seq {rec.seq} is in {rec.stream}, expected {stream}")
            out.header_bytes += len(header)
            out.payload_bytes += len(payload)
            key = U64(rec.seq)
            batch.append((
                key, os.urandom(PREFIX_BYTES) + header, os.urandom(SALT_BYTES) + payload,
                rec.id.encode(), stream.encode() + b"\x00" + U64(rec.version),
            ))
        out.txns.append(RawTxn(
            stream.encode(), U64(rec.version), U64(rec.seq), os.urandom(32),
            U64(rec.recorded_at), batch,
        ))
    return out


def open_raw(path: Path, map_size: int) -> tuple[Any, list[Any]]:
    """A raw environment with the log's flags (sync on) and database names."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = lmdb.open(str(path), map_size=map_size, max_dbs=len(DB_NAMES) + 2, mode=0o600,
                    sync=True, max_readers=256)
    with env.begin(write=True) as txn:
        dbs = [env.open_db(name, txn=txn) for name in DB_NAMES]
    return env, dbs


def raw_write(env: Any, dbs: list[Any], txns: Sequence[RawTxn]) -> None:
    """One write transaction per RawTxn: the same gets and puts as our log."""
    headers, payloads, streams, index, ids, meta = dbs
    for t in txns:
        with env.begin(write=True) as txn:
            txn.get(b"head", db=meta)
            txn.get(t.stream, db=streams)
            hcur = txn.cursor(db=headers)
            pcur = txn.cursor(db=payloads)
            for key, hval, pval, eid, ikey in t.records:
                if not hcur.put(key, hval, append=True):
                    raise RuntimeError("raw append out of order")
                pcur.put(key, pval, append=True)
                if not txn.put(eid, key, db=ids, overwrite=False):
                    raise RuntimeError("raw duplicate event id")
                txn.put(ikey, key, db=index)
            txn.put(t.stream, t.version, db=streams)
            txn.put(b"head", t.head_seq + t.head_hash + t.head_time, db=meta)


def raw_scan(env: Any, dbs: list[Any]) -> int:
    """Cursor scan of the headers and payloads databases, no decode."""
    count = 0
    with env.begin(buffers=True) as txn:
        heads = txn.cursor(db=dbs[0]).iternext()
        pays = txn.cursor(db=dbs[1]).iternext()
        for _h, _p in zip(heads, pays, strict=True):
            count += 1
    return count


def raw_scan_decode(env: Any, dbs: list[Any]) -> int:
    """Cursor scan of the headers and payloads databases, each value decoded
    with msgspec into the log's own types (the raw anchor of a read)."""
    count = 0
    decode_header = msgspec.msgpack.Decoder(Header).decode
    decode_event = msgspec.msgpack.Decoder(Event).decode
    with env.begin(buffers=True) as txn:
        heads = txn.cursor(db=dbs[0]).iternext()
        pays = txn.cursor(db=dbs[1]).iternext()
        for (_, hval), (_, pval) in zip(heads, pays, strict=True):
            decode_header(hval[PREFIX_BYTES:])
            if decode_event(pval[SALT_BYTES:]) is not None:
                count += 1
    return count
