"""Verifying the LMDB log: everything it can check, in one walk.

``verify`` checks, for every seq from 1 to the head:

- the header exists (no event was dropped) and decodes, and names its own seq;
- the stored chain hash equals ``H(previous || header || commitment)``;
- the payload, when present, matches its salted commitment;
- a missing payload is named by a later tombstone header (``erases``), and the
  ``erased`` database holds exactly the seqs the tombstones name; an erased
  seq keeps no payload once its erasure finished (``erasing``);
- the indexes agree with the headers (:mod:`.verify_index`): the stream
  index, the ``streams`` versions and the event ids;
- the head in ``meta`` equals the last header and its chain hash.

And for the payload segments, every one on disk (:class:`_Payloads`):

- every payload lies in the segment its seq maps to;
- no payload exists without a header, up to the head;
- no segment carries an append mark beyond the head (its append started from
  a head the main environment does not have), and a segment after the head's
  holds payloads only with a mark: payloads after the head are legal only as
  the leftovers of appends that never committed.

A payload whose seq is marked ``erasing`` counts as missing (its tombstone is
committed; the deletion is in progress). The first bad seq is the smallest seq
at which any of these fails (a problem found after the head is reported at the
seq just after it).
"""

from __future__ import annotations

from collections.abc import Iterator
from hashlib import sha256
from typing import Any

import lmdb
import msgspec

from ..chain import GENESIS, HASH_SIZE
from ..envelope import Header, VerifyResult
from ..errors import CorruptionError
from .layout import ERASING, HEADERS, META, HeadState, read_head_state, read_int_set, seq_key, seq_of_key
from .read import Snapshot
from .segments import KEY, MARK
from .verify_index import IndexCheck, Problems

__all__ = ["verify_log", "verify_tail"]

_PREFIX = 2 * HASH_SIZE
Buffer = bytes | memoryview  # read buffers stay valid for the whole walk
_decode = msgspec.msgpack.Decoder(Header).decode


class _Walk(Problems):
    """State of one chain walk."""

    def __init__(self) -> None:
        super().__init__()
        self.previous: Buffer = GENESIS
        self.events = 0
        self.missing: list[int] = []
        self.erased: set[int] = set()
        self.undecoded = False  # a header did not decode: its erases are unknown

    def step(self, seq: int, value: Buffer, payload: Buffer | None) -> Header | None:
        """Check one record; return its header when it is intact (chained,
        consistent), so that the indexes can be checked against it. The
        buffers stay valid for the whole walk (one read transaction)."""
        self.events += 1
        link, commitment, raw = value[:HASH_SIZE], value[HASH_SIZE:_PREFIX], value[_PREFIX:]
        intact = link == sha256(b"".join((self.previous, raw, commitment))).digest()
        self.previous = link
        if not intact:
            self.fail(seq, f"the chain breaks at seq {seq}: its header or commitment changed")
        try:
            header = _decode(raw)
        except (msgspec.DecodeError, UnicodeDecodeError):
            self.fail(seq, f"the header of seq {seq} does not decode")
            self.undecoded = True
            return None
        self.erased.update(header.erases)  # even from a changed header: it says what it erased
        if payload is None:
            self.missing.append(seq)
        if header.seq != seq or any(e >= seq for e in header.erases):
            self.fail(seq, f"the header of seq {seq} is inconsistent")
            return None
        if not intact:
            return None
        if payload is not None and sha256(payload).digest() != commitment:  # H(salt || payload)
            self.fail(seq, f"the payload of seq {seq} does not match its commitment")
        return header


class _Payloads:
    """The stored payloads of every segment on disk, in seq order, checked
    against the segment map and the append marks as they go by."""

    def __init__(self, snap: Snapshot, head: int, problems: Problems) -> None:
        self.snap = snap
        self.head = head
        self.problems = problems
        self._items = self._all()
        self.pending = next(self._items, None)

    def take(self, seq: int) -> Buffer | None:
        """The payload of ``seq``; payloads of lower seqs left over have no header."""
        while self.pending is not None and self.pending[0] < seq:
            self.problems.fail(self.pending[0], "a payload exists without a header")
            self.pending = next(self._items, None)
        if self.pending is None or self.pending[0] != seq:
            return None
        value = self.pending[1]
        self.pending = next(self._items, None)
        return value

    def finish(self) -> None:
        """Check the payloads after the last header and the remaining segments."""
        while self.pending is not None:
            if self.pending[0] <= self.head:
                self.problems.fail(self.pending[0], "a payload exists without a header")
            self.pending = next(self._items, None)

    def _all(self) -> Iterator[tuple[int, Buffer]]:
        segs = self.snap.segs
        for index in segs.segments.on_disk():
            txn = segs.txn(index)
            if txn is not None:
                try:
                    for seq, value in self._segment(index, txn):
                        # (after ``sealed``: a copy left by a seal that never committed)
                        if segs.sealed is None or seq <= segs.sealed:
                            yield seq, value
                except lmdb.Error as exc:
                    raise segs.error(exc, index) from None
        yield from segs.recent_items()

    def _segment(self, index: int, txn: Any) -> Iterator[tuple[int, Buffer]]:
        span, head = self.snap.segs.segments.span, self.head
        low, high = index * span + 1, (index + 1) * span
        mark, last = None, 0
        for key, value in txn.cursor().iternext():
            if key == MARK:
                mark = seq_of_key(value)
                continue
            if key == KEY:
                continue
            try:
                seq = seq_of_key(key)
            except CorruptionError:
                seq = 0
            if not low <= seq <= high:
                self.problems.fail(min(max(seq, 1), head + 1),
                                   f"segment {index} holds a payload of seq {seq}, outside its span")
                continue
            last = seq
            yield seq, value
        if mark is not None and mark > head and mark > self.snap.current_head():
            # (an append that began after this walk's snapshot marks the head it
            # found, which a fresh look sees)
            self.problems.fail(head + 1, f"segment {index} holds an append that started after "
                                         f"seq {mark}, beyond the head {head}")
        elif mark is None and last > head:
            self.problems.fail(head + 1, f"segment {index} holds payloads after the head "
                                         "that no append marked")


def verify_log(snap: Snapshot) -> VerifyResult:
    """Walk every record; see the module docstring for what is checked."""
    walk = _Walk()
    head = read_head_state(snap.txn, snap.dbs[META])
    erasing = read_int_set(snap.txn, snap.dbs[META], ERASING)
    erased = snap.erased_between(1, 1 << 63)
    payloads = _Payloads(snap, head.seq, walk)
    indexes = IndexCheck(snap.txn, snap.dbs, walk)
    whole = True
    for hkey, hval in snap.txn.cursor(db=snap.dbs[HEADERS]).iternext():
        seq = seq_of_key(hkey)
        if seq != walk.events + 1:
            walk.fail(walk.events + 1, f"event {walk.events + 1} is missing from the log")
            whole = False  # what follows cannot be compared with the headers
            break
        payload = payloads.take(seq)
        if payload is not None and seq in erased:
            if seq not in erasing:
                walk.fail(seq, f"the payload of erased seq {seq} is still stored")
            payload = None
        indexes.add(hkey, walk.step(seq, hval, payload))
    if whole:
        payloads.finish()
        indexes.finish(head.seq)
        _check_erased(walk, erased)
    _check_missing(walk)
    _check_tail(walk, head)
    return VerifyResult(
        ok=walk.bad_seq is None, events=walk.events, head=walk.events,
        first_bad_seq=walk.bad_seq, problem=walk.problem, erased=len(walk.missing),
    )


def verify_tail(snap: Snapshot, count: int) -> VerifyResult:
    """Check the last ``count`` records the way :func:`verify_log` checks every
    one: each links to the stored chain hash of the record before it, each
    payload matches its commitment, a missing payload is erased, and the head
    matches the last record. ``events`` is how many records were checked.
    Cheap at any log size (a health check); the whole walk stays ``verify``."""
    walk = _Walk()
    head = read_head_state(snap.txn, snap.dbs[META])
    first = max(1, head.seq - count + 1)
    walk.events = first - 1
    if first > 1:
        before = snap.txn.get(seq_key(first - 1), db=snap.dbs[HEADERS])
        if before is None:
            walk.fail(first - 1, f"event {first - 1} is missing from the log")
        else:
            walk.previous = bytes(before[:HASH_SIZE])
    erasing = read_int_set(snap.txn, snap.dbs[META], ERASING)
    erased = snap.erased_between(first, head.seq)
    cursor = snap.txn.cursor(db=snap.dbs[HEADERS])
    if head.seq and cursor.set_key(seq_key(first)):
        for hkey, hval in cursor.iternext():
            seq = seq_of_key(hkey)
            if seq != walk.events + 1:
                walk.fail(walk.events + 1, f"event {walk.events + 1} is missing from the log")
                break
            payload = snap.segs.get(seq)
            if payload is not None and seq in erased:
                if seq not in erasing:
                    walk.fail(seq, f"the payload of erased seq {seq} is still stored")
                payload = None
            walk.step(seq, hval, payload)
    for seq in walk.missing:
        if seq not in erased:
            walk.fail(seq, f"the payload of seq {seq} was removed without a tombstone")
            break
    _check_tail(walk, head)
    return VerifyResult(ok=walk.bad_seq is None, events=walk.events - first + 1, head=walk.events,
                        first_bad_seq=walk.bad_seq, problem=walk.problem, erased=len(walk.missing))


def _check_missing(walk: _Walk) -> None:
    for seq in walk.missing:
        if seq not in walk.erased:
            walk.fail(seq, f"the payload of seq {seq} was removed without a tombstone")
            break


def _check_erased(walk: _Walk, erased: set[int]) -> None:
    unnamed = erased - walk.erased
    if unnamed and not walk.undecoded:
        seq = min(unnamed)
        walk.fail(seq, f"seq {seq} is marked erased, but no tombstone names it")
    unmarked = walk.erased - erased
    if unmarked:
        seq = min(unmarked)
        walk.fail(seq, f"a tombstone erases seq {seq}, but it is not marked erased")


def _check_tail(walk: _Walk, head: HeadState) -> None:
    last = walk.events
    if head.seq != last and walk.bad_seq is None:
        walk.fail(min(head.seq, last) + 1, f"the log head says {head.seq} but {last} events exist")
    elif head.seq == last and head.hash != walk.previous:
        walk.fail(max(last, 1), "the head hash does not match the last chain hash")
