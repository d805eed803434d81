"""Payload segments: the log's erasable payloads, a span of seqs per LMDB environment.

``<log>/seg-NNNNNN/`` holds the payloads (seq -> salt | payload) of seqs
``N * span + 1`` to ``(N + 1) * span``. A purge has to rewrite only the
segments that held erased payloads, not the whole log; the main environment
(headers and indexes) never holds content.

Order of durable writes, so that a crash at any point leaves a consistent log:

- an append commits its payloads to their segments first, then the headers;
  a crash in between leaves payloads after the head, which the next append
  overwrites and a purge removes;
- an erase commits the tombstone first, together with the erased seqs in the
  main ``meta`` (``erasing``), then deletes the payloads and clears the mark;
  readers treat marked seqs as erased, and the next erase or purge finishes
  an interrupted one.

Segments share the main environment's maintenance lock and generation: every
process closes its segments whenever it reopens the main environment.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import lmdb

from ..errors import CorruptionError
from ..storage.files import ensure_private_dir, storage_error
from .layout import seq_key, seq_of_key

__all__ = ["DEFAULT_SPAN", "SegmentReads", "Segments"]

DEFAULT_SPAN = 1 << 16
_INITIAL_MAP = 32 << 20
_MAX_GROWTH_STEP = 8 << 30


class Segments:
    """The payload segments of one log directory, opened lazily, shared by threads."""

    def __init__(self, root: Path, span: int, sync: bool) -> None:
        self.root = root
        self.span = span
        self.sync = sync
        self._envs: dict[int, Any] = {}
        self._lock = threading.Lock()

    def index_of(self, seq: int) -> int:
        """The segment holding ``seq``."""
        return (seq - 1) // self.span

    def path(self, index: int) -> Path:
        """The directory of segment ``index``."""
        return self.root / f"seg-{index:06d}"

    def on_disk(self) -> list[int]:
        """Indexes of the segments that exist, in order."""
        found = []
        for path in self.root.glob("seg-*"):
            suffix = path.name[4:]
            if path.is_dir() and suffix.isdigit():
                found.append(int(suffix))
        return sorted(found)

    def env(self, index: int, create: bool = False) -> Any:
        """The environment of segment ``index``; None if it does not exist and
        ``create`` is False."""
        with self._lock:
            env = self._envs.get(index)
            if env is not None:
                return env
            path = self.path(index)
            if not create and not (path / "data.mdb").exists():
                return None
            ensure_private_dir(path)
            try:
                env = lmdb.open(str(path), map_size=_INITIAL_MAP, max_dbs=0, mode=0o600,
                                sync=self.sync, max_readers=256)
            except lmdb.Error as exc:
                raise storage_error(exc, f"cannot open payload segment {path.name}") from None
            self._envs[index] = env
            return env

    def close(self, index: int | None = None) -> None:
        """Close one segment's environment, or all of them."""
        with self._lock:
            for key in list(self._envs) if index is None else [index]:
                env = self._envs.pop(key, None)
                if env is not None:
                    env.close()

    def write(self, puts: Iterable[tuple[bytes, bytes]], deletes: Iterable[int] = ()) -> set[int]:
        """Put and delete payloads: one durable transaction per segment touched.
        Return the segments where a put replaced a stored payload."""
        groups: dict[int, tuple[list[tuple[bytes, bytes]], list[int]]] = {}
        for key, value in puts:
            groups.setdefault(self.index_of(seq_of_key(key)), ([], []))[0].append((key, value))
        for seq in deletes:
            groups.setdefault(self.index_of(seq), ([], []))[1].append(seq)
        return {index for index in sorted(groups) if self._write_one(index, *groups[index])}

    def _write_one(self, index: int, items: list[tuple[bytes, bytes]], gone: list[int]) -> bool:
        env = self.env(index, create=bool(items))
        if env is None:
            return False  # nothing was ever stored there, so nothing to delete
        while True:
            try:
                with env.begin(write=True) as txn:
                    for seq in gone:
                        txn.delete(seq_key(seq))
                    cursor = txn.cursor()
                    # Anything stored at or after the first new key was left by an
                    # append that never committed, and is about to be replaced.
                    replaces = bool(items) and cursor.set_range(min(items)[0])
                    consumed, _ = cursor.putmulti(items, overwrite=True)
                    if consumed != len(items):
                        raise CorruptionError(f"payload segment {index} refused a write")
                return replaces
            except lmdb.MapFullError:
                size = env.info()["map_size"]
                env.set_mapsize(size + min(size, _MAX_GROWTH_STEP))
            except lmdb.MapResizedError:
                env.set_mapsize(0)
            except lmdb.Error as exc:
                raise storage_error(exc, f"write to payload segment {index} failed") from None

    def drop_after(self, head: int) -> set[int]:
        """Delete payloads after ``head`` (appends that never committed); return
        the segments that held any."""
        touched = set()
        for index in self.on_disk():
            if (index + 1) * self.span <= head:
                continue
            env = self.env(index)
            with env.begin(write=True) as txn:
                cursor = txn.cursor()
                if cursor.set_range(seq_key(head + 1)):
                    while cursor.delete():
                        touched.add(index)
        return touched


class SegmentReads:
    """Read transactions on the segments, for the span of one read operation.

    Begin it after the main read transaction: a header visible there has its
    payload committed already (payloads are committed first).
    """

    def __init__(self, segments: Segments) -> None:
        self.segments = segments
        self._txns: dict[int, Any] = {}

    def __enter__(self) -> SegmentReads:
        return self

    def __exit__(self, *exc: object) -> None:
        for txn in self._txns.values():
            if txn is not None:
                txn.abort()
        self._txns.clear()

    def txn(self, index: int) -> Any:
        """The read transaction on segment ``index`` (None if it does not exist)."""
        if index in self._txns:
            return self._txns[index]
        env = self.segments.env(index)
        txn = None
        if env is not None:
            try:
                txn = env.begin(buffers=True)
            except lmdb.MapResizedError:
                env.set_mapsize(0)
                txn = env.begin(buffers=True)
        self._txns[index] = txn
        return txn

    def get(self, seq: int) -> Any:
        """The stored value of ``seq`` (a buffer valid within the operation), or None."""
        txn = self.txn(self.segments.index_of(seq))
        return None if txn is None else txn.get(seq_key(seq))

    def items(self, start: int, stop: int) -> Iterator[tuple[Any, Any]]:
        """Stored (key, value) pairs with ``start <= seq``, segment after segment,
        up to the segment holding ``stop`` (keys after ``stop`` may follow)."""
        first = seq_key(max(1, start))
        for index in range(self.segments.index_of(max(1, start)), self.segments.index_of(stop) + 1):
            txn = self.txn(index)
            if txn is None:
                continue
            cursor = txn.cursor()
            if cursor.set_range(first):
                yield from cursor.iternext()
