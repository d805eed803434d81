"""Read paths of the LMDB log: range scans, stream scans and single gets.

Scans decode inside a read transaction in chunks; callers stream the chunks,
so a million records never sit in memory at once and no lock or transaction
is held while the caller works on a chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ..chain import HASH_SIZE, SALT_SIZE, commit
from ..codec import decode_header, decode_payload
from ..envelope import Header, RecordedEvent
from ..errors import CorruptionError, EventNotFoundError
from ..events import SCHEMA_VERSIONS, Event
from .layout import (
    ERASING,
    HEADERS,
    META,
    STREAM_INDEX,
    read_int_set,
    seq_key,
    seq_of_key,
    stream_key,
)
from .segments import SegmentReads

_header_decoder = msgspec.msgpack.Decoder(Header).decode
_payload_decoder = msgspec.msgpack.Decoder(Event).decode
_CURRENT = SCHEMA_VERSIONS

__all__ = ["get_record", "header_at", "payloads_at", "scan_range", "scan_stream"]

_PREFIX = 2 * HASH_SIZE


def scan_range(
    txn: Any, dbs: dict[bytes, Any], segs: SegmentReads, start: int, stop: int, limit: int
) -> list[RecordedEvent]:
    """Records with ``start <= seq <= stop``, at most ``limit`` of them.

    This is the replay hot path, so it walks the header cursor and the segments'
    payload cursors in lockstep with the decoders inlined; a header whose
    payload key is missing, or marked as being erased, was erased.
    """
    out: list[RecordedEvent] = []
    headers = txn.cursor(db=dbs[HEADERS])
    if not headers.set_range(seq_key(start)):
        return out
    erasing = read_int_set(txn, dbs[META], ERASING)
    p_items = segs.items(start, min(stop, start + limit))
    pkey, pval = next(p_items, _END)
    decode_h, decode_p, current, append = _header_decoder, _payload_decoder, _CURRENT, out.append
    hkey: Any = None
    try:
        for hkey, hval in headers.iternext():
            header = decode_h(hval[_PREFIX:])
            if header.seq > stop:
                break
            if pkey != hkey and pkey is not None and bytes(pkey) < bytes(hkey):
                while pkey is not None and bytes(pkey) < bytes(hkey):  # orphan payloads
                    pkey, pval = next(p_items, _END)
            if pkey == hkey and erasing and header.seq in erasing:
                pkey, pval = next(p_items, _END)
                append(RecordedEvent(header, None))
            elif pkey == hkey:
                if header.schema_version == current.get(header.type):
                    append(RecordedEvent(header, decode_p(pval[SALT_SIZE:])))
                else:
                    append(RecordedEvent(header, decode_payload(pval[SALT_SIZE:], header)))
                pkey, pval = next(p_items, _END)
            else:
                append(RecordedEvent(header, None))
            if len(out) >= limit:
                break
    except msgspec.DecodeError as exc:
        seq = seq_of_key(hkey) if hkey is not None else start
        raise CorruptionError(f"record of seq {seq} does not decode: {exc}", seq=seq) from None
    return out


_END: tuple[Any, Any] = (None, None)


def scan_stream(
    txn: Any, dbs: dict[bytes, Any], segs: SegmentReads, stream: str, start: int, limit: int
) -> list[RecordedEvent]:
    """Records of one stream from version ``start``, at most ``limit``."""
    out: list[RecordedEvent] = []
    prefix = stream.encode() + b"\x00"
    cursor = txn.cursor(db=dbs[STREAM_INDEX])
    if not cursor.set_range(stream_key(stream, start)):
        return out
    for key, value in cursor.iternext():
        if bytes(key[: len(prefix)]) != prefix:
            break
        out.append(_record(txn, dbs, segs, seq_of_key(value), check=False))
        if len(out) >= limit:
            break
    return out


def header_at(txn: Any, dbs: dict[bytes, Any], seq: int) -> Header:
    """The header of ``seq``; :class:`NotFoundError` when absent."""
    raw = txn.get(seq_key(seq), db=dbs[HEADERS])
    if raw is None:
        raise EventNotFoundError(f"no event at seq {seq}")
    return decode_header(raw[_PREFIX:], seq)


def payloads_at(txn: Any, dbs: dict[bytes, Any], segs: SegmentReads,
                seqs: Sequence[int]) -> list[Event | None]:
    """The events at ``seqs`` in order; None where erased or absent (no commitment check)."""
    headers = txn.cursor(db=dbs[HEADERS])
    erasing = read_int_set(txn, dbs[META], ERASING)
    out: list[Event | None] = []
    for seq in seqs:
        key = seq_key(seq)
        value = None if seq < 1 or seq in erasing else segs.get(seq)
        raw = None if value is None else headers.get(key)
        if value is None or raw is None:
            out.append(None)
            continue
        header = decode_header(raw[_PREFIX:], seq)
        out.append(decode_payload(value[SALT_SIZE:], header))
    return out


def get_record(txn: Any, dbs: dict[bytes, Any], segs: SegmentReads, seq: int) -> RecordedEvent:
    """One record with its payload checked against the commitment."""
    return _record(txn, dbs, segs, seq, check=True)


def _record(txn: Any, dbs: dict[bytes, Any], segs: SegmentReads, seq: int, *,
            check: bool) -> RecordedEvent:
    key = seq_key(seq)
    raw = txn.get(key, db=dbs[HEADERS])
    if raw is None:
        raise EventNotFoundError(f"no event at seq {seq}")
    header = decode_header(raw[_PREFIX:], seq)
    if header.seq != seq:
        raise CorruptionError(f"header stored at seq {seq} names seq {header.seq}", seq=seq)
    value = segs.get(seq)
    if value is None or seq in read_int_set(txn, dbs[META], ERASING):
        return RecordedEvent(header, None)
    if check:
        stored = bytes(raw[HASH_SIZE:_PREFIX])
        value = bytes(value)
        if commit(value[:SALT_SIZE], value[SALT_SIZE:]) != stored:
            raise CorruptionError(f"payload of seq {seq} does not match its commitment", seq=seq)
    return RecordedEvent(header, decode_payload(value[SALT_SIZE:], header))
