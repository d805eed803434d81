"""The NATS JetStream backend of the event log: ``nats://host:port/<stream>``."""

from __future__ import annotations

from .backend import NatsBackend
from .client import MIN_VERSION, NatsUnavailableError, NatsUnsupportedError
from .erase import RAFT_BOUND_SECONDS
from .url import DEFAULT_STREAM, NatsLocation, parse_location

__all__ = [
    "DEFAULT_STREAM",
    "MIN_VERSION",
    "RAFT_BOUND_SECONDS",
    "NatsBackend",
    "NatsLocation",
    "NatsUnavailableError",
    "NatsUnsupportedError",
    "parse_location",
]
