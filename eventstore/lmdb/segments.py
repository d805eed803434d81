"""Payload segments: the log's erasable payloads, a span of seqs per LMDB environment.

``<log>/seg-NNNNNN/`` holds the payloads (seq -> salt | payload) of seqs
``N * span + 1`` to ``(N + 1) * span``. A purge has to rewrite only the
segments that held erased payloads, not the whole log; the main environment
(headers and indexes) never holds content.

Order of durable writes, so that a crash at any point leaves a consistent log:

- an append commits its payloads to their segments first, then the headers;
  a crash in between leaves payloads after the head, which the next append
  overwrites and a purge removes. With its payloads it stores, in each
  segment it writes, its *append mark* (key :data:`MARK`): the head it
  started from. A mark beyond the main environment's head proves that the
  main environment lost commits (:mod:`.headcheck`);
- an erase commits the tombstone first, together with the erased seqs in the
  main ``erased`` database and ``meta`` (``erasing``), then deletes the
  payloads and clears ``erasing``; readers treat erased seqs as erased, and
  the next erase or purge finishes an interrupted one.

Segments share the main environment's maintenance lock and generation: every
process closes its segments whenever it reopens the main environment.
"""

from __future__ import annotations

import bisect
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import lmdb

from ..errors import CorruptionError, StorageError
from ..storage.files import ensure_private_dir
from ..storage.shape import check_data_file, lmdb_error
from .layout import META, RECENT, seq_key, seq_of_key
from .recent import read_sealed, reveal

__all__ = ["DEFAULT_SPAN", "KEY", "MARK", "SegmentReads", "Segments"]

DEFAULT_SPAN = 1 << 16
# Key of a segment's append mark: the head the last append writing to the
# segment started from. Eight zero bytes sort before every seq (seqs start at 1).
MARK = seq_key(0)
# Key of the segment's key, which conceals the recent payloads of its seqs
# (:mod:`.recent`); sorts after the mark and before every seq.
KEY = MARK + b"k"
_FIRST = seq_key(1)
_INITIAL_MAP = 32 << 20
_MAX_GROWTH_STEP = 8 << 30
T = TypeVar("T")


class Segments:
    """The payload segments of one log directory, opened lazily, shared by threads.

    A segment's data file is checked before it is mapped
    (:func:`~eventstore.storage.shape.check_data_file`). It must exist when the
    segment's directory does and the segment holds a seq at or below the head
    the log had when it was opened (:attr:`required_upto`): a segment after it
    may be the half-created leftover of an append that never committed.
    """

    def __init__(self, root: Path, span: int, sync: bool) -> None:
        self.root = root
        self.span = span
        self.sync = sync
        self.required_upto = -1  # segments 0..required_upto must exist
        self._envs: dict[int, Any] = {}
        self._keys: dict[int, bytes] = {}
        self._lock = threading.Lock()
        # The stored bytes (salt | payload) of recent payloads this process
        # committed, by seq key: a seal and a read take them from here instead
        # of revealing them (:meth:`reveal`; kept by :mod:`.backend`).
        self.own_recent: dict[bytes, bytes] = {}

    def index_of(self, seq: int) -> int:
        """The segment holding ``seq``."""
        return (seq - 1) // self.span

    def path(self, index: int) -> Path:
        """The directory of segment ``index``."""
        return self.root / f"seg-{index:06d}"

    def data_file(self, index: int) -> Path:
        """The data file of segment ``index`` (what errors name)."""
        return self.path(index) / "data.mdb"

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
            data = self.data_file(index)
            must = None
            if index <= self.required_upto and data.parent.is_dir():
                # (a segment whose seqs were all erased may never have been written:
                # the log's open checks that every other one exists)
                must = "the log's head lies in or after this segment"
            try:
                checked = check_data_file(data, must_exist=must)
            except CorruptionError:
                if must is not None:
                    raise
                checked = None  # an append may be creating it now: check again once opened
            if checked is False and not create:
                return None
            env = self._open(data, recheck=checked is None)
            self._envs[index] = env
            return env

    def _open(self, data: Path, recheck: bool) -> Any:
        """Open a segment's environment. With ``recheck``, check the data file
        again once LMDB's lock is held (a creator finishes its first pages
        before another process's open returns), before any page is read."""
        ensure_private_dir(data.parent)
        try:
            env = lmdb.open(str(data.parent), map_size=_INITIAL_MAP, max_dbs=0, mode=0o600,
                            sync=self.sync, max_readers=256)
        except lmdb.Error as exc:
            raise lmdb_error(exc, "cannot open the payload segment", data) from None
        if recheck:
            try:
                check_data_file(data, must_exist="it was found before it was opened")
            except CorruptionError:
                env.close()
                raise
        return env

    def close(self, index: int | None = None) -> None:
        """Close one segment's environment, or all of them (and, with them,
        forget this process's copies of recent payloads)."""
        with self._lock:
            if index is None:
                self.own_recent.clear()
            for key in list(self._envs) if index is None else [index]:
                self._keys.pop(key, None)
                env = self._envs.pop(key, None)
                if env is not None:
                    env.close()

    def mark(self, index: int) -> int | None:
        """The append mark of segment ``index`` (the head its last append
        started from); None when the segment or its mark does not exist."""
        raw = self._read(index, lambda txn: txn.get(MARK))
        return None if raw is None else seq_of_key(raw)

    def last_seq(self, index: int) -> int:
        """The highest seq stored in segment ``index`` (0 when none)."""
        def last(txn: Any) -> bytes | None:
            cursor = txn.cursor()
            return bytes(cursor.key()) if cursor.last() else None

        raw = self._read(index, last)
        return 0 if raw is None or raw < _FIRST else seq_of_key(raw)

    def key_of(self, seq: int) -> bytes:
        """The key concealing ``seq``'s recent payload; CorruptionError when lost."""
        index = self.index_of(seq)
        key = self.key(index)
        if key is None:
            raise CorruptionError(
                f"{self.data_file(index)} lacks the key of the recent payload of seq {seq}", seq=seq)
        return key

    def reveal(self, key: bytes, value: Any) -> bytes:
        """The stored payload (salt | payload) of the recent value at seq key
        ``key``: this process's copy when it committed the payload (a committed
        seq's payload never changes, so the copy is exact), else revealed under
        the key of its segment."""
        own = self.own_recent.get(key)
        return own if own is not None else self.reveal_stored(key, value)

    def reveal_stored(self, key: bytes, value: Any) -> bytes:
        """The stored payload of the recent value at seq key ``key``, revealed
        under the key of its segment (what a verify checks)."""
        return reveal(self.key_of(seq_of_key(key)), value)

    def key(self, index: int, create: bool = False) -> bytes | None:
        """The key of segment ``index`` (:data:`KEY`); with ``create``, made and
        committed durably when it has none."""
        found = self._keys.get(index)
        if found is None:
            found = self._read(index, lambda txn: txn.get(KEY))
        if found is None and create:
            fresh = secrets.token_bytes(32)

            def make(txn: Any) -> bytes:
                old = txn.get(KEY)
                if old is not None:
                    return bytes(old)
                txn.put(KEY, fresh)
                return fresh

            found = self._in_write(index, self.env(index, create=True), make)
        if found is not None:
            self._keys[index] = found
        return found

    def drop_key(self, index: int) -> None:
        """Delete the key of segment ``index`` (a purge, before its compacting copy)."""
        env = self.env(index)
        if env is not None and self.key(index) is not None:
            self._in_write(index, env, lambda txn: txn.delete(KEY))
        self._keys.pop(index, None)

    def payload(self, seq: int) -> bytes | None:
        """The stored value of ``seq`` (outside any read operation), or None."""
        return self._read(self.index_of(seq), lambda txn: txn.get(seq_key(seq)))

    def _read(self, index: int, fn: Callable[[Any], bytes | None]) -> bytes | None:
        """``fn(txn)`` in a read transaction on segment ``index``, as bytes;
        None when the segment does not exist."""
        env = self.env(index)
        if env is None:
            return None
        try:
            try:
                txn = env.begin()
            except lmdb.MapResizedError:
                env.set_mapsize(0)
                txn = env.begin()
            with txn:
                raw = fn(txn)
                return None if raw is None else bytes(raw)
        except lmdb.Error as exc:
            raise lmdb_error(exc, "cannot read the payload segment", self.data_file(index)) from None

    def write(self, puts: Iterable[tuple[bytes, bytes]], deletes: Iterable[int] = (),
              base: int | None = None) -> set[int]:
        """Put and delete payloads: one durable transaction per segment touched.
        ``base``, the head an append starts from, is stored as the mark of every
        segment it puts payloads in. Return the segments where a put replaced a
        stored payload."""
        if not puts and not deletes:  # (a small append: its payloads are in ``recent``)
            return set()
        groups: dict[int, tuple[list[tuple[bytes, bytes]], list[int]]] = {}
        for index, part in self._split(puts):
            groups[index] = (part, [])
        for seq in deletes:
            groups.setdefault(self.index_of(seq), ([], []))[1].append(seq)
        return {index for index in sorted(groups) if self._write_one(index, *groups[index], base)}

    def _split(self, puts: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple[int, list[tuple[bytes, bytes]]]]:
        """(segment, its puts) of ``puts``, sorted by key first: a slice per
        segment, found by bisection (not a lookup per payload)."""
        items = sorted(puts)  # already in order: a linear check
        start = 0
        while start < len(items):
            index = self.index_of(seq_of_key(items[start][0]))
            end = bisect.bisect_left(items, (seq_key((index + 1) * self.span + 1),), lo=start)
            yield index, items[start:end]
            start = end

    def _write_one(self, index: int, items: list[tuple[bytes, bytes]], gone: list[int],
                   base: int | None) -> bool:
        env = self.env(index, create=bool(items))
        if env is None:
            return False  # nothing was ever stored there, so nothing to delete
        return self._in_write(index, env, lambda txn: self._apply(txn, index, items, gone, base))

    def set_mark(self, index: int, base: int) -> None:
        """Store ``base`` as the append mark of existing segment ``index``."""
        env = self.env(index)
        if env is not None:
            self._in_write(index, env, lambda txn: txn.put(MARK, seq_key(base)))

    def _in_write(self, index: int, env: Any, fn: Callable[[Any], T]) -> T:
        """``fn(txn)`` in one durable write transaction; grow the map when full."""
        while True:
            try:
                with env.begin(write=True) as txn:
                    return fn(txn)
            except lmdb.MapFullError:
                size = env.info()["map_size"]
                env.set_mapsize(size + min(size, _MAX_GROWTH_STEP))
            except lmdb.MapResizedError:
                env.set_mapsize(0)
            except lmdb.Error as exc:
                raise lmdb_error(exc, f"write to payload segment {index} failed",
                                 self.data_file(index)) from None

    @staticmethod
    def _apply(txn: Any, index: int, items: list[tuple[bytes, bytes]], gone: list[int],
               base: int | None) -> bool:
        for seq in gone:
            txn.delete(seq_key(seq))
        if not items:
            return False
        if base is not None:
            txn.put(MARK, seq_key(base))
        cursor = txn.cursor()
        # Anything stored at or after the first new key was left by an
        # append that never committed, and is about to be replaced.
        replaces = bool(cursor.set_range(min(items)[0]))
        consumed, _ = cursor.putmulti(items, overwrite=True)
        if consumed != len(items):
            raise CorruptionError(f"payload segment {index} refused a write")
        return replaces

    def drop_after(self, head: int) -> set[int]:
        """Delete payloads after ``head`` (appends that never committed); return
        the segments that held any."""
        touched = set()
        for index in self.on_disk():
            if (index + 1) * self.span <= head:
                continue
            env = self.env(index)
            if env is None:
                continue  # a segment an append began to create: nothing in it
            try:
                with env.begin(write=True) as txn:
                    cursor = txn.cursor()
                    if cursor.set_range(seq_key(head + 1)):
                        while cursor.delete():
                            touched.add(index)
            except lmdb.Error as exc:
                raise lmdb_error(exc, "cannot drop payloads after the head",
                                 self.data_file(index)) from None
        return touched


class SegmentReads:
    """Read transactions on the segments, for the span of one read operation.

    Begin it after the main read transaction: a header visible there has its
    payload committed already (payloads are committed first). Given that
    transaction (``main``, with the main databases ``dbs``), the payloads of
    seqs after meta ``sealed`` come from ``recent`` (:mod:`.recent`).
    """

    def __init__(self, segments: Segments, main: Any = None, dbs: dict[bytes, Any] | None = None,
                 own_copies: bool = True) -> None:
        self.segments = segments
        # ``own_copies``: a recent payload this process committed is read from
        # its copy (``Segments.own_recent``); a verify reveals the stored bytes.
        self._reveal = segments.reveal if own_copies else segments.reveal_stored
        self._txns: dict[int, Any] = {}
        self._main = main
        self._recent = None if dbs is None else dbs[RECENT]
        self.sealed = None if main is None or dbs is None else read_sealed(main, dbs[META])

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
                try:
                    txn = env.begin(buffers=True)
                except lmdb.MapResizedError:
                    env.set_mapsize(0)
                    txn = env.begin(buffers=True)
            except lmdb.Error as exc:
                raise self.error(exc, index) from None
        self._txns[index] = txn
        return txn

    def get(self, seq: int) -> Any:
        """The stored value of ``seq`` (a buffer valid within the operation), or None."""
        if self.sealed is not None and seq > self.sealed:
            key = seq_key(seq)
            raw = self._main.get(key, db=self._recent)
            return None if raw is None else self._reveal(key, raw)
        index = self.segments.index_of(seq)
        txn = self.txn(index)
        if txn is None:
            return None
        try:
            return txn.get(seq_key(seq))
        except lmdb.Error as exc:
            raise self.error(exc, index) from None

    def items(self, start: int, stop: int) -> Iterator[tuple[Any, Any]]:
        """Stored (key, value) pairs with ``start <= seq``, segment after segment,
        up to the segment holding ``stop`` (keys after ``stop`` may follow), then
        the recent ones."""
        sealed = self.sealed
        if sealed is None:
            yield from self._segment_items(start, stop)
            return
        if start <= sealed:
            limit = seq_key(sealed)
            for key, value in self._segment_items(start, min(stop, sealed)):
                if bytes(key) > limit:  # a copy left by a seal that never committed
                    break
                yield key, value
        yield from ((seq_key(seq), value) for seq, value in self.recent_items(max(start, sealed + 1)))

    def recent_items(self, start: int = 1) -> Iterator[tuple[int, bytes]]:
        """The recent payloads from seq ``start`` on, revealed, as (seq, stored)."""
        if self.sealed is None:
            return
        cursor = self._main.cursor(db=self._recent)
        if cursor.set_range(seq_key(start)):
            reveal_recent = self._reveal
            for key, value in cursor.iternext():
                key = bytes(key)
                yield seq_of_key(key), reveal_recent(key, value)

    def _segment_items(self, start: int, stop: int) -> Iterator[tuple[Any, Any]]:
        first = seq_key(max(1, start))
        for index in range(self.segments.index_of(max(1, start)), self.segments.index_of(stop) + 1):
            txn = self.txn(index)
            if txn is None:
                continue
            try:
                cursor = txn.cursor()
                if cursor.set_range(first):
                    yield from cursor.iternext()
            except lmdb.Error as exc:
                raise self.error(exc, index) from None

    def error(self, exc: lmdb.Error, index: int) -> StorageError:
        """An LMDB error met on segment ``index``, as a memlog error naming its file."""
        return lmdb_error(exc, "cannot read the payload segment", self.segments.data_file(index))
