"""Envelope types: what the log knows about an event besides its payload.

The envelope (:class:`Header`) never carries content nor anything derived from
it. It is chained and never rewritten; the payload is stored apart and can be
erased.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from .events import Event

__all__ = [
    "AppendRequest",
    "AppendResult",
    "Head",
    "Header",
    "RecordedEvent",
    "VerifyResult",
]


class Header(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """The chained, never-rewritten envelope of one log record."""

    seq: int
    stream: str
    version: int
    id: str
    type: str
    recorded_at: int
    actor: str
    causation_id: str | None = None
    correlation_id: str | None = None
    schema_version: int = 1
    erases: tuple[int, ...] = ()


class RecordedEvent(msgspec.Struct, frozen=True, gc=False):
    """An envelope with its payload; ``event`` is ``None`` once erased."""

    header: Header
    event: Event | None

    @property
    def seq(self) -> int:
        """Global sequence number."""
        return self.header.seq

    @property
    def stream(self) -> str:
        """Stream id."""
        return self.header.stream

    @property
    def version(self) -> int:
        """Version within the stream, from 1."""
        return self.header.version

    @property
    def id(self) -> str:
        """Event id."""
        return self.header.id

    @property
    def type(self) -> str:
        """Catalogue tag."""
        return self.header.type

    @property
    def recorded_at(self) -> int:
        """Transaction time, microseconds since the epoch, UTC."""
        return self.header.recorded_at

    @property
    def actor(self) -> str:
        """Who caused the event."""
        return self.header.actor

    @property
    def erased(self) -> bool:
        """True when the payload has been erased."""
        return self.event is None


class AppendRequest(msgspec.Struct, frozen=True):
    """One atomic append to one stream.

    ``expected_version`` is ``None`` for "any", ``0`` for "the stream must not
    exist yet" and ``n`` for "the stream is at version n".
    """

    stream: str
    events: Sequence[Event]
    actor: str
    expected_version: int | None = None
    event_ids: Sequence[str] | None = None
    causation_id: str | None = None
    correlation_id: str | None = None
    erases: Sequence[int] = ()


class AppendResult(msgspec.Struct, frozen=True):
    """Where an append landed. ``duplicate`` marks an idempotent retry."""

    stream: str
    first_seq: int
    last_seq: int
    version: int
    event_ids: tuple[str, ...]
    recorded_at: int
    duplicate: bool = False


class Head(msgspec.Struct, frozen=True):
    """The log head: last seq, its chain hash (hex) and its time."""

    seq: int
    hash: str
    recorded_at: int
    generation: int


class VerifyResult(msgspec.Struct, frozen=True):
    """The outcome of walking the hash chain."""

    ok: bool
    events: int
    head: int
    first_bad_seq: int | None = None
    problem: str | None = None
    erased: int = 0
