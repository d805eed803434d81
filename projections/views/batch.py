"""Runs of ``entry.recorded``: the views' hot path, applied as a batch.

A replay (and any catch-up) is mostly ``entry.recorded``. The writer hands a
run of consecutive ones to an :class:`EntryRun`, which computes every value
with the same pure reducers as the one-at-a-time path, keeps what they add up
to in memory (session statistics, counters, the extraction backlog) and writes
the index and version keys at :meth:`EntryRun.flush`: each database's items
sorted, with one ``putmulti``. The writer flushes before any other event and
at the end of its batch, so every other event reads the state the run
produced, and the result equals applying the events one at a time
(``tests/projections/test_batch_run.py`` compares the two).

Everything that can fail (an unknown kind, a value that does not encode) fails
in :meth:`EntryRun.add`, inside the record's own ``apply``, so a skipped record
is the one that failed. The entry id check (an entry id is recorded once)
looks at the run and at the database.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

import msgspec

from eventstore import EntryRecorded, RecordedEvent

from ..decay import entry_importance
from ..models import SessionStats
from . import formation as f
from . import reducers as r
from . import upkeep as u
from .keys import SEP, hash_key, rank_value, u64, unpack_u64
from .scopes import add_count

__all__ = ["EntryRun"]

_enc = msgspec.msgpack.Encoder().encode
_KEY = itemgetter(0)
_INDEX_DBS = (b"entries", b"by_seq", b"by_hash", b"by_session", b"by_time", b"derived")


class _Stats:
    """A session's statistics as the run adds to them (folded, then stored once)."""

    __slots__ = ("bytes", "counts", "entries", "last")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.entries = 0
        self.bytes = 0
        self.last = 0


class EntryRun:
    """Consecutive ``entry.recorded`` records of one write transaction."""

    def __init__(self, txn: Any, dbs: dict[bytes, Any]) -> None:
        self.txn = txn
        self.dbs = dbs
        self._cursor = txn.cursor(db=dbs[b"entries"])
        self._reset()

    def _reset(self) -> None:
        self.items: dict[bytes, list[tuple[bytes, bytes]]] = {name: [] for name in _INDEX_DBS}
        self.ids: set[str] = set()
        self.stats: dict[str, _Stats] = {}
        self.kinds: dict[str, int] = {}
        self.events = 0
        self.last_seq = 0
        self.backlog: dict[bytes, int] = {}  # session -> messages added to its extraction backlog
        self.extracted: dict[bytes, int] = {}  # session -> upto_seq of its last extraction

    @property
    def pending(self) -> bool:
        """Whether records wait to be written."""
        return self.events > 0

    def _known(self, entry_id: str) -> bool:
        """Whether the entry id was recorded before (in this run or stored)."""
        if entry_id in self.ids:
            return True
        prefix = entry_id.encode() + SEP
        cursor = self._cursor
        return bool(cursor.set_range(prefix)) and bytes(cursor.key()[: len(prefix)]) == prefix

    def add(self, rec: RecordedEvent, event: EntryRecorded) -> None:
        """Apply one ``entry.recorded`` (the writer has not counted it)."""
        self.events += 1
        self.last_seq = rec.seq
        eid = event.entry_id
        if self._known(eid):
            return  # an entry id is recorded once; a repeat is ignored, deterministically
        stored = r.entry_recorded(rec, event)
        sid = event.session_id or ""
        seq_key = u64(rec.seq)
        at = u64(stored.occurred_at)
        raw_id = eid.encode()
        items = self.items
        items[b"by_seq"].append((seq_key, rank_value(stored.kind, entry_importance(stored),
                                                     stored.occurred_at, eid)))
        items[b"entries"].append((raw_id + SEP + seq_key, _enc(stored)))
        items[b"by_hash"].append((hash_key(eid), b""))
        items[b"by_session"].append((sid.encode() + SEP + at + SEP + raw_id, stored.kind.encode()))
        items[b"by_time"].append((at + SEP + raw_id, sid.encode()))
        for parent in event.derived_from:
            items[b"derived"].append((parent.encode() + SEP + raw_id, b""))
        self.ids.add(eid)
        self.kinds[stored.kind] = self.kinds.get(stored.kind, 0) + 1
        if stored.kind == "lesson":
            f.entry_indexed(self.txn, self.dbs, stored, event)
            u.entry_indexed(self.txn, self.dbs, stored, event)
        if sid:
            self._count_session(sid, stored.kind, stored.size, stored.recorded_at, rec.seq)

    def _count_session(self, sid: str, kind: str, size: int, recorded_at: int, seq: int) -> None:
        stats = self.stats.get(sid)
        if stats is None:
            stats = self.stats[sid] = _Stats()
        stats.counts[kind] = stats.counts.get(kind, 0) + 1
        stats.entries += 1
        stats.bytes += size
        stats.last = max(stats.last, recorded_at)
        if kind == "message":  # the extraction backlog (formation, issue 18)
            key = sid.encode()
            upto = self.extracted.get(key)
            if upto is None:
                raw = self.txn.get(b"X" + key, db=self.dbs[b"formation"])
                upto = self.extracted[key] = 0 if raw is None else unpack_u64(raw)
            if seq > upto:
                self.backlog[key] = self.backlog.get(key, 0) + 1

    def flush(self, writer: Any) -> None:
        """Write the run: each database's items sorted, in one ``putmulti``; the
        statistics and counters go to ``writer`` (a :class:`ViewWriter`)."""
        if not self.events:
            return
        for name, items in self.items.items():
            if items:
                _put_sorted(self.txn.cursor(db=self.dbs[name]), items)
        formation = self.dbs[b"formation"]
        for key, added in self.backlog.items():
            add_count(self.txn, formation, b"U" + key, added)
        for sid, folded in self.stats.items():
            prev = writer.stats_of(sid)
            counts = dict(prev.counts)
            for kind, n in folded.counts.items():
                counts[kind] = counts.get(kind, 0) + n
            writer.session_stats[sid] = SessionStats(counts, prev.entries + folded.entries,
                                                     prev.bytes + folded.bytes,
                                                     max(prev.last_activity, folded.last))
        writer.count("events", self.events)
        writer.count("type:entry.recorded", self.events)
        writer.last_seen["entry.recorded"] = self.last_seq
        for kind, n in self.kinds.items():
            writer.count(f"kind:{kind}", n)
        entries = sum(self.kinds.values())
        if entries:
            writer.count("entries", entries)
        self._reset()


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
