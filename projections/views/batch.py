"""Runs of ``entry.recorded``: the views' hot path, applied as a batch.

A replay (and any catch-up) is mostly ``entry.recorded``. The writer hands a
run of consecutive ones to an :class:`EntryRun`. :meth:`EntryRun.add` checks
the entry id and keeps the stored entry the pure reducer computes
(:func:`~projections.views.reducers.entry_recorded`); :meth:`EntryRun.flush`
builds the run's index and version records a column at a time (each key part
for the whole run in one comprehension, a tenth less time than one entry at
a time), writes each database's items sorted, with one ``putmulti``, and folds
the session statistics, counters and extraction backlog of the run. The
writer flushes before any other event, at the end of its batch and every
``RUN_LIMIT`` records (the memory a run holds), so every other event reads
the state the run produced, and the result equals applying the events one at
a time (``tests/projections/test_batch_run.py`` compares the two, with
``ViewWriter.batch_entries`` off for the one-at-a-time side).

A lesson's formation and upkeep records (:func:`.formation.lesson_items`,
:func:`.upkeep.lesson_items`) are made as it comes, since its scope reads its
session, and written with the run's; its scope's count is added once per
scope. No entry of the run reads them, so the order does not matter.

What can fail fails in :meth:`EntryRun.add`, inside the record's own
``apply``, so a skipped record is the one that failed. The flush builds its
records from fields the log's decoder validated (a kind of the catalogue, an
occurred_at in ``Micros``, an importance in ``Unit``), which encode. The
entry id check (an entry id is recorded once) looks at the run and at the
database.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterator
from operator import itemgetter
from typing import Any

import msgspec

from eventstore import EntryRecorded, RecordedEvent

from ..decay import importance_of
from ..models import SessionStats, StoredEntry
from . import formation as f
from . import reducers as r
from . import upkeep as u
from .keys import SEP, hash_key, rank_value, u64
from .scopes import add_count, get_count, lesson_scope

__all__ = ["RUN_LIMIT", "EntryRun"]

RUN_LIMIT = 16_384  # records of a run held in memory before they are written
_crc = zlib.crc32

_enc = msgspec.msgpack.Encoder().encode
_KEY = itemgetter(0)


class EntryRun:
    """Consecutive ``entry.recorded`` records of one write transaction."""

    def __init__(self, txn: Any, dbs: dict[bytes, Any]) -> None:
        self.txn = txn
        self.dbs = dbs
        self._reset()

    def _reset(self) -> None:
        self.stored: list[StoredEntry] = []  # the run's new entries, in seq order
        self.derived: list[tuple[str, tuple[str, ...]]] = []  # (entry id, its parents)
        self.ids: set[str] = set()
        self.lesson_items: dict[bytes, list[tuple[bytes, bytes]]] = {b"formation": [], u.DB: []}
        self.lesson_scopes: Counter[bytes] = Counter()  # the lessons the run adds to each scope
        self.events = 0
        self.last_seq = 0

    @property
    def pending(self) -> bool:
        """Whether records wait to be written."""
        return self.events > 0

    @property
    def full(self) -> bool:
        """Whether the run holds enough to be written now (a long run is written
        in parts of ``RUN_LIMIT`` records, which bounds the memory it holds)."""
        return self.events >= RUN_LIMIT

    def _known(self, entry_id: str) -> bool:
        """Whether the entry id was recorded before (in this run or stored)."""
        # ``by_hash`` holds an entry exactly while it has versions (``_index``
        # and ``_unindex`` go with them): one lookup instead of a seek
        return entry_id in self.ids or self.txn.get(hash_key(entry_id), db=self.dbs[b"by_hash"]) is not None

    def add(self, rec: RecordedEvent, event: EntryRecorded) -> None:
        """Take one ``entry.recorded`` into the run (the writer has not counted it)."""
        self.events += 1
        self.last_seq = rec.seq
        eid = event.entry_id
        if self._known(eid):  # an entry id is recorded once; a repeat is ignored, deterministically
            return
        stored = r.entry_recorded(rec, event)
        self.stored.append(stored)
        self.ids.add(eid)
        if event.derived_from:
            self.derived.append((eid, event.derived_from))
        if stored.kind == "lesson":
            self._lesson(stored, event)

    def _lesson(self, stored: StoredEntry, event: EntryRecorded) -> None:
        """A lesson's formation and upkeep records, as ``f.entry_indexed`` and
        ``u.entry_indexed`` write them, kept for the flush (its scope is read
        now, from the session, which no event of a run changes)."""
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
        stored = self.stored
        for name, items in self._items(stored):
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

    def _items(self, stored: list[StoredEntry]) -> Iterator[tuple[bytes, list[tuple[bytes, bytes]]]]:
        """Each database's records of the run's entries, built a column at a time
        (every column has one item per entry: each ``zip`` is strict); one
        database's at a time, so the run holds one list of records at most."""
        eids = [s.entry_id for s in stored]
        raw_ids = [eid.encode() for eid in eids]
        seq_keys = [u64(s.recorded_seq) for s in stored]
        kinds = [s.kind for s in stored]
        ats = [s.occurred_at for s in stored]
        sids = [(s.session_id or "").encode() for s in stored]
        importance = map(importance_of, kinds, [s.importance for s in stored], [s.level for s in stored])
        yield b"by_seq", list(zip(seq_keys, map(rank_value, kinds, importance, ats, eids), strict=True))
        yield b"entries", list(zip([i + SEP + k for i, k in zip(raw_ids, seq_keys, strict=True)],
                                   map(_enc, stored), strict=True))
        yield b"by_hash", [(_crc(i).to_bytes(4, "big") + i, b"") for i in raw_ids]  # hash_key(eid)
        when = [u64(a) + SEP + i for a, i in zip(ats, raw_ids, strict=True)]  # when_key(at, eid)
        yield b"by_time", list(zip(when, sids, strict=True))
        yield b"by_session", list(zip([s + SEP + w for s, w in zip(sids, when, strict=True)],
                                      [kind.encode() for kind in kinds], strict=True))
        yield b"derived", [(parent.encode() + SEP + eid.encode(), b"")
                           for eid, parents in self.derived for parent in parents]
        yield from self.lesson_items.items()

    def _fold_sessions(self, writer: Any, stored: list[StoredEntry]) -> None:
        """Add the run's entries to their sessions' statistics (``writer``'s) and
        their messages to the extraction backlog (formation, issue 18)."""
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
