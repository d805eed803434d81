"""Applying records to the views, inside the runner's write transaction.

The writer routes each record to the pure reducers of :mod:`projections.views.reducers`
and stores what they return. Session statistics and global counters are kept
in memory for the batch and written once at :meth:`ViewWriter.finish`.

Entries are stored without content (:class:`StoredEntry`). The writer never
reads the log: what it needs of an entry (kind, size, importance, level, ids,
times) is in the record it applies or in the stored version, so live state
equals a replay even after a payload is erased.
"""

from __future__ import annotations

from typing import Any

import msgspec

from eventstore import (
    SHOWN_STATES,
    CheckpointMarked,
    DecayApplied,
    DeletedRef,
    DeletionRequested,
    EntriesAccessed,
    EntriesDeleted,
    EntryEdited,
    EntryRecorded,
    EntryRedacted,
    EntryReinforced,
    EntryUpdated,
    Event,
    MemoryForgotten,
    MemorySaved,
    PurgeCompleted,
    RecordedEvent,
    ResourceAppended,
    ResourceDeclared,
    ResourceEvicted,
    ResourceFlushed,
    ResourceReplaced,
    ResourceTrimmed,
    SessionArchived,
    SessionClosed,
    SessionCompacted,
    SessionExtracted,
    SessionRestored,
    SessionStarted,
    SessionSummarised,
    SessionUpdated,
    SummaryResummarised,
)

from .._skips import Skipped
from ..decay import entry_importance
from ..models import (
    AccessView,
    DeletionRecord,
    MemoryView,
    SessionStats,
    SessionView,
    StoredEntry,
    TombstoneInfo,
)
from . import formation as f  # -- formation --
from . import reducers as r
from . import upkeep as u  # -- upkeep --
from .batch import EntryRun
from .keyed import Keyed
from .keys import (
    SEP,
    all_versions,
    decode_stored,
    drop_derived,
    has_versions,
    hash_key,
    latest_version,
    prefix_items,
    rank_value,
    session_key,
    time_key,
    u64,
    unpack_u64,
    version_key,
    when_key,
)
from .resources import apply_resource  # -- memory resources --

__all__ = ["ViewWriter"]

_enc = msgspec.msgpack.Encoder()
_entry = decode_stored
_session = msgspec.msgpack.Decoder(SessionView).decode
_memory = msgspec.msgpack.Decoder(MemoryView).decode
_access = msgspec.msgpack.Decoder(AccessView).decode
_stats = msgspec.msgpack.Decoder(SessionStats).decode
_deletion = msgspec.msgpack.Decoder(DeletionRecord).decode


class ViewWriter:
    """Applies records to the views in one write transaction."""

    batch_entries = True  # runs of entry.recorded as a batch (False: one at a time, for tests)

    def __init__(self, txn: Any, dbs: dict[bytes, Any]) -> None:
        self.txn = txn
        self.dbs = dbs
        self.session_stats: dict[str, SessionStats] = {}
        self.recompute: set[str] = set()
        self.counters: dict[str, int] = {}
        self.last_seen: dict[str, int] = {}  # event type -> the last seq of that type
        self.run = EntryRun(txn, dbs)  # consecutive entry.recorded, written as a batch
        self.keyed = Keyed(txn, dbs, self._counted)  # a preference set again supersedes the earlier one

    # -- plumbing -----------------------------------------------------------

    def put(self, db: bytes, key: bytes, value: object) -> None:
        self.txn.put(key, _enc.encode(value), db=self.dbs[db])

    def current_entry(self, entry_id: str) -> StoredEntry | None:
        raw = latest_version(self.txn, self.dbs[b"entries"], entry_id, None)
        return None if raw is None else _entry(raw)

    def _stats_from_entries(self, session_id: str) -> SessionStats:
        """Statistics recomputed from the session's live entries."""
        stats = SessionStats()
        prefix = session_id.encode() + SEP
        for key, _ in prefix_items(self.txn, self.dbs[b"by_session"], prefix):
            stored = self.current_entry(key[len(prefix) + 9 :].decode())
            if stored is not None and stored.state in SHOWN_STATES:
                stats = r.stats_added(stats, stored)
        return stats

    def count(self, name: str, delta: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + delta

    def stats_of(self, session_id: str) -> SessionStats:
        cached = self.session_stats.get(session_id)
        if cached is None:
            raw = self.txn.get(session_id.encode(), db=self.dbs[b"session_stats"])
            cached = SessionStats() if raw is None else _stats(bytes(raw))
        return cached

    def finish(self) -> None:
        """Write the batched statistics and counters."""
        self.run.flush(self)
        for sid in self.recompute:
            self.session_stats[sid] = self._stats_from_entries(sid)
        for sid, stats in self.session_stats.items():
            if stats.entries:
                self.put(b"session_stats", sid.encode(), stats)
            else:  # no entries is the same as never having had any, as in a replay
                self.txn.delete(sid.encode(), db=self.dbs[b"session_stats"])
        db = self.dbs[b"stats"]
        for kind, seq in self.last_seen.items():
            self.txn.put(f"last:{kind}".encode(), u64(seq), db=db)
        for name, delta in self.counters.items():
            raw = self.txn.get(name.encode(), db=db)
            total = (0 if raw is None else unpack_u64(raw)) + delta
            if total > 0:
                self.txn.put(name.encode(), u64(total), db=db)
            else:  # a counter back at zero is absent, as in a replay that never saw it
                self.txn.delete(name.encode(), db=db)

    def skip(self, rec: RecordedEvent, skip: Skipped) -> None:
        """Record an event the reducers could not apply (it still counts as an event)."""
        self.run.flush(self)
        self.count("events")
        self.count(f"type:{rec.type}")
        self.last_seen[rec.type] = rec.seq
        self.put(b"skipped", u64(rec.seq), skip)

    # -- dispatch -----------------------------------------------------------

    def apply(self, rec: RecordedEvent) -> None:
        """Apply one record (erased payloads only count). A run of
        ``entry.recorded`` is applied as a batch (:mod:`.batch`), written
        before any other record."""
        event = rec.event
        if type(event) is EntryRecorded and self.batch_entries and event.kind != "preference":
            if self.run.add(rec, event):  # full
                self.run.flush(self)
            return
        if self.run.pending:
            self.run.flush(self)
        self.count("events")
        self.count(f"type:{rec.type}")
        self.last_seen[rec.type] = rec.seq
        self._dispatch(rec, event)

    def _dispatch(self, rec: RecordedEvent, event: Any) -> None:
        """Route one record (not part of an entry run) to its reducer."""
        match event:
            case EntryRecorded():
                self._entry_recorded(rec, event)
            case EntryUpdated():
                self._entry_update(event.entry_id, lambda v: r.entry_changed(v, rec, event.changes))
            case EntryRedacted():
                self._entry_redacted(rec, event)
            case EntryEdited():
                self._entry_edited(rec, event)
            case SessionStarted():
                self.put(b"sessions", version_key(event.session_id, rec.seq),
                         r.session_started(rec, event))
                u.session_started(self.txn, self.dbs, event)  # -- upkeep --
            case SessionUpdated():
                self._session_update(event.session_id, lambda s: r.session_updated(s, rec, event))
            case SessionArchived() | SessionRestored():
                archived = isinstance(event, SessionArchived)
                self._session_update(event.session_id,
                                     lambda s: r.session_with_archive(s, rec, archived))
                self._mark_archived(event.session_id, archived)
            case SessionClosed():
                self._session_update(event.session_id, lambda s: r.session_closed(s, rec))
            case MemorySaved():
                self._memory_saved(rec, event)
            case MemoryForgotten():
                self._memory_end(event.user_id, event.key, lambda m: r.memory_forgotten(m, rec))
            case EntriesAccessed():
                self._accessed(rec, event)
            case DecayApplied():
                self.put(b"params", version_key("decay", rec.seq), r.decay_params(event))
            case DeletionRequested():
                self.put(b"deletions", event.request_id.encode(), r.deletion_requested(rec, event))
            case EntriesDeleted():
                self._entries_deleted(rec, event)
            case PurgeCompleted():
                for request_id in event.request_ids:
                    self._ledger(request_id, lambda d: r.deletion_purged(d, rec, event))
            case _:
                self._apply_lifecycle(rec, event)

    def _apply_lifecycle(self, rec: RecordedEvent, event: Event | None) -> None:
        """The life-cycle events: compaction, summaries, resources,
        formation and upkeep; any other event only counts."""
        match event:
            case SessionCompacted():
                self._compacted(rec, event)
            # -- compaction and summaries --
            case SessionSummarised():
                self._summarised(rec, event)
            case SummaryResummarised():
                self._resummarised(rec, event)
            # -- memory resources --
            case (ResourceDeclared() | ResourceAppended() | ResourceFlushed() | ResourceEvicted()
                  | ResourceTrimmed() | ResourceReplaced()):
                apply_resource(self.txn, self.dbs[b"resources"], rec, event)
            # -- formation --
            case EntryReinforced():
                f.reinforced(self.txn, self.dbs, rec, event)
            case SessionExtracted():
                f.session_extracted(self.txn, self.dbs, event)
            # -- upkeep --
            case CheckpointMarked():
                u.checkpoint_marked(self.txn, self.dbs, rec, event)
            case _:
                pass

    # -- entries ------------------------------------------------------------

    def _entry_recorded(self, rec: RecordedEvent, event: EntryRecorded) -> None:
        eid = event.entry_id
        if has_versions(self.txn, self.dbs[b"entries"], eid):
            return  # an entry id is recorded once; a repeat is ignored, deterministically
        stored = r.entry_recorded(rec, event)
        self.put(b"entries", version_key(eid, rec.seq), stored)
        self._index(stored, event.derived_from)
        f.entry_indexed(self.txn, self.dbs, stored, event)  # -- formation --
        u.entry_indexed(self.txn, self.dbs, stored, event)  # -- upkeep --
        self._counted(stored, 1)
        if event.kind == "preference":
            self.keyed.joined(event, rec.seq)

    def _counted(self, stored: StoredEntry, delta: int) -> None:
        """An entry joins (1) or leaves (-1) the counts of what is shown."""
        if delta < 0:
            self._uncount(stored)
            return
        if stored.session_id:
            sid = stored.session_id
            self.session_stats[sid] = r.stats_added(self.stats_of(sid), stored)
        self.count(f"kind:{stored.kind}")
        self.count("entries")

    def _entry_update(self, entry_id: str, fn: Any) -> None:
        prev = self.current_entry(entry_id)
        if prev is None or not prev.source_seq:
            return
        new: StoredEntry = fn(prev)
        self.put(b"entries", version_key(entry_id, new.changed_seq), new)
        if new.state in SHOWN_STATES:  # importance may change
            self.txn.put(u64(new.recorded_seq), _rank(new), db=self.dbs[b"by_seq"])

    def _entry_edited(self, rec: RecordedEvent, event: EntryEdited) -> None:
        """The text replaced; the session's bytes follow the new size."""
        prev = self.current_entry(event.entry_id)
        self._entry_update(event.entry_id, lambda v: r.entry_edited(v, rec, event))
        if prev is None or not prev.source_seq or prev.state not in SHOWN_STATES:
            return
        scope = self.txn.get(b"E" + prev.entry_id.encode(), db=self.dbs[b"formation"])
        if prev.kind == "lesson" and scope is not None:  # -- formation: dedup counts the new words
            for key, value in f.lesson_items(bytes(scope), prev.entry_id.encode(), event.content,
                                             prev.source_seq):
                self.txn.put(key, value, db=self.dbs[b"formation"])
        if prev.session_id:
            stats = self.stats_of(prev.session_id)
            self.session_stats[prev.session_id] = msgspec.structs.replace(
                stats, bytes=stats.bytes + len(event.content.encode()) - prev.size)

    def _entries_deleted(self, rec: RecordedEvent, event: EntriesDeleted) -> None:
        record = self._ledger(event.request_id, lambda d: r.deletion_done(d, rec, event))
        reason = record.reason if record else "unknown"
        by = record.requested_by if record else rec.actor
        tomb = TombstoneInfo(event.request_id, reason, by, rec.seq, rec.recorded_at)
        refs = {ref.entry_id: ref for ref in event.refs}
        for eid in event.entry_ids:
            ref = refs.get(eid) or DeletedRef(eid, "unknown", rec.seq)
            if ref.kind == "memory":
                self._delete_memory(eid)
            elif ref.kind == "session":
                self._delete_session(eid)
            else:
                self._delete_entry(ref, tomb)
        drop_derived(self.txn, self.dbs[b"derived"], set(event.entry_ids))

    def _delete_entry(self, ref: DeletedRef, tomb: TombstoneInfo) -> None:
        """Drop every version; what remains comes from the tombstone alone, so a
        replay (where the erased payload never appears) builds the same state."""
        db = self.dbs[b"entries"]
        versions = list(all_versions(self.txn, db, ref.entry_id))
        for seq, _ in versions:
            self.txn.delete(version_key(ref.entry_id, seq), db=db)
        last = _entry(versions[-1][1]) if versions else None
        if last is not None:
            self._unindex(last)
            if last.state in SHOWN_STATES:
                self._uncount(last)
        self.put(b"deleted", ref.entry_id.encode(), r.entry_deleted(ref, tomb))
        if ref.kind == "preference":
            self.keyed.left(ref.entry_id)

    def _uncount(self, stored: StoredEntry) -> None:
        if stored.session_id:
            # Removing an entry can lower last_activity, which no increment can
            # undo: the session's statistics are recomputed at the end of the batch.
            self.recompute.add(stored.session_id)
        self.count("entries", -1)
        self.count(f"kind:{stored.kind}", -1)

    def _entry_redacted(self, rec: RecordedEvent, event: EntryRedacted) -> None:
        """Replace every version by the redacted entry (the removed text never shows)."""
        if event.redacted is None:
            return
        db = self.dbs[b"entries"]
        versions = list(all_versions(self.txn, db, event.entry_id))
        if not versions and self.txn.get(event.entry_id.encode(), db=self.dbs[b"deleted"]) is not None:
            return  # logged after the entry's deletion (a race the write side refuses): deletion is final
        for seq, _ in versions:
            self.txn.delete(version_key(event.entry_id, seq), db=db)
        last = _entry(versions[-1][1]) if versions else None
        if last is not None:
            self._unindex(last)
            if last.state in SHOWN_STATES:
                self._uncount(last)
        entry = event.redacted
        first = r.entry_redacted(rec, event, entry, event.target_seq)
        self.put(b"entries", version_key(event.entry_id, event.target_seq), first)
        self.put(b"entries", version_key(event.entry_id, rec.seq),
                 r.entry_redacted(rec, event, entry, rec.seq))
        self._index(first, entry.derived_from)
        f.entry_indexed(self.txn, self.dbs, first, entry)  # -- formation --
        u.entry_indexed(self.txn, self.dbs, first, entry)  # -- upkeep --
        self._counted(first, 1)
        if entry.kind == "preference":
            self.keyed.joined(entry, event.target_seq)

    def _index(self, stored: StoredEntry, derived_from: tuple[str, ...]) -> None:
        sid = stored.session_id or ""
        eid = stored.entry_id
        self.txn.put(u64(stored.recorded_seq), _rank(stored), db=self.dbs[b"by_seq"])
        self.txn.put(hash_key(eid), b"", db=self.dbs[b"by_hash"])
        self.txn.put(session_key(sid, stored.occurred_at, eid), stored.kind.encode(),
                     db=self.dbs[b"by_session"])
        self.txn.put(when_key(stored.occurred_at, eid), sid.encode(), db=self.dbs[b"by_time"])
        for parent in derived_from:
            self.txn.put(time_key(parent, eid), b"", db=self.dbs[b"derived"])

    def _unindex(self, stored: StoredEntry) -> None:
        sid = stored.session_id or ""
        self.txn.delete(session_key(sid, stored.occurred_at, stored.entry_id), db=self.dbs[b"by_session"])
        self.txn.delete(when_key(stored.occurred_at, stored.entry_id), db=self.dbs[b"by_time"])
        self.txn.delete(u64(stored.recorded_seq), db=self.dbs[b"by_seq"])
        self.txn.delete(hash_key(stored.entry_id), db=self.dbs[b"by_hash"])
        f.entry_unindexed(self.txn, self.dbs, stored)  # -- formation --
        u.entry_unindexed(self.txn, self.dbs, stored)  # -- upkeep --

    def _compacted(self, rec: RecordedEvent, event: SessionCompacted) -> None:
        for eid in event.removed_entry_ids:
            prev = self.current_entry(eid)
            if prev is None or prev.state not in SHOWN_STATES:
                continue
            self.put(b"entries", version_key(eid, rec.seq),
                     msgspec.structs.replace(prev, state="compacted", changed_seq=rec.seq))
            # The indexes stay: as of an earlier seq the entry was live; readers
            # skip compacted versions now.
            self._uncount(prev)
            f.entry_compacted(self.txn, self.dbs, prev)  # -- formation --

    def _accessed(self, rec: RecordedEvent, event: EntriesAccessed) -> None:
        db = self.dbs[b"access"]
        for eid in dict.fromkeys(event.entry_ids):
            raw = latest_version(self.txn, db, eid, None)
            prev = None if raw is None else _access(raw)
            self.put(b"access", version_key(eid, rec.seq), r.accessed(prev, event.at))

    # -- sessions, memories, ledger -----------------------------------------

    def _session_update(self, session_id: str, fn: Any) -> None:
        raw = latest_version(self.txn, self.dbs[b"sessions"], session_id, None)
        if raw is None:
            return
        new: SessionView = fn(_session(raw))
        self.put(b"sessions", version_key(session_id, new.changed_seq), new)

    def _memory_saved(self, rec: RecordedEvent, event: MemorySaved) -> None:
        entity = f"{event.user_id}{SEP.decode()}{event.key}"
        self.put(b"memories", version_key(entity, rec.seq), r.memory_saved(rec, event))
        self.txn.put(event.memory_id.encode(), entity.encode(), db=self.dbs[b"memory_ids"])

    def _memory_end(self, user_id: str, key: str, fn: Any) -> None:
        entity = f"{user_id}{SEP.decode()}{key}"
        db = self.dbs[b"memories"]
        versions = list(all_versions(self.txn, db, entity))
        if not versions:
            return
        last: MemoryView = fn(_memory(versions[-1][1]))
        for seq, raw in versions:  # forgotten content leaves every earlier version
            old = _memory(raw)
            self.put(b"memories", version_key(entity, seq), fn(old))
        self.put(b"memories", version_key(entity, last.changed_seq), last)

    def _delete_memory(self, memory_id: str) -> None:
        """Drop every version of the memory; replay never sees the erased save."""
        raw = self.txn.get(memory_id.encode(), db=self.dbs[b"memory_ids"])
        if raw is None:
            return
        entity = bytes(raw).decode()
        db = self.dbs[b"memories"]
        for seq, _ in list(all_versions(self.txn, db, entity)):
            self.txn.delete(version_key(entity, seq), db=db)
        self.txn.delete(memory_id.encode(), db=self.dbs[b"memory_ids"])

    def _mark_archived(self, session_id: str, archived: bool) -> None:
        if latest_version(self.txn, self.dbs[b"sessions"], session_id, None) is None:
            return
        if archived:
            self.txn.put(session_id.encode(), b"", db=self.dbs[b"archived"])
        else:
            self.txn.delete(session_id.encode(), db=self.dbs[b"archived"])

    def _delete_session(self, session_id: str) -> None:
        """Drop the manifest versions (they may hold metadata) and the statistics."""
        self.txn.delete(session_id.encode(), db=self.dbs[b"archived"])
        db = self.dbs[b"sessions"]
        for seq, _ in list(all_versions(self.txn, db, session_id)):
            self.txn.delete(version_key(session_id, seq), db=db)
        self.session_stats.pop(session_id, None)
        self.txn.delete(session_id.encode(), db=self.dbs[b"session_stats"])
        f.session_gone(self.txn, self.dbs, session_id)  # -- formation --
        u.session_gone(self.txn, self.dbs, session_id)  # -- upkeep --

    def _ledger(self, request_id: str, fn: Any) -> DeletionRecord | None:
        raw = self.txn.get(request_id.encode(), db=self.dbs[b"deletions"])
        if raw is None:
            return None
        new: DeletionRecord = fn(_deletion(bytes(raw)))
        self.put(b"deletions", request_id.encode(), new)
        return new

    # -- compaction and summaries --

    def _summarised(self, rec: RecordedEvent, event: SessionSummarised) -> None:
        """Mark each summarised entry with the summary that stands for it (ids only,
        whatever became of the entries: a replay, where erased entries never
        appear, writes the same marks)."""
        value = _enc.encode(event.summary_entry_id)
        for eid in dict.fromkeys(event.summarised_entry_ids):
            self.txn.put(version_key(eid, rec.seq), value, db=self.dbs[b"summarised"])

    def _resummarised(self, rec: RecordedEvent, event: SummaryResummarised) -> None:
        """Entries the replaced summary stood for now point at the new one."""
        db = self.dbs[b"summarised"]
        old = _enc.encode(event.replaced_entry_id)
        value = _enc.encode(event.summary_entry_id)
        for eid in dict.fromkeys(event.source_entry_ids):
            raw = latest_version(self.txn, db, eid, None)
            if raw is not None and bytes(raw) == old:
                self.txn.put(version_key(eid, rec.seq), value, db=db)


def _rank(stored: StoredEntry) -> bytes:
    """The ``by_seq`` value of a stored entry: its ranking inputs and id."""
    return rank_value(stored.kind, entry_importance(stored), stored.occurred_at, stored.entry_id)
