"""Read paths of the LMDB log: range scans, stream scans and single gets.

Scans decode inside a read transaction in chunks; callers stream the chunks,
so a million records never sit in memory at once and no lock or transaction
is held while the caller works on a chunk.
"""

from __future__ import annotations

import struct
from typing import Any

import msgspec

from ._lmdb_layout import HEADERS, PAYLOADS, STREAM_INDEX, seq_key, seq_of_key, stream_key
from .chain import HASH_SIZE, SALT_SIZE, commit
from .codec import decode_header, decode_payload
from .envelope import Header, RecordedEvent
from .errors import CorruptionError, NotFoundError

_unpack = struct.Struct(">Q").unpack
_header_decoder = msgspec.msgpack.Decoder(Header).decode

__all__ = ["get_record", "header_at", "scan_range", "scan_stream"]

_PREFIX = 2 * HASH_SIZE


def scan_range(
    txn: Any, dbs: dict[bytes, Any], start: int, stop: int, limit: int
) -> list[RecordedEvent]:
    """Records with ``start <= seq <= stop``, at most ``limit`` of them."""
    out: list[RecordedEvent] = []
    headers = txn.cursor(db=dbs[HEADERS])
    if not headers.set_range(seq_key(start)):
        return out
    payloads = txn.cursor(db=dbs[PAYLOADS])
    p_iter = payloads.iternext() if payloads.set_range(seq_key(start)) else iter(())
    pseq, pval = _next_payload(p_iter)
    append = out.append
    for hkey, hval in headers.iternext():
        header = _decode_header_at(hkey, hval)
        seq = header.seq
        if seq > stop:
            break
        while pseq < seq:
            pseq, pval = _next_payload(p_iter)
        if pseq == seq:
            append(RecordedEvent(header, decode_payload(pval[SALT_SIZE:], header)))
            pseq, pval = _next_payload(p_iter)
        else:
            append(RecordedEvent(header, None))
        if len(out) >= limit:
            break
    return out


_NO_MORE = (1 << 64, b"")


def _next_payload(it: Any) -> tuple[int, Any]:
    item = next(it, None)
    if item is None:
        return _NO_MORE
    return _unpack(item[0])[0], item[1]


def _decode_header_at(key: Any, value: Any) -> Header:
    try:
        return _header_decoder(value[_PREFIX:])
    except msgspec.DecodeError:
        seq = seq_of_key(key)
        raise CorruptionError(f"header of seq {seq} does not decode", seq=seq) from None


def scan_stream(
    txn: Any, dbs: dict[bytes, Any], stream: str, start: int, limit: int
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
        out.append(_record(txn, dbs, seq_of_key(value), check=False))
        if len(out) >= limit:
            break
    return out


def header_at(txn: Any, dbs: dict[bytes, Any], seq: int) -> Header:
    """The header of ``seq``; :class:`NotFoundError` when absent."""
    raw = txn.get(seq_key(seq), db=dbs[HEADERS])
    if raw is None:
        raise NotFoundError(f"no event at seq {seq}", code="E_EVENT_NOT_FOUND")
    return decode_header(raw[_PREFIX:], seq)


def get_record(txn: Any, dbs: dict[bytes, Any], seq: int) -> RecordedEvent:
    """One record with its payload checked against the commitment."""
    return _record(txn, dbs, seq, check=True)


def _record(txn: Any, dbs: dict[bytes, Any], seq: int, *, check: bool) -> RecordedEvent:
    key = seq_key(seq)
    raw = txn.get(key, db=dbs[HEADERS])
    if raw is None:
        raise NotFoundError(f"no event at seq {seq}", code="E_EVENT_NOT_FOUND")
    header = decode_header(raw[_PREFIX:], seq)
    if header.seq != seq:
        raise CorruptionError(f"header stored at seq {seq} names seq {header.seq}", seq=seq)
    value = txn.get(key, db=dbs[PAYLOADS])
    if value is None:
        return RecordedEvent(header, None)
    if check:
        stored = bytes(raw[HASH_SIZE:_PREFIX])
        value = bytes(value)
        if commit(value[:SALT_SIZE], value[SALT_SIZE:]) != stored:
            raise CorruptionError(f"payload of seq {seq} does not match its commitment", seq=seq)
    return RecordedEvent(header, decode_payload(value[SALT_SIZE:], header))
