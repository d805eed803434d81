"""Local purges on a host whose log is shared (``nats://``).

On a shared log the host that deletes purges the log (on the servers) and its
own projections. Every other host kept copies of the content in its own
projection files (search shards, views, vectors) while it caught up, so each
host purges its own data directory of every deletion it has not purged yet:

- a tombstone is an event on the ``system`` stream whose header names erased
  seqs (``EntriesDeleted`` of a deletion, ``EntryRedacted`` of a redaction);
- ``shared-log-purged.json`` in the data directory holds the ``system``
  stream version up to which this host's projections were purged;
- :func:`purge_shared` catches the projections up (so the tombstones are
  applied), then rewrites, in one pass, the search shards holding the entries
  the new tombstones name, the views and the vectors, and moves the mark.

It runs when a store on a shared log opens (not read-only), after each entry
the host records (:func:`on_write`), in ``memlog maintain`` (its first step)
and in ``memlog purge`` / :meth:`MemoryLog.purge`: a host that stays open
purges the deletions of others at its next write, maintenance or purge (a
host that only reads should run ``memlog maintain`` on a schedule). The projections' rewrite is the
one every purge uses (:meth:`projections.Projections.purge`). Ids and counts
only are logged; the content is never read here (erased payloads read as
None).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from eventstore import EntriesDeleted, EntryRecorded, EntryRedacted, MemlogError

from .. import log as _log
from ..store.store import Store
from ..store.writer import SYSTEM_STREAM

__all__ = ["MARK_FILE", "on_write", "purge_due", "purge_shared", "purged_up_to"]

MARK_FILE = "shared-log-purged.json"


def purged_up_to(data_dir: Path) -> int:
    """The ``system`` stream version up to which this host's projections were purged."""
    try:
        return int(json.loads((data_dir / MARK_FILE).read_text())["system_version"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _mark(data_dir: Path, version: int) -> None:
    path = data_dir / MARK_FILE
    tmp = path.with_name(MARK_FILE + ".new")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"system_version": version}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def purge_due(store: Store) -> int:
    """How many ``system`` events (tombstones among them) this host has not
    purged for yet: 0 on a local log or a read-only store."""
    if not store.shared or store.read_only:
        return 0
    return max(0, store.log.stream_version(SYSTEM_STREAM) - purged_up_to(store.data_dir))


def on_write(store: Store, recorded: Callable[[EntryRecorded], None]) -> Callable[[EntryRecorded], None]:
    """The store's ``on_recorded`` hook: ``recorded``, then (on a shared log,
    outside a batch) this host's purge of the deletions other hosts made."""
    if not store.shared or store.read_only:
        return recorded

    def hook(entry: EntryRecorded) -> None:
        recorded(entry)
        if store.writer.batching:
            return
        try:
            if purge_due(store):
                purge_shared(store)
        except MemlogError as exc:  # the entry is committed: the purge stays due (next write, maintain)
            _log.warning("local purge of the shared log's deletions failed; it stays due", code=exc.code)

    return hook


def purge_shared(store: Store) -> int:
    """Purge this host's projections of every deletion on the shared log it has
    not purged yet; how many tombstones that covered (0 on a local log, or when
    nothing is new)."""
    if not purge_due(store):
        return 0
    done = purged_up_to(store.data_dir)
    head = store.log.head().seq
    store.proj.catch_up(search=True)  # the tombstones up to ``head`` are applied
    entry_ids: set[str] = set()
    tombstones, version = 0, done
    for rec in store.log.read_stream(SYSTEM_STREAM, done + 1):
        if rec.seq > head:
            break
        version = rec.version
        if rec.header.erases:
            tombstones += 1
            if isinstance(rec.event, EntriesDeleted):
                entry_ids.update(rec.event.entry_ids)
            elif isinstance(rec.event, EntryRedacted):
                entry_ids.add(rec.event.entry_id)
    if tombstones:
        split = store.proj.purge(sorted(entry_ids), store.log.settings.purge_lock_timeout, views=True)
        _log.info("local purge of deletions made on the shared log", tombstones=tombstones,
                  entries=len(entry_ids), files=len(split.files_rewritten))
    _mark(store.data_dir, version)
    return tombstones
