"""Runs of ``entry.recorded``: the views' hot path, applied as a batch.

A replay (and any catch-up) is mostly ``entry.recorded``. The writer hands a
run of consecutive ones to an :class:`EntryRun`. :meth:`EntryRun.add` keeps
the stored entry the pure reducer computes
(:func:`~projections.views.reducers.entry_recorded`); :meth:`EntryRun.flush`
checks the run's entry ids (an entry id is recorded once: one ``by_hash``
lookup an id, made in one ``map``, and the run's own repeats), builds the
run's index and version records a column at a time (each key part for the
whole run in one comprehension, a tenth less time than one entry at a time),
writes each database's items sorted, with one ``putmulti``, and folds
the session statistics, counters and extraction backlog of the run. The
writer flushes before any other event, at the end of its batch and every
``RUN_LIMIT`` records (the memory a run holds), so every other event reads
the state the run produced, and the result equals applying the events one at
a time (``tests/projections/test_batch_run.py`` compares the two, with
``ViewWriter.batch_entries`` off for the one-at-a-time side).

A lesson's formation and upkeep records (:func:`.formation.lesson_items`,
:func:`.upkeep.lesson_items`) are made by the flush (its scope reads its
session, which no event of a run changes) and written with the run's; its
scope's count is added once per scope. No entry of the run reads them, so the
order does not matter.

What can fail fails in :meth:`EntryRun.add`, inside the record's own
``apply``, so a skipped record is the one that failed: an id long enough for
its ``by_hash`` key to pass LMDB's 511 bytes is looked up there. The flush
builds its records from fields the log's decoder validated (a kind of the
catalogue, an occurred_at in ``Micros``, an importance in ``Unit``), which
encode.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterator
from itertools import repeat
from operator import itemgetter
from typing import Any

import msgspec

from eventstore import EntryRecorded, RecordedEvent

from ..decay import importance_of
from ..models import SessionStats, StoredEntry
from . import formation as f
from . import reducers as r
from . import upkeep as u
from .keys import SEP, hash_key, rank_values, u64
from .scopes import add_count, get_count, lesson_scope

__all__ = ["RUN_LIMIT", "EntryRun"]

RUN_LIMIT = 16_384  # records of a run held in memory before they are written
_crc = zlib.crc32
_SHORT_ID = 126  # characters: any id this long has a by_hash key within LMDB's 511 bytes

_enc = msgspec.msgpack.Encoder().encode
_KEY = itemgetter(0)


class EntryRun:
    """Consecutive ``entry.recorded`` records of one write transaction."""

    def __init__(self, txn: Any, dbs: dict[bytes, Any]) -> None:
        self.txn = txn
        self.dbs = dbs
        self._reset()

    def _reset(self) -> None:
        self.stored: list[StoredEntry] = []  # each record's entry, in seq order (repeats: see the flush)
        self.extra: list[tuple[int, EntryRecorded]] = []  # (index in stored, event): lessons, derived entries
        self.derived: list[tuple[str, tuple[str, ...]]] = []  # (entry id, its parents)
        self.lesson_items: dict[bytes, list[tuple[bytes, bytes]]] = {b"formation": [], u.DB: []}
        self.lesson_scopes: Counter[bytes] = Counter()  # the lessons the run adds to each scope
        self.events = 0
        self.last_seq = 0

    @property
    def pending(self) -> bool:
        """Whether records wait to be written."""
        return self.events > 0

    def add(self, rec: RecordedEvent, event: EntryRecorded) -> bool:
        """Take one ``entry.recorded`` into the run (the writer has not counted
        it); whether the run is now full (a long run is written in parts of
        ``RUN_LIMIT`` records, which bounds the memory it holds). Whether its
        id is new is decided by the flush, for the whole run."""
        if len(event.entry_id) > _SHORT_ID:  # its by_hash key may be too long for LMDB: fail here
            self.txn.get(hash_key(event.entry_id), db=self.dbs[b"by_hash"])
        stored = r.entry_recorded(rec, event)
        self.stored.append(stored)
        self.last_seq = stored.recorded_seq
        if event.derived_from or stored.kind == "lesson":
            self.extra.append((self.events, event))
        self.events += 1
        return self.events >= RUN_LIMIT

    def _new_entries(self) -> tuple[list[StoredEntry], list[bytes], list[bytes]]:
        """The run's entries whose id is new, with their ids and ``by_hash``
        keys; the lessons' and derived entries' records taken. An entry id is
        recorded once: a repeat (in the run, or of an id the views hold) is
        ignored, deterministically. The ids are looked up a column at a time
        (``by_hash`` holds an entry exactly while it has versions)."""
        stored = self.stored
        raw_ids = [s.entry_id.encode() for s in stored]
        keys = [_crc(i).to_bytes(4, "big") + i for i in raw_ids]  # hash_key(eid)
        found = list(map(self.txn.get, keys, repeat(None), repeat(self.dbs[b"by_hash"])))
        if found.count(None) != len(found) or len(set(raw_ids)) != len(raw_ids):  # a repeat: keep the first
            kept = _first_new(raw_ids, found)
            keep = set(kept)
            self.extra = [(i, event) for i, event in self.extra if i in keep]
            stored, raw_ids = [stored[i] for i in kept], [raw_ids[i] for i in kept]
            keys = [keys[i] for i in kept]
        for i, event in self.extra:
            if event.derived_from:
                self.derived.append((event.entry_id, event.derived_from))
            if event.kind == "lesson":
                self._lesson(self.stored[i], event)
        return stored, raw_ids, keys

    def _lesson(self, stored: StoredEntry, event: EntryRecorded) -> None:
        """A lesson's formation and upkeep records, as ``f.entry_indexed`` and
        ``u.entry_indexed`` write them (its scope is read from the session,
        which no event of a run changes)."""
        eid = stored.entry_id.encode()
        scope = lesson_scope(self.txn, self.dbs, event)
        self.lesson_items[b"formation"] += f.lesson_items(scope, eid, event.content, stored.source_seq)
        if self.txn.get(b"a" + eid, db=self.dbs[u.DB]) is None:
            self.lesson_items[u.DB] += u.lesson_items(scope, eid, stored.occurred_at)
            self.lesson_scopes[scope] += 1

    def flush(self, writer: Any) -> None:
        """Write the run: each database's items sorted, in one ``putmulti``; the
        statistics and counters go to ``writer`` (a :class:`ViewWriter`)."""
        if not self.events:
            return
        stored, raw_ids, keys = self._new_entries()
        for name, items in self._items(stored, raw_ids, keys):
            if items:
                _put_sorted(self.txn.cursor(db=self.dbs[name]), items)
            del items  # before the next database's are built
        for scope, added in self.lesson_scopes.items():
            u.count_lessons(self.txn, self.dbs, scope, added)
        self._fold_sessions(writer, stored)
        writer.count("events", self.events)
        writer.count("type:entry.recorded", self.events)
        writer.last_seen["entry.recorded"] = self.last_seq
        for kind, n in Counter([s.kind for s in stored]).items():
            writer.count(f"kind:{kind}", n)
        if stored:
            writer.count("entries", len(stored))
        self._reset()

    def _items(self, stored: list[StoredEntry], raw_ids: list[bytes],
               hash_keys: list[bytes]) -> Iterator[tuple[bytes, list[tuple[bytes, bytes]]]]:
        """Each database's records of the run's entries, built a column at a time
        (every column has one item per entry: each ``zip`` is strict); one
        database's at a time, so the run holds one list of records at most."""
        seq_keys = [u64(s.recorded_seq) for s in stored]
        kinds = [s.kind for s in stored]
        ats = [s.occurred_at for s in stored]
        sids = [(s.session_id or "").encode() for s in stored]
        ranks = rank_values(kinds, _importance(stored), ats, raw_ids)
        yield b"by_seq", list(zip(seq_keys, ranks, strict=True))
        yield b"entries", list(zip([i + SEP + k for i, k in zip(raw_ids, seq_keys, strict=True)],
                                   map(_enc, stored), strict=True))
        yield b"by_hash", list(zip(hash_keys, repeat(b"")))
        when = [u64(a) + SEP + i for a, i in zip(ats, raw_ids, strict=True)]  # when_key(at, eid)
        yield b"by_time", list(zip(when, sids, strict=True))
        yield b"by_session", list(zip([s + SEP + w for s, w in zip(sids, when, strict=True)],
                                      [kind.encode() for kind in kinds], strict=True))
        yield b"derived", [(parent.encode() + SEP + eid.encode(), b"")
                           for eid, parents in self.derived for parent in parents]
        yield from self.lesson_items.items()

    def _fold_sessions(self, writer: Any, stored: list[StoredEntry]) -> None:
        """Add the run's entries to their sessions' statistics (``writer``'s) and
        their messages to the extraction backlog (formation)."""
        groups: dict[str, list[StoredEntry]] = {}
        for s in stored:
            if s.session_id:
                groups.setdefault(s.session_id, []).append(s)
        formation = self.dbs[b"formation"]
        for sid, group in groups.items():
            prev = writer.stats_of(sid)
            counts = dict(prev.counts)
            for kind, n in Counter([s.kind for s in group]).items():
                counts[kind] = counts.get(kind, 0) + n
            writer.session_stats[sid] = SessionStats(
                counts, prev.entries + len(group), prev.bytes + sum([s.size for s in group]),
                max(prev.last_activity, max([s.recorded_at for s in group])))
            upto = get_count(self.txn, formation, b"X" + sid.encode()) or 0
            added = sum([1 for s in group if s.kind == "message" and s.recorded_seq > upto])
            if added:
                add_count(self.txn, formation, b"U" + sid.encode(), added)


def _first_new(raw_ids: list[bytes], found: list[Any]) -> list[int]:
    """The positions, in order, of the ids not ``found`` in the views and not seen earlier in the run."""
    seen: set[bytes] = set()
    kept = []
    for i, (raw, known) in enumerate(zip(raw_ids, found, strict=True)):
        if known is None and raw not in seen:
            seen.add(raw)
            kept.append(i)
    return kept


def _importance(stored: list[StoredEntry]) -> list[float]:
    """:func:`importance_of` each entry: its own, else its kind's and level's
    (one call per distinct kind and level, not one per entry)."""
    defaults: dict[tuple[str, str | None], float] = {}
    out = []
    for s in stored:
        value = s.importance
        if value is None:
            key = (s.kind, s.level)
            value = defaults.get(key)
            if value is None:
                value = defaults[key] = importance_of(s.kind, None, s.level)
        out.append(value)
    return out


def _put_sorted(cursor: Any, items: list[tuple[bytes, bytes]]) -> None:
    """Sort ``items`` by key and write them with one ``putmulti``; appended
    (no search from the root) when every key is beyond the database's last."""
    items.sort(key=_KEY)
    if cursor.last() and bytes(cursor.key()) >= items[0][0]:
        cursor.putmulti(items)
        return
    _, added = cursor.putmulti(items, append=True)
    if added != len(items):  # append skips (silently) a key not beyond the last: write them all
        cursor.putmulti(items)
