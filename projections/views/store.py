"""The views projection: temporal current-state views in their own LMDB environment.

The views hold no entry content: ``entries`` and ``deleted`` store
:class:`~projections.models.StoredEntry` values, and a read scope reads each
entry from the log payload at its ``source_seq`` through the ``events_at``
given to the store. They still hold memory values and session metadata.

Databases (see :mod:`projections.views.keys` for the temporal key layout):

- ``entries`` (content-free entry versions), ``sessions``, ``memories``, ``access``,
  ``params``: temporal;
- ``session_stats``: seed 000's manifest statistics, current;
- ``by_session``: session | occurred_at | entry id -> kind (recent messages, tasks);
- ``by_time``: occurred_at | entry id -> session id (retention, criteria);
- ``derived``: parent id | child id (deletion follows ``derived_from``);
- ``by_seq``: recorded seq -> kind, importance, occurred_at | entry id (search hits name
  entries by seq and are ranked from this value alone);
- ``by_hash``: crc32(entry id) | entry id (a search shard's rebuild reads its range);
- ``archived``: ids of the sessions archived now (left out of default search);
- ``memory_ids``: memory id -> user | key;
- ``deleted``: entry id -> the deleted entry's tombstone version (its versions are gone);
- ``deletions``: the deletion ledger; ``stats``: global counters;
- ``skipped``: seq -> the events the views could not apply (:class:`~projections.Skipped`);
- ``summarised``: temporal, entry id -> the id of the summary that stands for it
  in the context (``session.summarised``, ``summary.resummarised``; ids only);
- ``resources``: temporal; ``spec:<id>`` the declared spec, ``key:<key>`` a
  resource instance's items (ids only), ``activity`` the last flush and eviction;
- ``formation``: lessons by scope, the extraction backlog, reinforcement tallies
  (ids and counts; see :mod:`projections.views.formation`);
- ``upkeep``: lessons by scope and age, checkpoints by user and session, the
  ephemeral sessions (ids, labels and counts; see :mod:`projections.views.upkeep`);
- ``meta``: the checkpoint (last applied seq), written in the same transaction.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import lmdb
import msgspec

from eventstore import RecordedEvent, StorageError
from eventstore.storage import SharedEnv, open_shared_env, release_shared_env

from .._skips import Skipped, error_class, unapplicable, warn_skipped
from .apply import ViewWriter
from .keys import u64, unpack_u64
from .read import EventsAt, ViewReader

__all__ = ["VIEW_DBS", "ViewStore"]

VIEW_DBS = (
    b"entries", b"sessions", b"memories", b"access", b"params", b"session_stats",
    b"by_session", b"by_time", b"derived", b"memory_ids", b"deletions", b"stats", b"meta",
    b"deleted", b"by_seq", b"archived", b"by_hash", b"skipped",
    # -- compaction and summaries --
    b"summarised",
    # -- memory resources --
    b"resources",
    # -- formation --
    b"formation",
    # -- upkeep --
    b"upkeep",
    b"keyed",  # a user's current preference of each key (projections.views.keyed)
)

Records = Callable[[int], Iterable[RecordedEvent]]


class ViewStore:
    """The views environment: apply records, read as of any seq.

    ``events_at`` is the log's batch read (:meth:`eventstore.EventLog.events_at`):
    readers get each entry from the payload at its source seq. Applying records
    never calls it.
    """

    def __init__(self, path: Path, *, events_at: EventsAt, sync: bool = True) -> None:
        self.path = path
        self.events_at = events_at
        self._shared: SharedEnv | None = open_shared_env(path, VIEW_DBS, sync=sync)

    @property
    def shared(self) -> SharedEnv:
        """The environment (raises once closed)."""
        if self._shared is None:
            raise StorageError("the views are closed")
        return self._shared

    def close(self) -> None:
        """Release the environment."""
        if self._shared is not None:
            release_shared_env(self._shared)
            self._shared = None

    def checkpoint(self) -> int:
        """The last seq applied."""
        return self.shared.read(lambda txn: _checkpoint(txn, self.shared.dbs))

    def apply(self, records: Records, upto: int | None = None) -> int:
        """Apply records after the stored checkpoint, in one transaction.

        ``records(after)`` must give the log's records after seq ``after``; it is
        called again when the transaction is retried (the map grew), so no
        record is lost. Records at or below the checkpoint are skipped, so two
        processes catching up at once apply each event exactly once. Returns
        the new checkpoint.

        A record the reducers cannot apply does not stop the views: the batch
        is run once more (a record that fails only once is not skipped), then
        again up to it, the record is stored in ``skipped`` (seq, type, error
        class) and the checkpoint moves past it; the batch ends there.
        """
        skip: Skipped | None = None
        suspect: int | None = None
        while True:
            failed: list[Skipped] = []
            try:
                done = self.shared.write(functools.partial(self._apply, records, upto, skip, failed))
            except Exception:
                if not failed:
                    raise
                if failed[0].seq != suspect:
                    suspect = failed[0].seq  # once more first: only a record that fails twice is skipped
                    continue
                skip = failed[0]  # the transaction was dropped: run the batch again up to it
                continue
            if skip is not None and done == skip.seq:
                warn_skipped(skip)
            return done

    def _apply(self, records: Records, upto: int | None, skip: Skipped | None, failed: list[Skipped],
               txn: Any) -> int:
        dbs = self.shared.dbs
        done = _checkpoint(txn, dbs)
        writer = ViewWriter(txn, dbs)
        last = (1 << 64) if upto is None else upto
        skip_seq = -1 if skip is None else skip.seq
        apply = writer.apply
        for rec in records(done):
            seq = rec.header.seq
            if seq <= done:
                continue
            if seq > last:
                break
            if seq == skip_seq:
                assert skip is not None
                writer.skip(rec, skip)
                done = seq
                break
            try:
                apply(rec)
            except Exception as exc:
                if unapplicable(exc):
                    failed.append(Skipped(seq, rec.type, error_class(exc), "views"))
                raise
            done = seq
        writer.finish()
        txn.put(b"checkpoint", u64(done), db=dbs[b"meta"])
        return done

    def read(self, as_of: int | None = None) -> _ReadScope:
        """A read scope: ``with store.read(as_of) as view: view.entry(id)``."""
        return _ReadScope(self, as_of)

    def dump(self) -> dict[str, list[tuple[str, object]]]:
        """Every database as sorted (key hex, decoded value) pairs, for tests."""
        def run(txn: Any) -> dict[str, list[tuple[str, object]]]:
            out: dict[str, list[tuple[str, object]]] = {}
            for name, db in self.shared.dbs.items():
                items = [(bytes(k).hex(), _decoded(bytes(v))) for k, v in txn.cursor(db=db)]
                out[name.decode()] = items
            return out

        return self.shared.read(run)


class _ReadScope:
    """Holds one read transaction for a group of reads."""

    def __init__(self, store: ViewStore, as_of: int | None) -> None:
        self._store = store
        self._as_of = as_of
        self._ctx: Any = None
        self._txn: Any = None

    def __enter__(self) -> ViewReader:
        shared = self._store.shared
        self._ctx = shared.operation()
        env = self._ctx.__enter__()
        try:
            self._txn = env.begin(buffers=True)
        except lmdb.MapResizedError:
            env.set_mapsize(0)
            self._txn = env.begin(buffers=True)
        return ViewReader(self._txn, shared.dbs, self._as_of, self._store.events_at)

    def __exit__(self, *exc: object) -> None:
        self._txn.abort()
        self._ctx.__exit__(None, None, None)


def _checkpoint(txn: Any, dbs: dict[bytes, Any]) -> int:
    raw = txn.get(b"checkpoint", db=dbs[b"meta"])
    return 0 if raw is None else unpack_u64(raw)


def _decoded(raw: bytes) -> object:
    try:
        return msgspec.msgpack.decode(raw)
    except msgspec.DecodeError:
        return raw.hex()
