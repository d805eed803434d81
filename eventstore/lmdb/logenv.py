"""The log's shared environment: the main LMDB environment plus its payload segments.

Also the two pieces of upkeep that span both: finishing erasures (the
payload deletions that follow a committed tombstone) and moving the payloads of
a format 1 log, which kept them in the main environment, into segments.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from ..storage.env import SharedEnv, open_shared_env
from .layout import (
    DB_NAMES,
    ERASING,
    FORMAT_VERSION,
    META,
    PAYLOADS,
    SPAN,
    read_head_state,
    read_int_set,
    seq_key,
    seq_of_key,
    write_int_set,
)
from .segments import DEFAULT_SPAN, Segments

__all__ = ["LogEnv", "finish_erasures", "migrate_payloads", "needs_migration", "open_log_env"]

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
        self.segments.span = self._stored_span()

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
    start = b""
    while True:
        batch = shared.read(functools.partial(_payload_batch, db=shared.dbs[PAYLOADS], start=start))
        if not batch:
            break
        shared.segments.write(batch)
        moved += len(batch)
        start = batch[-1][0] + b"\x00"

    def finish(txn: Any) -> None:
        txn.drop(shared.dbs[PAYLOADS], delete=False)
        txn.put(b"format", seq_key(FORMAT_VERSION), db=shared.dbs[META])

    shared.write(finish)
    return moved


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
