"""Key and value layout of the LMDB log.

Named databases:

- ``headers``: seq -> chain(32) | commitment(32) | header bytes; never rewritten
- ``payloads``: empty since format 2 (payloads live in segments, see
  :mod:`eventstore.lmdb.segments`); a format 1 log is migrated on open
- ``streams``: stream -> last version (8 bytes)
- ``stream_index``: stream | 0x00 | version(8) -> seq(8)
- ``event_ids``: event id -> seq(8)
- ``recent``: seq(8) -> nonce(16) | the stored payload (salt | payload) under
  the key of the seq's segment: payloads of small appends, committed with
  their headers in one transaction and sealed into the segments later (see
  :mod:`eventstore.lmdb.recent`)
- ``erased``: seq(8) -> empty, every seq whose payload a committed tombstone
  erased (written with the tombstone; format 3), so that a read tells an erased
  payload from a lost one without walking the log
- ``meta``: ``head`` (seq, chain hash, time in one record), ``format``,
  ``span`` (seqs per payload segment), ``erasing`` (seqs whose tombstone is
  committed but whose payload deletion may not be) and ``dirty`` (segments
  holding freed payload bytes until the next purge) and ``sealed`` (every
  payload of a seq at or below it is in the segments; the ones after it are in
  ``recent``; absent when ``recent`` is empty)

Integers in keys are 8-byte big-endian so that byte order is numeric order.
"""

from __future__ import annotations

import struct
from typing import Any

from ..chain import GENESIS, HASH_SIZE
from ..errors import CorruptionError

__all__ = [
    "DB_NAMES",
    "DIRTY",
    "ERASED",
    "ERASING",
    "EVENT_IDS",
    "FORMAT_VERSION",
    "HEADERS",
    "META",
    "PAYLOADS",
    "RECENT",
    "SEALED",
    "SPAN",
    "STREAMS",
    "STREAM_INDEX",
    "HeadState",
    "read_head_state",
    "read_int_set",
    "seq_key",
    "seq_of_key",
    "stored_format",
    "stream_key",
    "write_head_state",
    "write_int_set",
]

HEADERS = b"headers"
PAYLOADS = b"payloads"
STREAMS = b"streams"
STREAM_INDEX = b"stream_index"
EVENT_IDS = b"event_ids"
META = b"meta"
ERASED = b"erased"
RECENT = b"recent"
DB_NAMES = (HEADERS, PAYLOADS, STREAMS, STREAM_INDEX, EVENT_IDS, META, ERASED, RECENT)
# 1: payloads in the main environment; 2: payloads in segments; 3: the
# ``erased`` database and the segments' append marks.
FORMAT_VERSION = 3
ERASING = b"erasing"
DIRTY = b"dirty"
SPAN = b"span"
SEALED = b"sealed"

_U64 = struct.Struct(">Q")
seq_key = _U64.pack


def seq_of_key(key: bytes | memoryview) -> int:
    """Decode an 8-byte big-endian key (or value); :class:`CorruptionError` when
    the stored bytes are not 8 long."""
    try:
        return int(_U64.unpack(key)[0])
    except struct.error:
        raise CorruptionError(f"a stored integer is {len(key)} bytes long, not 8") from None


def stream_key(stream: str, version: int) -> bytes:
    """Key of the stream index."""
    return stream.encode() + b"\x00" + _U64.pack(version)


class HeadState:
    """The head as kept in ``meta``: seq, chain hash and time."""

    __slots__ = ("hash", "seq", "time")

    def __init__(self, seq: int, hash_: bytes, time: int) -> None:
        self.seq = seq
        self.hash = hash_
        self.time = time


def read_head_state(txn: Any, meta: Any) -> HeadState:
    """Read the head from ``meta`` (an empty log has seq 0 and the genesis hash)."""
    raw = txn.get(b"head", db=meta)
    if raw is None:
        return HeadState(0, GENESIS, 0)
    raw = bytes(raw)
    return HeadState(seq_of_key(raw[:8]), raw[8 : 8 + HASH_SIZE], seq_of_key(raw[8 + HASH_SIZE :]))


def write_head_state(txn: Any, meta: Any, state: HeadState) -> None:
    """Store the head in ``meta``: seq(8) | chain hash(32) | time(8), one record."""
    txn.put(b"head", seq_key(state.seq) + state.hash + seq_key(state.time), db=meta)
    if state.seq <= 1 or txn.get(b"format", db=meta) is None:
        txn.put(b"format", seq_key(FORMAT_VERSION), db=meta)


def stored_format(txn: Any, meta: Any) -> int:
    """The format the log was written in (an empty log is current)."""
    raw = txn.get(b"format", db=meta)
    if raw is not None:
        return seq_of_key(raw)
    return FORMAT_VERSION if read_head_state(txn, meta).seq == 0 else 1


def read_int_set(txn: Any, meta: Any, key: bytes) -> set[int]:
    """A set of integers kept in ``meta`` under ``key`` (empty when absent)."""
    raw = txn.get(key, db=meta)
    if raw is None:
        return set()
    raw = bytes(raw)
    return {seq_of_key(raw[i : i + 8]) for i in range(0, len(raw), 8)}


def write_int_set(txn: Any, meta: Any, key: bytes, values: set[int]) -> None:
    """Store ``values`` under ``key`` (sorted 8-byte integers); delete it when empty."""
    if values:
        txn.put(key, b"".join(seq_key(v) for v in sorted(values)), db=meta)
    else:
        txn.delete(key, db=meta)
