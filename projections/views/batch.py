"""Runs of ``entry.recorded``: the views' hot path, applied as a batch.

A replay (and any catch-up) is mostly ``entry.recorded``. The writer hands a
run of consecutive ones to an :class:`EntryRun`, which computes every value
with the same pure reducers as the one-at-a-time path, keeps what they add up
to in memory (session statistics, counters, the extraction backlog) and writes
the index and version keys at :meth:`EntryRun.flush`: each database's items
sorted, with one ``putmulti``. The writer flushes before any other event, at
the end of its batch and every ``RUN_LIMIT`` records (the memory a run
holds), so every other event reads the state the run produced, and the
result equals applying the events one at a time
(``tests/projections/test_batch_run.py`` compares the two, with
``ViewWriter.batch_entries`` off for the one-at-a-time side).

Lessons still write their formation and upkeep keys as they come (their
scope reads the session), which is the same in either order: no entry of
the run reads them.

Everything that can fail (an unknown kind, a value that does not encode) fails
in :meth:`EntryRun.add`, inside the record's own ``apply``, so a skipped record
is the one that failed. The entry id check (an entry id is recorded once)
looks at the run and at the database.
"""

from __future__ import annotations

import zlib
from operator import itemgetter
from typing import Any

import msgspec

from eventstore import EntryRecorded, RecordedEvent

from ..decay import importance_of
from ..models import SessionStats
from . import formation as f
from . import reducers as r
from . import upkeep as u
from .keys import SEP, rank_value, u64, unpack_u64
from .scopes import add_count

__all__ = ["RUN_LIMIT", "EntryRun"]

RUN_LIMIT = 16_384  # records of a run held in memory before they are written
_crc = zlib.crc32

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
        self.backlog: dict[str, int] = {}  # session -> messages added to its extraction backlog
        self.extracted: dict[str, int] = {}  # session -> upto_seq of its last extraction
        self._by_seq = self.items[b"by_seq"].append
        self._entries = self.items[b"entries"].append
        self._by_hash = self.items[b"by_hash"].append
        self._by_session = self.items[b"by_session"].append
        self._by_time = self.items[b"by_time"].append
        self._derived = self.items[b"derived"].append

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
        if entry_id in self.ids:
            return True
        prefix = entry_id.encode() + SEP
        cursor = self._cursor
        return bool(cursor.set_range(prefix)) and bytes(cursor.key()[: len(prefix)]) == prefix

    def add(self, rec: RecordedEvent, event: EntryRecorded) -> None:
        """Apply one ``entry.recorded`` (the writer has not counted it)."""
        eid = event.entry_id
        if self._known(eid):  # an entry id is recorded once; a repeat is ignored, deterministically
            self.events += 1
            self.last_seq = rec.seq
            return
        stored = r.entry_recorded(rec, event)
        self.events += 1
        self.last_seq = seq = rec.seq
        kind, occurred_at = stored.kind, stored.occurred_at
        sid = event.session_id or ""
        sid_b = sid.encode()
        seq_key, at, raw_id = u64(seq), u64(occurred_at), eid.encode()
        importance = importance_of(kind, stored.importance, stored.level)  # entry_importance(stored)
        self._by_seq((seq_key, rank_value(kind, importance, occurred_at, eid)))
        self._entries((raw_id + SEP + seq_key, _enc(stored)))
        self._by_hash((_crc(raw_id).to_bytes(4, "big") + raw_id, b""))  # hash_key(eid)
        self._by_session((sid_b + SEP + at + SEP + raw_id, kind.encode()))
        self._by_time((at + SEP + raw_id, sid_b))
        for parent in event.derived_from:
            self._derived((parent.encode() + SEP + raw_id, b""))
        self.ids.add(eid)
        kinds = self.kinds
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind == "lesson":
            f.entry_indexed(self.txn, self.dbs, stored, event)
            u.entry_indexed(self.txn, self.dbs, stored, event)
        if sid:
            self._count_session(sid, kind, stored.size, stored.recorded_at, seq)

    def _count_session(self, sid: str, kind: str, size: int, recorded_at: int, seq: int) -> None:
        stats = self.stats.get(sid)
        if stats is None:
            stats = self.stats[sid] = _Stats()
        counts = stats.counts
        counts[kind] = counts.get(kind, 0) + 1
        stats.entries += 1
        stats.bytes += size
        if recorded_at > stats.last:
            stats.last = recorded_at
        if kind == "message":  # the extraction backlog (formation, issue 18)
            upto = self.extracted.get(sid)
            if upto is None:
                raw = self.txn.get(b"X" + sid.encode(), db=self.dbs[b"formation"])
                upto = self.extracted[sid] = 0 if raw is None else unpack_u64(raw)
            if seq > upto:
                self.backlog[sid] = self.backlog.get(sid, 0) + 1

    def flush(self, writer: Any) -> None:
        """Write the run: each database's items sorted, in one ``putmulti``; the
        statistics and counters go to ``writer`` (a :class:`ViewWriter`)."""
        if not self.events:
            return
        for name, items in self.items.items():
            if items:
                _put_sorted(self.txn.cursor(db=self.dbs[name]), items)
        formation = self.dbs[b"formation"]
        for sid, added in self.backlog.items():
            add_count(self.txn, formation, b"U" + sid.encode(), added)
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
