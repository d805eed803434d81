"""The NATS JetStream backend of the event log (server >= 2.12).

Opened by a ``nats://`` location (see :mod:`.url`). Many hosts may share one
stream: the order of the commit chunks (a compare-and-set on the last one) is
the global order, and every host reads the same seqs, chain and payloads.
See :mod:`.records` for what is stored, :mod:`.write` for the append,
:mod:`.erase` for erasure and the purge, :mod:`.verify` for the walk.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence

from ..backend import PreparedAppend, PurgeReport
from ..chain import GENESIS
from ..envelope import AppendResult, Head, RecordedEvent, VerifyResult
from ..errors import StorageError
from ..events import Event
from . import erase, verify, write
from .store import Store
from .url import parse_location

__all__ = ["NatsBackend"]

_READ = 1024  # records per read step


def _now_us() -> int:
    return time.time_ns() // 1000


class NatsBackend:
    """The log in one JetStream stream."""

    def __init__(self, location: str, *, clock: Callable[[], int] = _now_us) -> None:
        self.location = parse_location(location)
        self._clock = clock
        self._store: Store | None = Store(self.location)

    @property
    def store(self) -> Store:
        """The stream; raises once closed."""
        if self._store is None:
            raise StorageError("the event log is closed")
        return self._store

    @property
    def replicas(self) -> int:
        """The stream's replica count."""
        return self.store.replicas

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def append(self, batch: Sequence[PreparedAppend]) -> list[AppendResult]:
        """Append every request in one atomic batch, then erase what the
        tombstones name."""
        results = write.append(self.store, batch, self._clock)
        erases = [seq for req, res in zip(batch, results, strict=True) if not res.duplicate
                  for seq in req.erases]
        if erases:
            with self.store.lock:
                self.store.catch_up()
                erase.erase_seqs(self.store, erases)
        return results

    def read(self, from_seq: int, to_seq: int | None) -> Iterator[RecordedEvent]:
        """Stream records in seq order, a step of records per batch of requests."""
        start = max(1, from_seq)
        head = self._head_seq()
        stop = head if to_seq is None else min(to_seq, head)
        while start <= stop:
            end = min(stop, start + _READ - 1)
            yield from self._records(list(range(start, end + 1)))
            start = end + 1

    def read_stream(self, stream: str, from_version: int) -> Iterator[RecordedEvent]:
        """Stream one stream's records in version order."""
        with self.store.lock:
            seqs = list(self.store.catch_up().streams.get(stream, ()))[max(1, from_version) - 1:]
        for start in range(0, len(seqs), _READ):
            yield from self._records(seqs[start:start + _READ])

    def _records(self, seqs: list[int]) -> list[RecordedEvent]:
        with self.store.lock:
            return self.store.records(seqs)

    def _head_seq(self) -> int:
        with self.store.lock:
            return self.store.catch_up().seq

    def get(self, seq: int) -> RecordedEvent:
        """One record, its payload checked against its commitment."""
        with self.store.lock:
            self.store.catch_up()
            return self.store.records([seq])[0]

    def events_at(self, seqs: Sequence[int]) -> list[Event | None]:
        """The events at ``seqs`` in order (None where erased or absent)."""
        with self.store.lock:
            head = self.store.catch_up().seq
            present = sorted({s for s in seqs if type(s) is int and 1 <= s <= head})
            found = {r.seq: r.event for r in self.store.records(present)} if present else {}
        return [found.get(s) for s in seqs]

    def chain_at(self, seq: int) -> bytes:
        """The chain hash stored at ``seq`` (the genesis hash at 0)."""
        if seq == 0:
            return GENESIS
        with self.store.lock:
            self.store.catch_up()
            return self.store.chunk_records([seq])[0].chain

    def stream_version(self, stream: str) -> int:
        """The stream's last version (0 when it does not exist)."""
        with self.store.lock:
            return self.store.catch_up().version(stream)

    def seq_of(self, event_id: str) -> int | None:
        """The seq an event id was appended at."""
        with self.store.lock:
            return self.store.catch_up().ids.get(event_id)

    def seq_at(self, time_us: int) -> int:
        """The last seq recorded at or before ``time_us``."""
        with self.store.lock:
            return self.store.catch_up().seq_at(time_us)

    def head(self) -> Head:
        """The head seq, chain hash and time, as the server has them now."""
        with self.store.lock:
            index = self.store.catch_up()
            return Head(index.seq, index.hash.hex(), index.time, 0)

    def verify(self) -> VerifyResult:
        """Walk the whole chain."""
        return verify.verify(self.store)

    def verify_tail(self, count: int) -> VerifyResult:
        """Check the last ``count`` records."""
        return verify.verify_tail(self.store, count)

    def purge(self, timeout: float) -> PurgeReport:
        """Finish every erasure and wait until every replica applied it."""
        return erase.purge(self.store, timeout)
