"""Events a projection could not apply: reported, skipped, never fatal.

A record whose payload does not fit the reducers (a value out of a key's
range, a field a reducer cannot take) must not stop every later read. The
views record such a skip in their ``skipped`` database, in the same
transaction as the checkpoint that moves past it; the search index in
``search/skipped`` beside its shards. A skip holds the seq, the event type,
the error class and the projection: never content.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from pathlib import Path

import lmdb
import msgspec

from eventstore import MemlogError
from eventstore.storage import open_private

from . import _log

__all__ = ["Skipped", "add_skips", "error_class", "read_skips", "unapplicable", "warn_skipped"]


class Skipped(msgspec.Struct, frozen=True):
    """An event a projection skipped: its seq, type, the error class, the projection."""

    seq: int
    type: str
    error: str
    projection: str


_decode_list = msgspec.msgpack.Decoder(list[Skipped]).decode


def unapplicable(exc: Exception) -> bool:
    """Whether ``exc``, raised while applying one record, means the record does
    not fit the projection (skip it), rather than the storage failing (raise)."""
    if isinstance(exc, MemlogError | MemoryError | OSError):
        return False  # the store or the machine failing, not the record: raise
    if isinstance(exc, lmdb.Error):
        return isinstance(exc, lmdb.BadValsizeError)  # a key or value too large for LMDB
    return True


def error_class(exc: BaseException) -> str:
    """The class of an error, qualified unless built in (``ValueError``, ``struct.error``)."""
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def warn_skipped(skip: Skipped) -> None:
    """Name the skipped record in the log (no content)."""
    _log.warning("event_skipped", projection=skip.projection, seq=skip.seq, type=skip.type,
                 error=skip.error)


def read_skips(path: Path) -> list[Skipped]:
    """The skips recorded in ``path`` (none when absent or unreadable)."""
    try:
        return _decode_list(path.read_bytes())
    except (OSError, msgspec.DecodeError):
        return []


def add_skips(path: Path, new: Iterable[Skipped]) -> None:
    """Add skips to ``path`` (atomically; one per seq)."""
    merged = {s.seq: s for s in read_skips(path)}
    merged.update((s.seq, s) for s in new)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.write(fd, msgspec.msgpack.encode([merged[k] for k in sorted(merged)]))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
