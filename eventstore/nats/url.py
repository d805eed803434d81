"""Parsing a ``nats://`` log location.

``nats://host:port[,host:port...]/<stream>[?replicas=N&timeout=S]``: the hosts
of one cluster (the client also learns the others from any one of them), the
JetStream stream that holds the log (default ``memlog``), the replica count
used when the stream is created (default: 3 on a cluster, 1 on a single
server) and the timeout of one request in seconds (default 10).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import msgspec

from ..errors import InvalidInputError

__all__ = ["DEFAULT_STREAM", "NatsLocation", "parse_location"]

DEFAULT_STREAM = "memlog"
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_HOST = re.compile(r"[A-Za-z0-9_.\-\[\]:]+\Z")


class NatsLocation(msgspec.Struct, frozen=True):
    """Where a NATS log lives."""

    servers: tuple[str, ...]
    stream: str = DEFAULT_STREAM
    replicas: int | None = None
    timeout: float = 10.0


def parse_location(location: str) -> NatsLocation:
    """Parse ``location``; :class:`InvalidInputError` names what is wrong."""
    parts = urlsplit(location)
    if parts.scheme != "nats":
        raise InvalidInputError(f"not a nats:// location: scheme {parts.scheme!r} (tls:// is not supported)")
    hosts = [h.strip() for h in parts.netloc.split(",") if h.strip()]
    if not hosts or not all(_HOST.match(h) for h in hosts):
        raise InvalidInputError("a nats:// location needs host:port[,host:port...]")
    name = parts.path.strip("/") or DEFAULT_STREAM
    if not _NAME.match(name):
        raise InvalidInputError("the stream name of a nats:// location must match [A-Za-z0-9_-]{1,64}")
    query = parse_qs(parts.query)
    unknown = set(query) - {"replicas", "timeout"}
    if unknown:
        raise InvalidInputError(f"unknown nats:// parameters: {', '.join(sorted(unknown))}")
    number = _number(query, "replicas", int)
    replicas = None if number is None else int(number)
    if replicas is not None and not 1 <= replicas <= 5:
        raise InvalidInputError("replicas must be between 1 and 5")
    timeout = _number(query, "timeout", float)
    if timeout is not None and not 0 < timeout <= 600:
        raise InvalidInputError("timeout must be between 0 and 600 seconds")
    servers = tuple(f"{parts.scheme}://{h}" for h in hosts)
    return NatsLocation(servers, name, replicas, 10.0 if timeout is None else timeout)


def _number(query: dict[str, list[str]], key: str, kind: type[int] | type[float]) -> int | float | None:
    values = query.get(key)
    if not values:
        return None
    try:
        return kind(values[-1])
    except ValueError:
        raise InvalidInputError(f"{key} must be a number") from None
