"""Opening a log backend by location, so that :class:`~eventstore.EventLog`
names no backend.

A filesystem path (a ``str`` without a URL scheme, or a ``PathLike``) opens the
embedded LMDB backend; a ``nats://`` location opens the NATS JetStream backend
(:mod:`eventstore.nats`, needs the ``nats`` extra). Other schemes are refused.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .backend import LogBackend
from .errors import InvalidInputError

__all__ = ["is_remote", "open_backend"]

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def open_backend(location: str | os.PathLike[str], *, sync: bool = True, segment_span: int | None = None,
                 lock_timeout: float = 30.0) -> LogBackend:
    """The backend for ``location``: a directory path gives LMDB, ``nats://`` NATS."""
    if isinstance(location, str) and (match := _SCHEME.match(location)):
        if match.group(1).lower() == "nats":
            return _open_nats(location)
        raise InvalidInputError(f"no log backend serves {match.group(1)}:// locations; "
                                "give a directory or a nats:// location")
    # Imported here: the neutral log names no backend at import time.
    from .lmdb import DEFAULT_SPAN, LmdbBackend

    return LmdbBackend(Path(location), sync=sync, lock_timeout=lock_timeout,
                       segment_span=DEFAULT_SPAN if segment_span is None else segment_span)


def is_remote(location: str | os.PathLike[str]) -> bool:
    """True when ``location`` names a server (``nats://``), not a directory."""
    return isinstance(location, str) and location.lower().startswith("nats://")


def _open_nats(location: str) -> LogBackend:
    try:
        from .nats import NatsBackend
    except ImportError:
        raise InvalidInputError("a nats:// log needs the nats extra: pip install 'memlog[nats]'") from None
    return NatsBackend(location)
