"""Walking the hash chain of the LMDB log.

``verify`` checks, for every seq from 1 to the head:

- the header exists (no event was dropped) and decodes, and names its own seq;
- the stored chain hash equals ``H(previous || header || commitment)``;
- the payload, when present, matches its salted commitment;
- a missing payload is named by a later tombstone header (``erases``);
- no payload exists without a header, up to the head (payloads after the head
  are appends that never committed: the next append overwrites them);
- the head in ``meta`` equals the last header and its chain hash.

A payload whose seq is marked ``erasing`` counts as missing (its tombstone is
committed; the deletion is in progress).

The first bad seq is the smallest seq at which any of these fails.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..chain import GENESIS, HASH_SIZE, SALT_SIZE, chain_link, commit
from ..envelope import Header, VerifyResult
from .layout import ERASING, HEADERS, META, HeadState, read_head_state, read_int_set, seq_of_key
from .segments import SegmentReads

__all__ = ["verify_log"]

_PREFIX = 2 * HASH_SIZE
_decode = msgspec.msgpack.Decoder(Header).decode


class _Walk:
    """State of one chain walk; records the first problem found."""

    def __init__(self) -> None:
        self.previous = GENESIS
        self.expected_seq = 1
        self.events = 0
        self.missing: list[int] = []
        self.erased: set[int] = set()
        self.bad_seq: int | None = None
        self.problem: str | None = None

    def fail(self, seq: int, problem: str) -> None:
        if self.bad_seq is None or seq < self.bad_seq:
            self.bad_seq, self.problem = seq, problem

    def step(self, seq: int, value: bytes, payload: bytes | None) -> bool:
        """Check one record; return False to stop the walk."""
        if seq != self.expected_seq:
            self.fail(self.expected_seq, f"event {self.expected_seq} is missing from the log")
            return False
        self.expected_seq += 1
        self.events += 1
        link, commitment, raw = value[:HASH_SIZE], value[HASH_SIZE:_PREFIX], value[_PREFIX:]
        expected_link = chain_link(self.previous, raw, commitment)
        self.previous = link
        if link != expected_link:
            self.fail(seq, f"the chain breaks at seq {seq}: its header or commitment changed")
            return True
        try:
            header = _decode(raw)
        except msgspec.DecodeError:
            self.fail(seq, f"the header of seq {seq} does not decode")
            return True
        if header.seq != seq or any(e >= seq for e in header.erases):
            self.fail(seq, f"the header of seq {seq} is inconsistent")
        self.erased.update(header.erases)
        if payload is None:
            self.missing.append(seq)
        elif commit(payload[:SALT_SIZE], payload[SALT_SIZE:]) != commitment:
            self.fail(seq, f"the payload of seq {seq} does not match its commitment")
        return True


def verify_log(txn: Any, dbs: dict[bytes, Any], segs: SegmentReads) -> VerifyResult:
    """Walk every record; see the module docstring for what is checked."""
    walk = _Walk()
    head = read_head_state(txn, dbs[META])
    erasing = read_int_set(txn, dbs[META], ERASING)
    p_iter = segs.items(1, max(head.seq, 1))
    pending = next(p_iter, None)
    for hkey, hval in txn.cursor(db=dbs[HEADERS]).iternext():
        seq = seq_of_key(hkey)
        while pending is not None and seq_of_key(pending[0]) < seq:
            walk.fail(seq_of_key(pending[0]), "a payload exists without a header")
            pending = next(p_iter, None)
        payload = None
        if pending is not None and seq_of_key(pending[0]) == seq:
            payload = None if seq in erasing else bytes(pending[1])
            pending = next(p_iter, None)
        if not walk.step(seq, bytes(hval), payload):
            break
    if pending is not None and seq_of_key(pending[0]) <= head.seq:
        walk.fail(seq_of_key(pending[0]), "a payload exists without a header")
    _check_tail(walk, head)
    return VerifyResult(
        ok=walk.bad_seq is None, events=walk.events, head=walk.expected_seq - 1,
        first_bad_seq=walk.bad_seq, problem=walk.problem, erased=len(walk.missing),
    )


def _check_tail(walk: _Walk, head: HeadState) -> None:
    for seq in walk.missing:
        if seq not in walk.erased:
            walk.fail(seq, f"the payload of seq {seq} was removed without a tombstone")
            break
    last = walk.expected_seq - 1
    if head.seq != last and walk.bad_seq is None:
        walk.fail(min(head.seq, last) + 1, f"the log head says {head.seq} but {last} events exist")
    elif head.seq == last and head.hash != walk.previous:
        walk.fail(max(last, 1), "the head hash does not match the last chain hash")
