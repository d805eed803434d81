"""Opening a log backend by location, so that :class:`~eventstore.EventLog`
names no backend.

A filesystem path (a ``str`` without a URL scheme, or a ``PathLike``) opens the
embedded LMDB backend. Other schemes are refused until a backend serves them
(the scale-out issue adds ``nats://``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .backend import LogBackend
from .errors import InvalidInputError

__all__ = ["open_backend"]

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def open_backend(location: str | os.PathLike[str], *, sync: bool = True, segment_span: int | None = None,
                 lock_timeout: float = 30.0) -> LogBackend:
    """The backend for ``location``: a directory path gives LMDB."""
    if isinstance(location, str) and (match := _SCHEME.match(location)):
        raise InvalidInputError(f"no log backend serves {match.group(1)}:// locations; give a directory")
    # Imported here: the neutral log names no backend at import time.
    from .lmdb import DEFAULT_SPAN, LmdbBackend

    return LmdbBackend(Path(location), sync=sync, lock_timeout=lock_timeout,
                       segment_span=DEFAULT_SPAN if segment_span is None else segment_span)
