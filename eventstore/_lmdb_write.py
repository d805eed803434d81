"""The append path of the LMDB log, run inside one write transaction."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._lmdb_layout import (
    EVENT_IDS,
    HEADERS,
    META,
    PAYLOADS,
    STREAM_INDEX,
    STREAMS,
    HeadState,
    read_head_state,
    seq_key,
    seq_of_key,
    stream_key,
    write_head_state,
)
from .backend import PreparedAppend
from .chain import HASH_SIZE, SALT_SIZE, chain_link, commit, new_salts
from .codec import decode_header, encode_header
from .envelope import AppendResult, Header
from .errors import (
    ConcurrencyError,
    CorruptionError,
    DuplicateEventError,
    InvalidEventError,
)

__all__ = ["TxnWriter"]


class TxnWriter:
    """Appends prepared requests within one LMDB write transaction."""

    def __init__(self, txn: Any, dbs: dict[bytes, Any], clock: Callable[[], int]) -> None:
        self.txn = txn
        self.dbs = dbs
        self.head: HeadState = read_head_state(txn, dbs[META])
        self.now = max(clock(), self.head.time)
        self.headers = txn.cursor(db=dbs[HEADERS])
        self.payloads = txn.cursor(db=dbs[PAYLOADS])

    def apply(self, req: PreparedAppend) -> AppendResult:
        """Append one request (or recognise it as a retry)."""
        if req.client_ids:
            previous = self._previous_result(req)
            if previous is not None:
                return previous
        version = self._check_version(req)
        self._erase(req.erases)
        first = self.head.seq + 1
        salts = new_salts(len(req.payloads))
        for i, payload in enumerate(req.payloads):
            self._put_one(req, i, version + 1 + i, payload, salts[i * SALT_SIZE : (i + 1) * SALT_SIZE])
        version += len(req.payloads)
        self.txn.put(req.stream.encode(), seq_key(version), db=self.dbs[STREAMS])
        return AppendResult(
            stream=req.stream, first_seq=first, last_seq=self.head.seq, version=version,
            event_ids=req.event_ids, recorded_at=self.now,
        )

    def finish(self) -> None:
        """Store the new head; call once, before commit."""
        write_head_state(self.txn, self.dbs[META], self.head)

    def _put_one(self, req: PreparedAppend, i: int, version: int, payload: bytes, salt: bytes) -> None:
        seq = self.head.seq + 1
        header = encode_header(Header(
            seq, req.stream, version, req.event_ids[i], req.types[i], self.now, req.actor,
            req.causation_id, req.correlation_id, req.schema_versions[i],
            req.erases if i == 0 else (),
        ))
        commitment = commit(salt, payload)
        link = chain_link(self.head.hash, header, commitment)
        key = seq_key(seq)
        if not self.headers.put(key, link + commitment + header, append=True):
            raise CorruptionError(f"seq {seq} already exists in the log", seq=seq)
        self.payloads.put(key, salt + payload, append=True)
        if not self.txn.put(req.event_ids[i].encode(), key, db=self.dbs[EVENT_IDS], overwrite=False):
            raise DuplicateEventError(f"event id {req.event_ids[i]} is already in the log")
        self.txn.put(stream_key(req.stream, version), key, db=self.dbs[STREAM_INDEX])
        self.head.seq = seq
        self.head.hash = link
        self.head.time = self.now

    def _check_version(self, req: PreparedAppend) -> int:
        raw = self.txn.get(req.stream.encode(), db=self.dbs[STREAMS])
        current = 0 if raw is None else seq_of_key(raw)
        expected = req.expected_version
        if expected is not None and expected != current:
            raise ConcurrencyError(
                f"stream {req.stream} is at version {current}, expected {expected}",
                stream=req.stream, expected=expected, actual=current,
            )
        return current

    def _erase(self, seqs: Sequence[int]) -> None:
        for seq in seqs:
            if seq < 1 or seq > self.head.seq:
                raise InvalidEventError(f"cannot erase seq {seq}: the log head is {self.head.seq}")
            self.txn.delete(seq_key(seq), db=self.dbs[PAYLOADS])

    def _previous_result(self, req: PreparedAppend) -> AppendResult | None:
        ids_db = self.dbs[EVENT_IDS]
        found = [self.txn.get(eid.encode(), db=ids_db) for eid in req.event_ids]
        if all(f is None for f in found):
            return None
        seqs = [seq_of_key(f) for f in found if f is not None]
        if len(seqs) != len(found) or seqs != list(range(seqs[0], seqs[0] + len(seqs))):
            raise DuplicateEventError(
                f"event ids of this append were used by another append (first at seq {seqs[0]})"
            )
        first = self._stored_header(seqs[0])
        last = self._stored_header(seqs[-1])
        if first.stream != req.stream or [first.type] != list(req.types[:1]):
            raise DuplicateEventError(
                f"event id {req.event_ids[0]} was used for a different event (seq {seqs[0]})"
            )
        return AppendResult(
            stream=first.stream, first_seq=first.seq, last_seq=last.seq, version=last.version,
            event_ids=req.event_ids, recorded_at=first.recorded_at, duplicate=True,
        )

    def _stored_header(self, seq: int) -> Header:
        raw = self.txn.get(seq_key(seq), db=self.dbs[HEADERS])
        if raw is None:
            raise CorruptionError(f"header of seq {seq} is missing", seq=seq)
        return decode_header(bytes(raw)[2 * HASH_SIZE :], seq)
