"""Read paths of the LMDB log: range scans, stream scans, single gets and batches.

Scans decode inside a read transaction in chunks; callers stream the chunks,
so a million records never sit in memory at once and no lock or transaction
is held while the caller works on a chunk.

Every read checks each payload it decodes against the salted commitment in
its header (one SHA-256 of the stored salt and payload) and raises
:class:`CorruptionError` naming the seq when it differs: a flipped byte is an
error, never served. A header without its payload is served as erased only
when the seq is in ``erased`` (its tombstone committed); otherwise the payload
was lost, and that is a :class:`CorruptionError` too. A seq in ``erased`` reads
as erased even while its payload is still stored (an erasure in progress).

An erase that commits after a read began deletes payloads the read may not
have reached yet; so before calling a missing payload lost, the read looks at
``erased`` again in a fresh transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from hashlib import sha256
from typing import Any

import msgspec

from ..chain import HASH_SIZE, SALT_SIZE
from ..codec import decode_header, decode_payload
from ..envelope import Header, RecordedEvent
from ..errors import CorruptionError, EventNotFoundError
from ..events import SCHEMA_VERSIONS, Event
from .layout import ERASED, HEADERS, META, STREAM_INDEX, read_head_state, seq_key, seq_of_key, stream_key
from .segments import SegmentReads

_header_decoder = msgspec.msgpack.Decoder(Header).decode
_payload_decoder = msgspec.msgpack.Decoder(Event).decode
_CURRENT = SCHEMA_VERSIONS

__all__ = ["Snapshot", "get_record", "header_at", "payloads_at", "scan_range", "scan_stream"]

_PREFIX = 2 * HASH_SIZE
_END: tuple[Any, Any] = (None, None)


class Snapshot:
    """One read operation: the main read transaction and its databases, the
    segments' read transactions, and the main environment (for a fresh look
    at ``erased``)."""

    __slots__ = ("dbs", "env", "segs", "txn")

    def __init__(self, txn: Any, dbs: dict[bytes, Any], segs: SegmentReads, env: Any) -> None:
        self.txn = txn
        self.dbs = dbs
        self.segs = segs
        self.env = env

    def erased_between(self, first: int, last: int) -> set[int]:
        """The erased seqs from ``first`` to ``last`` (usually few)."""
        cursor = self.txn.cursor(db=self.dbs[ERASED])
        found: set[int] = set()
        if cursor.set_range(seq_key(first)):
            end = seq_key(last)
            for key in cursor.iternext(values=False):
                if bytes(key) > end:
                    break
                found.add(seq_of_key(key))
        return found

    def lost(self, seq: int) -> CorruptionError | None:
        """None when the missing payload of ``seq`` was erased, else the error
        to raise (the payload was lost)."""
        key = seq_key(seq)
        if self.txn.get(key, db=self.dbs[ERASED]) is not None:
            return None
        with self.env.begin() as fresh:
            if fresh.get(key, db=self.dbs[ERASED]) is not None:
                return None
        return CorruptionError(f"the payload of seq {seq} is missing but was never erased", seq=seq)


    def current_head(self) -> int:
        """The head now, in a fresh transaction (appends go on during a read)."""
        with self.env.begin() as fresh:
            return read_head_state(fresh, self.dbs[META]).seq


def mismatch(seq: int) -> CorruptionError:
    """The error for a payload that does not match its commitment."""
    return CorruptionError(f"the payload of seq {seq} does not match its commitment", seq=seq)


def scan_range(snap: Snapshot, start: int, stop: int, limit: int) -> list[RecordedEvent]:
    """Records with ``start <= seq <= stop``, at most ``limit`` of them. The replay
    hot path: header and payload cursors in lockstep, decoders inlined."""
    out: list[RecordedEvent] = []
    headers = snap.txn.cursor(db=snap.dbs[HEADERS])
    if not headers.set_range(seq_key(start)):
        return out
    last = min(stop, start + limit - 1)
    erased = snap.erased_between(start, last)
    p_items = snap.segs.items(start, last)
    pkey, pval = next(p_items, _END)
    decode_h, decode_p, current, append = _header_decoder, _payload_decoder, _CURRENT, out.append
    expected = start
    try:
        for hkey, hval in headers.iternext():
            header = decode_h(hval[_PREFIX:])
            if header.seq != expected or expected > last:
                if expected > last:
                    break
                raise _misplaced(expected, header.seq)
            expected += 1
            if pkey != hkey:
                while pkey is not None and bytes(pkey) < bytes(hkey):  # not this seq's payload
                    pkey, pval = next(p_items, _END)
                if pkey != hkey:
                    append(_without_payload(snap, header, erased))
                    continue
            if erased and header.seq in erased:  # its erasure is in progress
                append(RecordedEvent(header, None))
            elif sha256(pval).digest() != hval[HASH_SIZE:_PREFIX]:  # H(salt || payload)
                raise mismatch(header.seq)
            elif header.schema_version == current.get(header.type):
                append(RecordedEvent(header, decode_p(pval[SALT_SIZE:])))
            else:
                append(RecordedEvent(header, decode_payload(pval[SALT_SIZE:], header)))
            pkey, pval = next(p_items, _END)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise CorruptionError(f"record of seq {expected} does not decode: {exc}", seq=expected) from None
    return out


def _without_payload(snap: Snapshot, header: Header, erased: set[int]) -> RecordedEvent:
    """A record whose payload is not stored: erased, or lost (an error)."""
    if header.seq not in erased and (error := snap.lost(header.seq)) is not None:
        raise error
    return RecordedEvent(header, None)


def _misplaced(expected: int, named: int) -> CorruptionError:
    return CorruptionError(f"the header stored for seq {expected} names seq {named}", seq=expected)


def scan_stream(snap: Snapshot, stream: str, start: int, limit: int) -> list[RecordedEvent]:
    """Records of one stream from version ``start``, at most ``limit``."""
    out: list[RecordedEvent] = []
    prefix = stream.encode() + b"\x00"
    cursor = snap.txn.cursor(db=snap.dbs[STREAM_INDEX])
    if not cursor.set_range(stream_key(stream, start)):
        return out
    for key, value in cursor.iternext():
        if bytes(key[: len(prefix)]) != prefix:
            break
        record = get_record(snap, seq_of_key(value))
        if (record.stream, record.version) != (stream, seq_of_key(key[len(prefix):])):
            raise CorruptionError(
                f"the stream index of {stream} names seq {record.seq} for another event",
                seq=record.seq)
        out.append(record)
        if len(out) >= limit:
            break
    return out


def header_at(txn: Any, dbs: dict[bytes, Any], seq: int) -> Header:
    """The header of ``seq``; :class:`NotFoundError` when absent."""
    raw = txn.get(seq_key(seq), db=dbs[HEADERS])
    if raw is None:
        raise EventNotFoundError(f"no event at seq {seq}")
    return decode_header(raw[_PREFIX:], seq)


def payloads_at(snap: Snapshot, seqs: Sequence[int]) -> list[Event | None]:
    """The events at ``seqs`` in order, each checked against its commitment;
    None where erased or where the seq does not exist."""
    headers = snap.dbs[HEADERS]
    out: list[Event | None] = []
    for seq in seqs:
        raw = snap.txn.get(seq_key(seq), db=headers) if seq >= 1 else None
        out.append(None if raw is None else _record(snap, seq, raw).event)
    return out


def get_record(snap: Snapshot, seq: int) -> RecordedEvent:
    """One record with its payload checked against the commitment."""
    raw = snap.txn.get(seq_key(seq), db=snap.dbs[HEADERS])
    if raw is None:
        raise EventNotFoundError(f"no event at seq {seq}")
    return _record(snap, seq, raw)


def _record(snap: Snapshot, seq: int, raw: Any) -> RecordedEvent:
    """The record of ``seq`` given its stored header value."""
    header = decode_header(raw[_PREFIX:], seq)
    if header.seq != seq:
        raise _misplaced(seq, header.seq)
    value = snap.segs.get(seq)
    if snap.txn.get(seq_key(seq), db=snap.dbs[ERASED]) is not None:
        return RecordedEvent(header, None)
    if value is None:
        error = snap.lost(seq)
        if error is not None:
            raise error
        return RecordedEvent(header, None)
    if sha256(value).digest() != raw[HASH_SIZE:_PREFIX]:
        raise mismatch(seq)
    return RecordedEvent(header, decode_payload(value[SALT_SIZE:], header))
