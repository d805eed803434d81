"""The embedded LMDB backend of the event log."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ._lmdb_env import SharedEnv, open_shared_env, release_shared_env
from ._lmdb_layout import DB_NAMES, EVENT_IDS, META, STREAMS, read_head_state, seq_of_key
from ._lmdb_read import get_record, header_at, payloads_at, scan_range, scan_stream
from ._lmdb_verify import verify_log
from ._lmdb_write import TxnWriter
from .backend import PreparedAppend, PurgeReport
from .envelope import AppendResult, Head, RecordedEvent, VerifyResult
from .errors import StorageError
from .events import Event
from .purge import purge_env

__all__ = ["LmdbBackend"]

_CHUNK = 4096


def _now_us() -> int:
    return time.time_ns() // 1000


class LmdbBackend:
    """The log in one LMDB environment (see :mod:`eventstore._lmdb_layout`)."""

    def __init__(self, path: Path, *, sync: bool = True, clock: Callable[[], int] = _now_us):
        self.path = path
        self._clock = clock
        self._shared: SharedEnv | None = open_shared_env(path, DB_NAMES, sync=sync)

    @property
    def shared(self) -> SharedEnv:
        """The shared environment; raises once closed."""
        if self._shared is None:
            raise StorageError("the event log is closed")
        return self._shared

    def close(self) -> None:
        """Release this handle's reference to the environment."""
        if self._shared is not None:
            release_shared_env(self._shared)
            self._shared = None

    def append(self, batch: Sequence[PreparedAppend]) -> list[AppendResult]:
        """Append every request in one transaction."""
        def run(txn: Any) -> list[AppendResult]:
            writer = TxnWriter(txn, self.shared.dbs, self._clock)
            results = [writer.apply(req) for req in batch]
            writer.finish()
            return results

        return self.shared.write(run)

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
        return self.shared.read(lambda txn: scan(txn, self.shared.dbs, *args))

    def get(self, seq: int) -> RecordedEvent:
        """One record, its payload checked against its commitment."""
        return self.shared.read(lambda txn: get_record(txn, self.shared.dbs, seq))

    def events_at(self, seqs: Sequence[int]) -> list[Event | None]:
        """The events at ``seqs`` in order (None where erased or absent)."""
        return self.shared.read(lambda txn: payloads_at(txn, self.shared.dbs, seqs))

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
        return self.shared.read(lambda txn: verify_log(txn, self.shared.dbs))

    def purge(self, timeout: float) -> PurgeReport:
        """Compacting copy, swap, zero-fill (see :mod:`eventstore.purge`)."""
        return purge_env(self.shared, timeout)
