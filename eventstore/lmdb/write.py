"""The append path of the LMDB log, run inside one write transaction."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from hashlib import sha256
from typing import Any

from ..backend import PreparedAppend
from ..chain import HASH_SIZE, SALT_SIZE, new_salts
from ..codec import decode_header, encode_header_fields
from ..envelope import AppendResult, Header
from ..errors import (
    ConcurrencyError,
    CorruptionError,
    DuplicateEventError,
    InvalidEventError,
    MemlogError,
)
from .layout import (
    DIRTY,
    ERASED,
    ERASING,
    EVENT_IDS,
    HEADERS,
    META,
    RECENT,
    STREAM_INDEX,
    STREAMS,
    HeadState,
    read_head_state,
    read_int_set,
    seq_key,
    seq_of_key,
    write_head_state,
    write_int_set,
)
from .recent import SEAL_AT, conceal, read_sealed, take_recent, write_sealed
from .segments import Segments

__all__ = ["TxnWriter"]


def _put_all(txn: Any, db: Any, items: list[tuple[bytes, bytes]], clash: str, *args: object,
             append: bool = False, duplicate: bool = False) -> None:
    """Put new keys with the result checked (py-lmdb reports clashes, not
    raises): a key that exists already is never overwritten. One item is one
    ``put`` (a single append's case), more are one cursor's ``putmulti``. The
    error's message is ``clash`` formatted with ``args``, only when it is raised."""
    if len(items) == 1:
        key, value = items[0]
        done = txn.put(key, value, db=db, append=append, overwrite=False)
    else:
        consumed, added = txn.cursor(db=db).putmulti(items, append=append, overwrite=False)
        done = consumed == added == len(items)
    if not done:
        if duplicate:
            raise DuplicateEventError(clash.format(*args))
        raise CorruptionError(clash.format(*args))


class TxnWriter:
    """Appends prepared requests within one LMDB write transaction.

    Payloads are collected for the segments (:attr:`payloads`), which the
    caller writes before this transaction commits, with :attr:`base` (the head
    this transaction started from) as the segments' append mark; erased seqs
    go to ``erased`` for good and to ``meta`` (``erasing``) for the deletion
    that follows the commit.

    With ``recent``, the payloads go to the main ``recent`` database instead,
    concealed (:mod:`.recent`), and commit with the headers.
    """

    def __init__(self, txn: Any, dbs: dict[bytes, Any], clock: Callable[[], int],
                 segments: Segments, recent: bool = False) -> None:
        self.txn = txn
        self.dbs = dbs
        self.segments = segments
        self.recent = recent
        self.head: HeadState = read_head_state(txn, dbs[META])
        self.base = self.head.seq
        self.sealed = self.was_sealed = read_sealed(txn, dbs[META])
        self.now = max(clock(), self.head.time)
        self.payloads: list[tuple[bytes, bytes]] = []
        self.erased: set[int] = set()
        self.sealing = False  # recent payloads are taken to the segments
        self.put_recent = False
        self.recent_items: list[tuple[bytes, bytes]] = []  # (key, stored) put into ``recent``

    def apply(self, req: PreparedAppend) -> AppendResult:
        """Append one request (or recognise it as a retry)."""
        if req.client_ids:
            previous = self._previous_result(req)
            if previous is not None:
                return previous
        version = self._check_version(req)
        self._erase(req.erases)
        first = self.head.seq + 1
        headers, payloads, ids, index = self._records(req, first, version)
        txn, dbs = self.txn, self.dbs
        _put_all(txn, dbs[HEADERS], headers, "seq {} already exists in the log", first, append=True)
        if self.recent:
            self._put_recent(payloads)
        else:
            self.payloads.extend(payloads)
        _put_all(txn, dbs[EVENT_IDS], sorted(ids) if len(ids) > 1 else ids,
                 "an event id of this append is already in the log", duplicate=True)
        # A clash means ``streams`` fell behind the index: taking over the entry would
        # hide the event it points at from read_stream.
        _put_all(txn, dbs[STREAM_INDEX], index,
                 "the stream index of {} already holds versions after {}", req.stream, version)
        version += len(req.payloads)
        txn.put(req.stream.encode(), seq_key(version), db=dbs[STREAMS])
        return AppendResult(
            stream=req.stream, first_seq=first, last_seq=self.head.seq, version=version,
            event_ids=req.event_ids, recorded_at=self.now,
        )

    def apply_nested(self, env: Any, batch: Sequence[PreparedAppend]) -> list[AppendResult] | MemlogError:
        """Append one thread's requests in a transaction nested in this one:
        when one is refused on its own (a version, an event id, a seq to
        erase), its changes and this writer's state are rolled back and the
        error is returned, not raised. Any other error fails the transaction."""
        point = self._savepoint()
        parent = self.txn
        self.txn = env.begin(write=True, parent=parent)
        try:
            results = [self.apply(req) for req in batch]
            self.txn.commit()
            return results
        except (ConcurrencyError, DuplicateEventError, InvalidEventError) as exc:
            self.txn.abort()
            self._rollback(point)
            return exc
        except BaseException:
            self.txn.abort()
            raise
        finally:
            self.txn = parent

    def _savepoint(self) -> tuple[Any, ...]:
        head = self.head
        return (head.seq, head.hash, head.time, len(self.payloads), set(self.erased),
                self.sealed, self.put_recent, len(self.recent_items))

    def _rollback(self, point: tuple[Any, ...]) -> None:
        head = self.head
        head.seq, head.hash, head.time, payloads, self.erased, self.sealed, self.put_recent, recent = point
        del self.payloads[payloads:]
        del self.recent_items[recent:]

    def _put_recent(self, payloads: list[tuple[bytes, bytes]]) -> None:
        if self.sealed is None:
            self.sealed = self.base  # every payload up to here is in the segments
        keys: dict[int, bytes | None] = {}
        items = []
        for key, stored in payloads:
            index = self.segments.index_of(seq_of_key(key))
            if index not in keys:
                keys[index] = self.segments.key(index, create=True)
            items.append((key, conceal(keys[index] or b"", stored)))
        self.put_recent = True
        self.recent_items.extend(payloads)
        _put_all(self.txn, self.dbs[RECENT], items,
                 "a recent payload after the log's head already exists", append=True)

    def seal_if_due(self) -> None:
        """Take every recent payload into :attr:`payloads` (for the segments)
        when this append goes to the segments or ``recent`` is full."""
        if self.sealed is None:
            return
        # Every seq after S went to ``recent`` (an erasure may have removed some):
        # counting seqs seals no later than counting entries, without a stat.
        if self.recent and self.head.seq - self.sealed < SEAL_AT:
            return
        own = dict(self.recent_items)  # not committed yet: not in the segments' copies
        reveal = self.segments.reveal

        def reveal_value(key: bytes, value: Any) -> bytes:
            found = own.get(key)
            return found if found is not None else reveal(key, value)

        self.payloads[:0] = take_recent(self.txn, self.dbs, reveal_value)
        self.sealed = None
        self.sealing = True

    def finish(self, overwritten: set[int]) -> None:
        """Store the new head and the erasure marks; call once, before commit.

        ``overwritten``: segments where a payload replaced one left by an append
        that never committed (its bytes stay in freed pages until a purge).
        """
        meta = self.dbs[META]
        write_head_state(self.txn, meta, self.head)
        if self.sealed != self.was_sealed or (self.put_recent and self.sealed is not None):
            write_sealed(self.txn, meta, self.sealed, self.base)
        if self.erased:
            erasing = read_int_set(self.txn, meta, ERASING) | self.erased
            write_int_set(self.txn, meta, ERASING, erasing)
            # A seq may be erased again (a later tombstone naming it too).
            self.txn.cursor(db=self.dbs[ERASED]).putmulti([(seq_key(s), b"") for s in sorted(self.erased)])
        dirty = overwritten | {self.segments.index_of(s) for s in self.erased} if self.erased else overwritten
        if dirty:
            write_int_set(self.txn, meta, DIRTY, read_int_set(self.txn, meta, DIRTY) | dirty)

    def _records(self, req: PreparedAppend, first: int, version: int) -> tuple[list[Any], ...]:
        """Encode every record of the request and advance the chain (the batch
        path's per-event loop: names bound locally, one zip, no indexing)."""
        salts = new_salts(len(req.payloads))
        link, now, stream, actor = self.head.hash, self.now, req.stream, req.actor
        cause, corr, erases = req.causation_id, req.correlation_id, req.erases
        prefix = stream.encode() + b"\x00"
        encode, digest, key_of = encode_header_fields, sha256, seq_key
        headers, payloads, ids, index = [], [], [], []
        seq, at, salt_at = first, version + 1, 0
        for payload, eid, etype, schema in zip(req.payloads, req.event_ids, req.types,
                                               req.schema_versions, strict=True):
            # A tuple encodes exactly as the array-like Header (tested), without building one.
            header = encode((seq, stream, at, eid, etype, now, actor, cause, corr, schema, erases))
            erases = ()  # the tombstone is an erasing append's only event
            stored = salts[salt_at : salt_at + SALT_SIZE] + payload
            commitment = digest(stored).digest()
            link = digest(link + header + commitment).digest()
            key = key_of(seq)
            headers.append((key, link + commitment + header))
            payloads.append((key, stored))
            ids.append((eid.encode(), key))
            index.append((prefix + key_of(at), key))
            seq, at, salt_at = seq + 1, at + 1, salt_at + SALT_SIZE
        self.head.seq = seq - 1
        self.head.hash = link
        self.head.time = now
        return headers, payloads, ids, index

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
            self.erased.add(seq)
            if self.sealed is not None and seq > self.sealed:  # gone with the tombstone's commit
                self.txn.delete(seq_key(seq), db=self.dbs[RECENT])

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
