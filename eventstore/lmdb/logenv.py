"""The log's shared environment: the main LMDB environment plus its payload segments.

Also the upkeep that spans both: finishing erasures (the payload deletions
that follow a committed tombstone), moving the payloads of a format 1 log,
which kept them in the main environment, into segments, and bringing a format
2 log to format 3 (the ``erased`` database and the segments' append marks).

Opening it checks the log's shape: the main data file (see
:mod:`eventstore.storage.env`; a directory holding payload segments holds a
log, so its main data file must exist too), and the head against the segments
(:mod:`.headcheck`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lmdb

from ..chain import HASH_SIZE
from ..codec import decode_header
from ..errors import CorruptionError
from ..storage.env import SharedEnv, open_shared_env
from ..storage.shape import lmdb_error
from .headcheck import check_head
from .layout import (
    DB_NAMES,
    ERASED,
    ERASING,
    FORMAT_VERSION,
    HEADERS,
    META,
    PAYLOADS,
    SPAN,
    read_head_state,
    read_int_set,
    seq_key,
    seq_of_key,
    stored_format,
    write_int_set,
)
from .segments import DEFAULT_SPAN, Segments

__all__ = [
    "LogEnv",
    "finish_erasures",
    "migrate_payloads",
    "needs_migration",
    "needs_upgrade",
    "open_log_env",
    "upgrade_to_format_3",
]

_MIGRATE_BATCH = 20_000


class LogEnv(SharedEnv):
    """The main environment of a log and its payload segments (same lock and
    generation: a reopen closes the segments too)."""

    def __init__(self, path: Path, db_names: tuple[bytes, ...], sync: bool,
                 span: int = DEFAULT_SPAN) -> None:
        self.segments = Segments(path, span, sync)
        self._new_span = span
        super().__init__(path, db_names, sync)

    def _open(self) -> None:
        super()._open()
        self.segments.close()
        self.segments.required_upto = -1
        self._checked(self._read_shape)

    def _read_shape(self) -> None:
        self.segments.span = self._stored_span()
        with self.env.begin() as txn:
            current = stored_format(txn, self.dbs[META]) >= FORMAT_VERSION
        if current:  # older logs are checked once they are upgraded
            check_head(self.env, self.dbs, self.segments, self.data_file)

    def check_shape(self) -> None:
        """Check the head against the segments (:func:`.headcheck.check_head`)."""
        with self.lock.shared():
            self._checked(lambda: check_head(self.env, self.dbs, self.segments, self.data_file))

    def _checked(self, fn: Callable[[], None]) -> None:
        """Run a check on the freshly opened environment; on any failure close
        it, and name the main data file for what LMDB found corrupt in it."""
        try:
            while True:
                try:
                    fn()
                    return
                except lmdb.MapResizedError:  # another process grew the map since the open
                    self.env.set_mapsize(0)
        except CorruptionError as exc:
            self.close_env()
            raise self._located(exc) from None
        except lmdb.Error as exc:
            self.close_env()
            raise lmdb_error(exc, "cannot read the log's meta", self.data_file) from None
        except BaseException:
            self.close_env()
            raise

    def _must_exist(self) -> str | None:
        reason = super()._must_exist()
        if reason is None and self.segments.on_disk():
            reason = "its directory holds payload segments, so it holds a log"
        return reason

    def close_env(self) -> None:
        """Close the segments and the main environment."""
        self.segments.close()
        super().close_env()

    def _stored_span(self) -> int:
        """The log's segment span; fixed when the log is first opened."""
        meta = self.dbs[META]
        with self.env.begin() as txn:
            raw = txn.get(SPAN, db=meta)
        if raw is not None:
            return seq_of_key(raw)
        with self.env.begin(write=True) as txn:
            raw = txn.get(SPAN, db=meta)
            if raw is None:
                fresh = read_head_state(txn, meta).seq == 0
                raw = seq_key(self._new_span if fresh else DEFAULT_SPAN)
                txn.put(SPAN, raw, db=meta)
            return seq_of_key(raw)


def open_log_env(path: Path, *, sync: bool, span: int = DEFAULT_SPAN) -> LogEnv:
    """The process-wide :class:`LogEnv` of ``path``."""
    factory = functools.partial(LogEnv, span=span)
    shared = open_shared_env(path, DB_NAMES, sync=sync, factory=factory)
    assert isinstance(shared, LogEnv)
    return shared


def finish_erasures(shared: LogEnv) -> set[int]:
    """Delete the payloads of seqs whose tombstone is committed, then clear the
    mark; return the seqs done. Safe to repeat and to run in several processes."""
    def run(txn: Any) -> set[int]:
        todo = read_int_set(txn, shared.dbs[META], ERASING)
        if todo:
            shared.segments.write((), todo)
        return todo

    done = shared.read(run)
    if done:
        def clear(txn: Any) -> None:
            meta = shared.dbs[META]
            write_int_set(txn, meta, ERASING, read_int_set(txn, meta, ERASING) - done)

        shared.write(clear)
    return done


def needs_migration(shared: LogEnv) -> bool:
    """True when payloads still sit in the main environment (format 1)."""
    return bool(shared.read(lambda txn: txn.stat(shared.dbs[PAYLOADS])["entries"]))


def migrate_payloads(shared: LogEnv) -> int:
    """Copy every payload of the main environment into its segment, then empty
    the main ``payloads`` database; return how many moved. The caller holds the
    maintenance lock exclusive and compacts the main environment afterwards,
    since its freed pages still hold the moved bytes."""
    moved = 0
    start = seq_key(1)  # seqs start at 1; key 0 is a segment's append mark
    while True:
        batch = shared.read(functools.partial(_payload_batch, db=shared.dbs[PAYLOADS], start=start))
        if not batch:
            break
        shared.segments.write(batch)
        moved += len(batch)
        start = batch[-1][0] + b"\x00"

    def finish(txn: Any) -> None:
        txn.drop(shared.dbs[PAYLOADS], delete=False)
        txn.put(b"format", seq_key(2), db=shared.dbs[META])

    shared.write(finish)
    return moved


def needs_upgrade(shared: LogEnv) -> bool:
    """True when the log predates format 3."""
    return bool(shared.read(lambda txn: stored_format(txn, shared.dbs[META]) < FORMAT_VERSION))


def upgrade_to_format_3(shared: LogEnv) -> int:
    """Fill ``erased`` from the tombstone headers, mark the segments at or after
    the head's with the head, then record format 3 (one transaction, so a crash
    leaves format 2 and the next open does it again); return how many seqs were
    erased. The caller holds the maintenance lock exclusive, then checks the
    log's shape (:meth:`LogEnv.check_shape`)."""
    head = shared.read(lambda txn: read_head_state(txn, shared.dbs[META]).seq)
    segments = shared.segments
    for index in segments.on_disk():
        if index >= segments.index_of(max(head, 1)) and segments.mark(index) is None:
            segments.set_mark(index, head)

    def fill(txn: Any) -> int:
        erased: set[int] = set()
        for key, value in txn.cursor(db=shared.dbs[HEADERS]):
            erased.update(decode_header(value[2 * HASH_SIZE:], seq_of_key(key)).erases)
        cursor = txn.cursor(db=shared.dbs[ERASED])
        cursor.putmulti([(seq_key(seq), b"") for seq in sorted(erased)])
        txn.put(b"format", seq_key(FORMAT_VERSION), db=shared.dbs[META])
        return len(erased)

    return shared.write(fill)


def _payload_batch(txn: Any, db: Any, start: bytes) -> list[tuple[bytes, bytes]]:
    cursor = txn.cursor(db=db)
    if not cursor.set_range(start):
        return []
    batch = []
    for key, value in cursor.iternext():
        batch.append((bytes(key), bytes(value)))
        if len(batch) >= _MIGRATE_BATCH:
            break
    return batch
