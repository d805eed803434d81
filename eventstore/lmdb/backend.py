"""The embedded LMDB backend of the event log."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..backend import PreparedAppend, PurgeReport
from ..chain import GENESIS, HASH_SIZE
from ..envelope import AppendResult, Head, RecordedEvent, VerifyResult
from ..errors import EventNotFoundError, InvalidInputError, MemlogError, StorageError
from ..events import Event
from ..storage.compact import purge_env
from ..storage.env import release_shared_env
from ..storage.safety import crashpoint
from .group import GroupCommit, Outcome
from .layout import EVENT_IDS, HEADERS, META, STREAMS, read_head_state, seq_key, seq_of_key
from .logenv import (
    LogEnv,
    finish_erasures,
    migrate_payloads,
    needs_migration,
    needs_upgrade,
    open_log_env,
    upgrade_to_format_3,
)
from .purge import purge_log
from .read import Snapshot, get_record, header_at, payloads_at, scan_range, scan_stream
from .recent import RECENT_MAX, SEAL_AT
from .seal import seal_all
from .segments import DEFAULT_SPAN, SegmentReads
from .verify import verify_log, verify_tail
from .write import TxnWriter

__all__ = ["LmdbBackend"]

T = TypeVar("T")

_CHUNK = 4096


def _now_us() -> int:
    return time.time_ns() // 1000


class LmdbBackend:
    """The log in LMDB: a main environment (see :mod:`eventstore.lmdb.layout`)
    and payload segments (see :mod:`eventstore.lmdb.segments`)."""

    def __init__(self, path: Path, *, sync: bool = True, clock: Callable[[], int] = _now_us,
                 segment_span: int = DEFAULT_SPAN, lock_timeout: float = 30.0):
        if type(segment_span) is not int or segment_span < 1:
            raise InvalidInputError("segment_span must be a positive integer")
        self.path = path
        self._clock = clock
        self._appended_recent = False
        self._group = GroupCommit(self._append_alone, self._append_group)
        self._shared: LogEnv | None = open_log_env(path, sync=sync, span=segment_span)
        try:
            if needs_migration(self.shared) or needs_upgrade(self.shared):
                self._migrate(lock_timeout)
        except BaseException:
            self.close()
            raise

    def _migrate(self, timeout: float) -> None:
        """Bring an older log to the current format: a format 1 log's payloads
        move into segments (then the main environment is compacted, so that none
        of their bytes stay behind in it); a format 2 log gets ``erased`` and
        the segments' append marks. Then the log's shape is checked."""
        with self.shared.lock.exclusive(timeout):
            moved = needs_migration(self.shared) and migrate_payloads(self.shared) > 0
            if needs_upgrade(self.shared):
                upgrade_to_format_3(self.shared)
            self.shared.check_shape()
        if moved:
            purge_env(self.shared, timeout)

    @property
    def shared(self) -> LogEnv:
        """The shared environment; raises once closed."""
        if self._shared is None:
            raise StorageError("the event log is closed")
        return self._shared

    def close(self) -> None:
        """Seal the recent payloads when this handle appended any (best effort:
        they are durable where they are; a handle that only read writes
        nothing), and release this handle's reference to the environment."""
        if self._shared is not None:
            try:
                if self._appended_recent and self._shared.env is not None:
                    seal_all(self._shared)
            except MemlogError:
                pass  # a broken log is reported by the next open
            release_shared_env(self._shared)
            self._shared = None

    def seal(self) -> int:
        """Move the recent payloads into their segments now (a close and a
        purge do it too); return how many moved. Their plaintext is then in the
        segments, which a test's positive control of a byte scan needs."""
        return seal_all(self.shared)

    def append(self, batch: Sequence[PreparedAppend]) -> list[AppendResult]:
        """Append every request in one transaction; a small one keeps its
        payloads in the main environment until they are sealed (:mod:`.recent`).
        Concurrent appends of this process share commits (:mod:`.group`)."""
        return self._group.append(batch)

    def _append_alone(self, batch: Sequence[PreparedAppend]) -> list[AppendResult]:
        """One thread's requests, in one transaction."""
        results, writer = self._write(_small(batch), lambda w: [w.apply(req) for req in batch])
        self._committed(writer)
        return results

    def _append_group(self, batches: list[Sequence[PreparedAppend]]) -> list[Outcome]:
        """Several threads' requests in one transaction, each in a nested one:
        a request refused on its own (version, event id, erased seq) gets its
        error and the others commit. The group keeps its payloads in ``recent``
        when each thread's append is small, as each would alone."""
        def apply(writer: TxnWriter) -> list[Outcome]:
            env = self.shared.env  # in the transaction: an operation may have reopened it
            return [writer.apply_nested(env, batch) for batch in batches]

        outcomes, writer = self._write(all(_small(batch) for batch in batches), apply)
        try:
            self._committed(writer)
        except MemlogError as exc:  # after the commit: only the erasing requests learn of it
            return [exc if isinstance(outcome, list) and any(req.erases for req in batch) else outcome
                    for outcome, batch in zip(outcomes, batches, strict=True)]
        return outcomes

    def _write(self, small: bool, apply: Callable[[TxnWriter], T]) -> tuple[T, TxnWriter]:
        """``apply(writer)`` in one write transaction, then the transaction's
        end (seal when due, segments, head); the result and the writer that committed."""
        self._appended_recent |= small
        done: list[TxnWriter] = []
        shared = self.shared  # its dbs and segments are read in the transaction (after a reopen)

        def run(txn: Any) -> T:
            segments = shared.segments
            writer = TxnWriter(txn, shared.dbs, self._clock, segments, small)
            result = apply(writer)
            writer.seal_if_due()
            # Payloads are durable before the headers that name them commit.
            overwritten = segments.write(writer.payloads, base=writer.base)
            if writer.sealing:
                crashpoint("append: sealed payloads in the segments, not yet out of recent")
            writer.finish(overwritten)
            done[:] = [writer]  # a map-full retry runs again: the last writer is the one committed
            return result

        return shared.write(run), done[0]

    def _committed(self, writer: TxnWriter) -> None:
        """After an append's commit: this process's copies of its recent
        payloads, then the deletion of the payloads it erased."""
        _keep_copies(self.shared.segments.own_recent, writer)
        if writer.erased:  # the tombstone is committed: now delete the payloads
            finish_erasures(self.shared)

    def read(self, from_seq: int, to_seq: int | None) -> Iterator[RecordedEvent]:
        """Stream records in seq order, a chunk per read transaction."""
        stop = (1 << 63) if to_seq is None else to_seq
        start = max(1, from_seq)
        while start <= stop:
            chunk = self._chunk(scan_range, start, stop, _CHUNK)
            if not chunk:
                return
            yield from chunk
            start = chunk[-1].header.seq + 1

    def read_stream(self, stream: str, from_version: int) -> Iterator[RecordedEvent]:
        """Stream one stream's records in version order."""
        start = max(1, from_version)
        while True:
            chunk = self._chunk(scan_stream, stream, start, _CHUNK)
            yield from chunk
            if len(chunk) < _CHUNK:
                return
            start = chunk[-1].header.version + 1

    def _chunk(self, scan: Callable[..., list[RecordedEvent]], *args: Any) -> list[RecordedEvent]:
        return self._read(lambda snap: scan(snap, *args))

    def _read(self, fn: Callable[[Snapshot], T], own_copies: bool = True) -> T:
        """``fn(snapshot)`` in one read operation (``own_copies``: see
        :class:`.segments.SegmentReads`; a verify checks the stored bytes)."""
        def run(txn: Any) -> T:
            with SegmentReads(self.shared.segments, txn, self.shared.dbs, own_copies) as segs:
                return fn(Snapshot(txn, self.shared.dbs, segs, self.shared.env))

        return self.shared.read(run)

    def get(self, seq: int) -> RecordedEvent:
        """One record, its payload checked against its commitment."""
        return self._read(lambda snap: get_record(snap, seq))

    def events_at(self, seqs: Sequence[int]) -> list[Event | None]:
        """The events at ``seqs`` in order (None where erased or absent)."""
        return self._read(lambda snap: payloads_at(snap, seqs))

    def chain_at(self, seq: int) -> bytes:
        """The chain hash stored at ``seq`` (the genesis hash at 0)."""
        def run(txn: Any) -> bytes:
            if seq == 0:
                return GENESIS
            raw = txn.get(seq_key(seq), db=self.shared.dbs[HEADERS]) if seq > 0 else None
            if raw is None:
                raise EventNotFoundError(f"no event at seq {seq}")
            return bytes(raw[:HASH_SIZE])

        return self.shared.read(run)

    def stream_version(self, stream: str) -> int:
        """The stream's last version (0 when it does not exist)."""
        def run(txn: Any) -> int:
            raw = txn.get(stream.encode(), db=self.shared.dbs[STREAMS])
            return 0 if raw is None else seq_of_key(raw)

        return self.shared.read(run)

    def seq_of(self, event_id: str) -> int | None:
        """The seq an event id was appended at."""
        def run(txn: Any) -> int | None:
            raw = txn.get(event_id.encode(), db=self.shared.dbs[EVENT_IDS])
            return None if raw is None else seq_of_key(raw)

        return self.shared.read(run)

    def seq_at(self, time_us: int) -> int:
        """The last seq recorded at or before ``time_us`` (binary search)."""
        def run(txn: Any) -> int:
            lo, hi = 0, read_head_state(txn, self.shared.dbs[META]).seq
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if header_at(txn, self.shared.dbs, mid).recorded_at <= time_us:
                    lo = mid
                else:
                    hi = mid - 1
            return lo

        return self.shared.read(run)

    def head(self) -> Head:
        """The head seq, chain hash and time."""
        def run(txn: Any) -> Head:
            state = read_head_state(txn, self.shared.dbs[META])
            return Head(state.seq, state.hash.hex(), state.time, self.shared.generation)

        return self.shared.read(run)

    def verify(self) -> VerifyResult:
        """Walk the whole chain in one read transaction."""
        result = self._read(verify_log, own_copies=False)
        if result.ok:
            return result
        # An erase whose tombstone committed after this walk began may have
        # deleted a payload the walk then missed: a failure is confirmed by a
        # second walk, which sees that tombstone.
        return self._read(verify_log, own_copies=False)

    def verify_tail(self, count: int) -> VerifyResult:
        """Check the last ``count`` records (confirmed by a second look, as ``verify``)."""
        result = self._read(lambda snap: verify_tail(snap, count), own_copies=False)
        return result if result.ok else self._read(lambda snap: verify_tail(snap, count), own_copies=False)

    def purge(self, timeout: float) -> PurgeReport:
        """Rewrite the payload segments that held erased payloads (compacting
        copy, swap, zero-fill; see :mod:`eventstore.lmdb.purge`)."""
        return purge_log(self.shared, timeout)


def _keep_copies(own: dict[bytes, bytes], writer: TxnWriter) -> None:
    """Keep the stored bytes of the payloads ``writer`` committed to ``recent``
    (a seal then takes them without revealing them): dropped when sealed or
    erased, and all of them once ``2 * SEAL_AT`` are held (left by seals of
    other processes): about that many at most."""
    if writer.sealing:
        own.clear()
    elif writer.recent_items:
        if len(own) >= 2 * SEAL_AT:
            own.clear()
        own.update(writer.recent_items)
    for seq in writer.erased:
        own.pop(seq_key(seq), None)


def _small(batch: Sequence[PreparedAppend]) -> bool:
    """Whether an append keeps its payloads in ``recent`` (:data:`.recent.RECENT_MAX`)."""
    return sum([len(req.payloads) for req in batch]) <= RECENT_MAX
