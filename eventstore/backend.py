"""The backend protocol behind :class:`eventstore.EventLog`.

A backend stores prepared (validated, encoded) appends and gives them back as
:class:`RecordedEvent`. LMDB is the embedded default; a distributed backend
(NATS JetStream >= 2.11) can implement the same protocol. The contract tests in
``tests/eventstore/contract.py`` are written once for any backend.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

import msgspec

from .envelope import AppendResult, Head, RecordedEvent, VerifyResult
from .events import Event

__all__ = ["LogBackend", "PreparedAppend", "PurgeReport"]


class PreparedAppend(msgspec.Struct, frozen=True):
    """An append whose payloads are validated and encoded."""

    stream: str
    types: tuple[str, ...]
    schema_versions: tuple[int, ...]
    payloads: tuple[bytes, ...]
    event_ids: tuple[str, ...]
    client_ids: bool
    actor: str
    expected_version: int | None = None
    causation_id: str | None = None
    correlation_id: str | None = None
    erases: tuple[int, ...] = ()


class PurgeReport(msgspec.Struct, frozen=True):
    """What a physical purge rewrote."""

    files_rewritten: tuple[str, ...]
    bytes_before: int
    bytes_after: int
    bytes_wiped: int
    generation: int
    seconds: float


@runtime_checkable
class LogBackend(Protocol):
    """Storage for the event log."""

    def append(self, batch: Sequence[PreparedAppend]) -> list[AppendResult]:
        """Append every request in one atomic transaction."""
        ...

    def read(self, from_seq: int, to_seq: int | None) -> Iterator[RecordedEvent]:
        """Stream records by seq, inclusive bounds."""
        ...

    def read_stream(self, stream: str, from_version: int) -> Iterator[RecordedEvent]:
        """Stream one stream's records in version order."""
        ...

    def get(self, seq: int) -> RecordedEvent:
        """One record, its payload checked against its commitment."""
        ...

    def events_at(self, seqs: Sequence[int]) -> list[Event | None]:
        """The events at ``seqs`` in order; None where erased or absent."""
        ...

    def chain_at(self, seq: int) -> bytes:
        """The chain hash stored at ``seq`` (the genesis hash at 0);
        :class:`EventNotFoundError` beyond the head."""
        ...

    def stream_version(self, stream: str) -> int:
        """The stream's last version, 0 if it does not exist."""
        ...

    def seq_of(self, event_id: str) -> int | None:
        """The seq of an event id, if it was appended."""
        ...

    def seq_at(self, time_us: int) -> int:
        """The last seq recorded at or before ``time_us`` (0 if none)."""
        ...

    def head(self) -> Head:
        """The current head."""
        ...

    def verify(self) -> VerifyResult:
        """Walk the chain and check every stored byte."""
        ...

    def verify_tail(self, count: int) -> VerifyResult:
        """Check the last ``count`` records as :meth:`verify` checks every one."""
        ...

    def purge(self, timeout: float) -> PurgeReport:
        """Rewrite storage so that erased payloads leave no bytes behind."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...
