"""The public face of the event log: validation in front of a backend."""

from __future__ import annotations

import itertools
import os
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Self

import msgspec

from .backend import LogBackend, PreparedAppend, PurgeReport
from .codec import validate_payloads
from .envelope import AppendRequest, AppendResult, Head, RecordedEvent, VerifyResult
from .errors import InvalidEventError, InvalidInputError, ReadOnlyError, shown
from .events import SCHEMA_VERSIONS, Event
from .factory import is_remote, open_backend
from .timeutil import parse_point, to_micros

__all__ = ["EventLog", "LogBatch", "LogSettings"]

_STREAM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,199}\Z")
_EVENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}\Z")
_ACTOR = re.compile(r"[^\x00-\x1f\x7f]{1,200}\Z")


class LogSettings(msgspec.Struct, frozen=True):
    """Settings of the event log."""

    max_payload_bytes: int = 1 << 20
    sync: bool = True
    purge_lock_timeout: float = 30.0
    segment_span: int | None = None  # seqs per payload segment (backend default), fixed at creation
    read_only: bool = False  # every append, erase and purge raises ReadOnlyError


class EventLog:
    """An append-only, hash-chained, erasable log of events.

    Use ``with EventLog.open(path) as log:``. Every method validates its input
    before anything is written; an invalid call raises a :class:`MemlogError`
    and leaves the log unchanged.
    """

    def __init__(self, backend: LogBackend, settings: LogSettings, local_path: Path | None = None) -> None:
        self.backend = backend
        self.settings = settings
        # The directory of an embedded log opened by path, which another process
        # may open too (a shard rebuild's helper); None for a log on a server.
        self.local_path = local_path

    @classmethod
    def open(cls, path: str | os.PathLike[str], settings: LogSettings | None = None) -> Self:
        """Open (creating if missing) the log at ``path`` (a directory: LMDB)."""
        settings = settings or LogSettings()
        backend = open_backend(path, sync=settings.sync, segment_span=settings.segment_span,
                               lock_timeout=settings.purge_lock_timeout)
        return cls(backend, settings, None if is_remote(path) else Path(path))

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the log (idempotent)."""
        self.backend.close()

    # -- writes -----------------------------------------------------------

    def append(
        self, stream: str, events: Sequence[Event], *, actor: str,
        expected_version: int | None = None, event_ids: Sequence[str] | None = None,
        causation_id: str | None = None, correlation_id: str | None = None,
    ) -> AppendResult:
        """Append ``events`` to ``stream`` atomically.

        Raises:
            ConcurrencyError: the stream is not at ``expected_version``.
            DuplicateEventError: an event id was used by a different append.
            InvalidEventError, SizeLimitError: the input is invalid.
        """
        request = AppendRequest(stream, events, actor, expected_version, event_ids,
                                causation_id, correlation_id)
        return self.append_many([request])[0]

    def append_many(self, requests: Sequence[AppendRequest]) -> list[AppendResult]:
        """Append several requests (any streams) in one transaction."""
        self._check_writable()
        prepared = [self._prepare(r) for r in requests]
        if not prepared:
            return []
        return self.backend.append(prepared)

    @contextmanager
    def batch(self) -> Iterator[LogBatch]:
        """Collect appends and write them in one transaction at the end."""
        batch = LogBatch()
        yield batch
        batch.results = self.append_many(batch.requests)

    def erase(
        self, seqs: Sequence[int], tombstone: Event, *, stream: str, actor: str,
        expected_version: int | None = None, event_id: str | None = None,
    ) -> AppendResult:
        """Delete the payloads of ``seqs`` and append ``tombstone``, atomically."""
        clean = sorted(set(seqs))
        if not clean or any(type(s) is not int or s < 1 for s in clean):
            raise InvalidInputError("erase needs one or more positive seqs")
        request = AppendRequest(stream, [tombstone], actor, expected_version,
                                None if event_id is None else [event_id], erases=clean)
        return self.append_many([request])[0]

    def purge(self) -> PurgeReport:
        """Physically rewrite the log so erased payloads leave no bytes behind."""
        self._check_writable()
        return self.backend.purge(self.settings.purge_lock_timeout)

    def _check_writable(self) -> None:
        if self.settings.read_only:
            raise ReadOnlyError("the store is open read-only; nothing was written")

    # -- reads ------------------------------------------------------------

    def read(self, from_seq: int = 1, to_seq: int | None = None) -> Iterator[RecordedEvent]:
        """Stream records by seq (inclusive bounds). Each payload is checked
        against its commitment; a payload that fails, or that is missing without
        a tombstone, raises :class:`CorruptionError` naming the seq."""
        return self.backend.read(from_seq, to_seq)

    def read_stream(self, stream: str, from_version: int = 1) -> Iterator[RecordedEvent]:
        """Stream one stream's records in version order."""
        _check_stream(stream)
        return self.backend.read_stream(stream, from_version)

    def get(self, seq: int) -> RecordedEvent:
        """One record; its payload is checked against its commitment."""
        return self.backend.get(seq)

    def events_at(self, seqs: Sequence[int]) -> list[Event | None]:
        """The events stored at ``seqs``, in the order given: one read
        transaction for the batch, each payload checked against its commitment
        (like every read). None where the payload was erased or the seq does
        not exist; :class:`CorruptionError` naming the seq where a payload does
        not match or was lost without a tombstone."""
        return self.backend.events_at(seqs)

    def chain_at(self, seq: int) -> bytes:
        """The chain hash stored at ``seq`` (32 bytes; the genesis hash, all
        zeros, at 0). Headers are never rewritten, so the hash at a seq never
        changes while other processes append after it: a caller that verified
        the chain up to ``seq`` can check cheaply that it still holds.

        Raises:
            EventNotFoundError: ``seq`` is beyond the head.
            InvalidInputError: ``seq`` is not an int >= 0.
        """
        if type(seq) is not int or seq < 0:
            raise InvalidInputError(f"a seq is an int >= 0, not {shown(seq)}")
        return self.backend.chain_at(seq)

    def stream_version(self, stream: str) -> int:
        """The stream's last version (0 if it does not exist)."""
        _check_stream(stream)
        return self.backend.stream_version(stream)

    def seq_of(self, event_id: str) -> int | None:
        """The seq at which an event id was appended, if any."""
        return self.backend.seq_of(event_id)

    def seq_at(self, time: datetime | str | int) -> int:
        """The last seq recorded at or before ``time`` (0 if none)."""
        return self.backend.seq_at(to_micros(time))

    def resolve_point(self, point: datetime | str | int) -> int:
        """The seq a point names (``@N``, an int seq, or a time: the last seq
        recorded at or before it), checked to lie within the log."""
        seq, when = parse_point(point)
        head = self.backend.head().seq
        if seq is None:
            seq = self.backend.seq_at(when or 0)
        if seq > head:
            raise InvalidInputError(f"seq {seq} is outside the log (head is {head})")
        return seq

    def head(self) -> Head:
        """The head: last seq, chain hash, time and generation."""
        return self.backend.head()

    def verify(self) -> VerifyResult:
        """Walk the chain; ``ok`` is False with ``first_bad_seq`` on tampering."""
        return self.backend.verify()

    def verify_tail(self, count: int = 1000) -> VerifyResult:
        """Check the last ``count`` records only (chain links, commitments,
        erasures, the head): a check cheap at any size, for health reports."""
        if type(count) is not int or count < 1:
            raise InvalidInputError("count must be a positive integer")
        return self.backend.verify_tail(count)

    # -- validation -------------------------------------------------------

    def _prepare(self, req: AppendRequest) -> PreparedAppend:
        _check_stream(req.stream)
        if not isinstance(req.actor, str) or not _ACTOR.match(req.actor):
            raise InvalidEventError("actor must be 1-200 printable characters")
        _check_expected(req.expected_version)
        events = list(req.events)
        if not events:
            raise InvalidEventError(f"an append to {req.stream} needs at least one event")
        if req.erases and len(events) != 1:
            raise InvalidEventError("an erasing append carries exactly one tombstone event")
        payloads = validate_payloads(events, self.settings.max_payload_bytes)
        types = tuple([e.__struct_config__.tag for e in events])
        ids, client = _event_ids(req.event_ids, len(events))
        for optional in (req.causation_id, req.correlation_id):
            if optional is not None:
                _check_id(optional, "causation/correlation id")
        return PreparedAppend(
            stream=req.stream, types=types,  # type: ignore[arg-type]
            schema_versions=tuple([SCHEMA_VERSIONS[t] for t in types]),  # type: ignore[index]
            payloads=payloads, event_ids=ids, client_ids=client, actor=req.actor,
            expected_version=req.expected_version, causation_id=req.causation_id,
            correlation_id=req.correlation_id, erases=tuple(req.erases),
        )


class LogBatch:
    """Appends collected by :meth:`EventLog.batch`; results after the block."""

    def __init__(self) -> None:
        self.requests: list[AppendRequest] = []
        self.results: list[AppendResult] = []

    def append(self, stream: str, events: Sequence[Event], *, actor: str,
               expected_version: int | None = None,
               event_ids: Sequence[str] | None = None) -> None:
        """Queue one append for the batch's transaction."""
        self.requests.append(AppendRequest(stream, events, actor, expected_version, event_ids))


def _check_stream(stream: object) -> None:
    if not isinstance(stream, str) or not _STREAM.match(stream):
        raise InvalidEventError(
            f"invalid stream id {shown(stream)}: use letters, digits and . _ : @ + - (max 200)"
        )


def _check_id(value: object, what: str) -> None:
    if not isinstance(value, str) or not _EVENT_ID.match(value):
        raise InvalidEventError(f"invalid {what} {shown(value)}: use letters, digits and . _ : @ + -")


def _check_expected(expected: object) -> None:
    if expected is None:
        return
    if type(expected) is not int or expected < 0:
        raise InvalidEventError(f"expected_version must be None or an int >= 0, not {shown(expected)}")


# A generated id's tail: a random base drawn once per process (again in a
# forked child) plus the number of the call, so that two calls never share one
# (a draw from the OS per call cost a single append 1.4 us).
_TAIL_MASK = (1 << 48) - 1
_tail_base = int.from_bytes(os.urandom(6))
_calls = itertools.count()


def _redraw_tail_base() -> None:
    global _tail_base
    _tail_base = int.from_bytes(os.urandom(6))


os.register_at_fork(after_in_child=_redraw_tail_base)


def _event_ids(given: Sequence[str] | None, count: int) -> tuple[tuple[str, ...], bool]:
    if given is None:
        # Time-ordered ids (time | index in the call | tail, 32 hex) keep the id
        # index's inserts near its end instead of scattered over the B-tree.
        now, tail = time.time_ns() // 1000, (_tail_base + next(_calls)) & _TAIL_MASK
        if count == 1:
            return (f"{now:014x}000000{tail:012x}",), False
        return tuple([f"{now:014x}{i:06x}{tail:012x}" for i in range(count)]), False
    ids = tuple(given)
    if len(ids) != count:
        raise InvalidEventError(f"{len(ids)} event ids given for {count} events")
    for eid in ids:
        _check_id(eid, "event id")
    if len(set(ids)) != len(ids):
        raise InvalidEventError("event ids within one append must be distinct")
    return ids, True
