"""Verifying the NATS log: the chain walk, as on LMDB.

For every seq from 1 to the head (``verify``) or for the last ``count``
(``verify_tail``):

- the chunks follow one another without a gap (the index refuses a gap);
- the stored chain hash equals ``H(previous || header || commitment)``;
- the header decodes and names its own seq, erases only earlier seqs;
- a stored payload matches its salted commitment;
- a missing payload is named by a tombstone (``erases``);
- (whole walk) each stream's versions count 1, 2, 3... in seq order and no
  event id appears twice;
- the head is the last record and its chain hash.
"""

from __future__ import annotations

from hashlib import sha256

import msgspec

from ..chain import GENESIS
from ..codec import decode_header
from ..envelope import VerifyResult
from ..errors import CorruptionError, EventNotFoundError
from .records import Index, Record
from .store import Store

__all__ = ["verify", "verify_tail"]

_BATCH = 64  # chunks per step


class _Walk:
    def __init__(self, previous: bytes, first: int, whole: bool) -> None:
        self.previous = previous
        self.first = first
        self.whole = whole
        self.events = 0
        self.bad: int | None = None
        self.problem: str | None = None
        self.missing: list[int] = []
        self.named: set[int] = set()
        self.versions: dict[str, int] = {}
        self.ids: set[str] = set()

    def fail(self, seq: int, problem: str) -> None:
        if self.bad is None or seq < self.bad:
            self.bad, self.problem = seq, problem

    def step(self, seq: int, record: Record, payload: bytes | None, erased: bool) -> None:
        self.events += 1
        link = sha256(self.previous + record.header + record.commitment).digest()
        self.previous = record.chain
        if link != record.chain:
            self.fail(seq, f"the chain breaks at seq {seq}: its header or commitment changed")
        try:
            header = decode_header(record.header, seq)
        except (msgspec.DecodeError, CorruptionError, UnicodeDecodeError):
            self.fail(seq, f"the header of seq {seq} does not decode")
            return
        self.named.update(header.erases)
        if header.seq != seq or any(e >= seq for e in header.erases):
            self.fail(seq, f"the header of seq {seq} is inconsistent")
        if self.whole:
            self._indexes(seq, header.stream, header.version, header.id)
        if payload is None:
            if not erased:
                self.missing.append(seq)
        elif sha256(payload).digest() != record.commitment:
            self.fail(seq, f"the payload of seq {seq} does not match its commitment")

    def _indexes(self, seq: int, stream: str, version: int, event_id: str) -> None:
        expected = self.versions.get(stream, 0) + 1
        if version != expected:
            self.fail(seq, f"seq {seq} has version {version} of stream {stream}, expected {expected}")
        self.versions[stream] = version
        if event_id in self.ids:
            self.fail(seq, f"the event id of seq {seq} was used before")
        self.ids.add(event_id)


def verify(store: Store) -> VerifyResult:
    """Walk the whole chain; a failure is confirmed by a second walk (an erasure
    whose tombstone committed during the first may have removed a payload)."""
    result = _verify(store, None)
    return result if result.ok else _verify(store, None)


def verify_tail(store: Store, count: int) -> VerifyResult:
    """Check the last ``count`` records the way :func:`verify` checks all."""
    result = _verify(store, count)
    return result if result.ok else _verify(store, count)


def _verify(store: Store, count: int | None) -> VerifyResult:
    with store.lock:
        try:
            index = store.catch_up()
        except CorruptionError as exc:
            bad = exc.seq if isinstance(exc.seq, int) else store.index.seq + 1
            return VerifyResult(ok=False, events=store.index.seq, head=store.index.seq,
                                first_bad_seq=bad, problem=str(exc))
        first = 1 if count is None else max(1, index.seq - count + 1)
        walk = _Walk(GENESIS, first, whole=count is None)
        try:
            if first > 1:
                walk.previous = store.chunk_records([first - 1])[0].chain
            _walk(store, index, walk)
        except (CorruptionError, EventNotFoundError) as exc:
            seq = getattr(exc, "seq", None)
            walk.fail(seq if isinstance(seq, int) else first + walk.events, str(exc))
    for seq in walk.missing:
        if seq not in walk.named and seq not in index.erased:
            walk.fail(seq, f"the payload of seq {seq} was removed without a tombstone")
            break
    if walk.bad is None and index.seq and walk.previous != index.hash:
        walk.fail(index.seq, "the head hash does not match the last chain hash")
    return VerifyResult(ok=walk.bad is None, events=walk.events, head=index.seq,
                        first_bad_seq=walk.bad, problem=walk.problem,
                        erased=len([s for s in index.erased if s >= first]))


def _walk(store: Store, index: Index, walk: _Walk) -> None:
    """Every record from ``walk.first`` to the head, chunk batch by chunk batch."""
    if not index.seq:
        return
    start = index.locate(walk.first)[0]
    for lo in range(start, len(index.firsts), _BATCH):
        positions = list(range(lo, min(lo + _BATCH, len(index.firsts))))
        chunks = store.chunks(positions)
        wanted = [(chunks[p].first + k, r) for p in positions for k, r in enumerate(chunks[p].records)]
        wanted = [(seq, r) for seq, r in wanted if seq >= walk.first]
        stored = store.payloads(r.payload_seq for seq, r in wanted if seq not in index.erased)
        for seq, record in wanted:
            erased = seq in index.erased
            walk.step(seq, record, None if erased else stored.get(record.payload_seq), erased)
