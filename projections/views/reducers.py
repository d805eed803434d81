"""Pure reducers: the next version of an entity given the previous one and an event.

No function here does I/O or reads the clock; times come from the record's
``recorded_at``. The view runner loads the previous version, calls a reducer
and stores the result.

Entries are stored without their content (:class:`StoredEntry`); the content
stays in the log. :func:`entry_view` is the pure other half: the public
:class:`EntryView` of a stored version given the event at its ``source_seq``.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from eventstore import (
    SHOWN_STATES,
    DecayApplied,
    DeletedRef,
    DeletionRequested,
    EntriesDeleted,
    EntryChanges,
    EntryEdited,
    EntryRecorded,
    EntryRedacted,
    Event,
    FindingDetails,
    MemorySaved,
    PurgeCompleted,
    RecordedEvent,
    SessionStarted,
    SessionUpdated,
    TaskDetails,
)

from ..decay import detail_level
from ..models import (
    AccessView,
    DecayParams,
    DeletionRecord,
    EntryView,
    MemoryView,
    RedactionInfo,
    SessionStats,
    SessionView,
    StoredEntry,
    SupersededInfo,
    TombstoneInfo,
)

__all__ = [
    "accessed",
    "apply_changes",
    "decay_params",
    "deletion_done",
    "deletion_purged",
    "deletion_requested",
    "entry_changed",
    "entry_deleted",
    "entry_edited",
    "entry_recorded",
    "entry_redacted",
    "entry_superseded",
    "entry_view",
    "memory_forgotten",
    "memory_saved",
    "merge_changes",
    "session_started",
    "session_updated",
    "session_with_archive",
    "stats_added",
]

replace = msgspec.structs.replace


def entry_recorded(rec: RecordedEvent, event: EntryRecorded) -> StoredEntry:
    """A new entry, stored without its content (read back from ``rec.seq``)."""
    header = rec.header  # the replay's hot path: positional, no property calls
    seq = header.seq
    details = event.details
    level = None if details is None else detail_level(details)
    return StoredEntry(event.entry_id, event.kind, "live", seq, header.recorded_at, seq, seq,
                       None, len(event.content.encode()), event.importance, level,
                       event.session_id, event.user_id, event.occurred_at, None, None, None,
                       event.agent_id)


def entry_changed(prev: StoredEntry, rec: RecordedEvent, changes: EntryChanges) -> StoredEntry:
    """Apply an update (task done, finding status, importance, tags): the changes
    are accumulated for readers; importance and level follow :func:`apply_changes`."""
    if not prev.source_seq:
        return prev
    # apply_changes replaces a task's details by TaskDetails (no level) and keeps
    # a finding's severity when its status changes.
    level = None if changes.done is not None and prev.kind == "task" else prev.level
    importance = prev.importance if changes.importance is None else changes.importance
    return replace(prev, changes=merge_changes(prev.changes, changes), importance=importance,
                   level=level, changed_seq=rec.seq)


def entry_edited(prev: StoredEntry, rec: RecordedEvent, event: EntryEdited) -> StoredEntry:
    """The text replaced: the edit's payload carries the content from now on
    (the source still carries every other field). An entry no longer shown
    (compacted, superseded) keeps its text."""
    if not prev.source_seq or prev.state not in SHOWN_STATES:
        return prev
    return replace(prev, edits=(*prev.edits, rec.seq), size=len(event.content.encode()),
                   changed_seq=rec.seq)


def merge_changes(prev: EntryChanges | None, changes: EntryChanges) -> EntryChanges:
    """``prev`` then ``changes`` as one set: a later non-None field wins.

    Applying the merged changes once gives the entry that applying both in turn
    gives (each field of :func:`apply_changes` takes the last value it was given).
    """
    if prev is None:
        return changes
    return EntryChanges(
        status=prev.status if changes.status is None else changes.status,
        done=prev.done if changes.done is None else changes.done,
        importance=prev.importance if changes.importance is None else changes.importance,
        tags=prev.tags if changes.tags is None else changes.tags,
    )


def apply_changes(entry: EntryRecorded, changes: EntryChanges) -> EntryRecorded:
    """The entry after an update (task done, finding status, importance, tags)."""
    details = entry.details
    if changes.done is not None and entry.kind == "task":
        details = TaskDetails(done=changes.done)
    if changes.status is not None and isinstance(details, FindingDetails):
        details = replace(details, status=changes.status)
    return replace(
        entry, details=details,
        importance=entry.importance if changes.importance is None else changes.importance,
        tags=entry.tags if changes.tags is None else changes.tags,
    )


def entry_redacted(rec: RecordedEvent, event: EntryRedacted, entry: EntryRecorded,
                   changed_seq: int) -> StoredEntry:
    """Spans removed: the entry as the redaction event states it (its payload is
    the source from now on), nothing older, no earlier changes."""
    info = RedactionInfo(event.spans, event.reason, event.requested_by, rec.seq, rec.recorded_at)
    stored = entry_recorded(rec, entry)
    return replace(stored, state="redacted", redacted=info, recorded_seq=event.target_seq,
                   changed_seq=changed_seq)


def entry_deleted(ref: DeletedRef, tomb: TombstoneInfo) -> StoredEntry:
    """The entry is gone; only the tombstone's ids, kind and seqs remain."""
    return StoredEntry(
        entry_id=ref.entry_id, kind=ref.kind, state="deleted", recorded_seq=ref.recorded_seq,
        recorded_at=0, changed_seq=tomb.seq, session_id=ref.session_id, deleted=tomb,
    )


def entry_view(stored: StoredEntry, source: Event | None, edit: Event | None = None) -> EntryView:
    """The public view of a stored version, given the event at its ``source_seq``
    (None when there is none or its payload was erased: the entry is then None)
    and, for an edited entry, the event at its last edit seq (its content)."""
    entry = source.redacted if isinstance(source, EntryRedacted) else source
    if not isinstance(entry, EntryRecorded) or entry.entry_id != stored.entry_id:
        entry = None
    else:
        if stored.edits:
            entry = (replace(entry, content=edit.content, tags=entry.tags if edit.tags is None else edit.tags)
                     if isinstance(edit, EntryEdited) else None)
        if entry is not None and stored.changes is not None:
            entry = apply_changes(entry, stored.changes)
    return EntryView(  # positional (the field order of EntryView): many are built per read
        stored.entry_id, stored.kind, stored.state, entry, stored.recorded_seq, stored.recorded_at,
        stored.changed_seq, stored.session_id, stored.user_id, stored.occurred_at, stored.deleted,
        stored.redacted, stored.superseded, stored.edits,
    )


def entry_superseded(prev: StoredEntry, rec: RecordedEvent, by: str) -> StoredEntry:
    """A later item of the same user and key replaced ``prev``: it leaves what
    is current, and stays in the log and in reads as of earlier seqs."""
    info = SupersededInfo(by, rec.seq, rec.recorded_at)
    return replace(prev, state="superseded", superseded=info, changed_seq=rec.seq)


def session_started(rec: RecordedEvent, event: SessionStarted) -> SessionView:
    """A new session manifest."""
    return SessionView(
        session_id=event.session_id, user_id=event.user_id, agent_ids=event.agent_ids,
        tags=event.tags, metadata=dict(event.metadata), channel=event.channel, archived=False,
        started_at=rec.recorded_at, started_seq=rec.seq, changed_seq=rec.seq,
        ephemeral=event.ephemeral,  # -- upkeep --
    )


def session_updated(prev: SessionView, rec: RecordedEvent, event: SessionUpdated) -> SessionView:
    """Agents, tags or metadata changed."""
    return replace(
        prev, changed_seq=rec.seq,
        agent_ids=prev.agent_ids if event.agent_ids is None else event.agent_ids,
        tags=prev.tags if event.tags is None else event.tags,
        metadata=prev.metadata if event.metadata is None else {**prev.metadata, **event.metadata},
    )


def session_with_archive(prev: SessionView, rec: RecordedEvent, archived: bool) -> SessionView:
    """Archived or restored (-- upkeep: a restore is the session's activity)."""
    if not archived:
        return replace(prev, archived=False, changed_seq=rec.seq, restored_at=rec.recorded_at)
    return replace(prev, archived=archived, changed_seq=rec.seq)


def session_closed(prev: SessionView, rec: RecordedEvent) -> SessionView:
    """Closed: no new entries."""
    return replace(prev, closed_at=rec.recorded_at, changed_seq=rec.seq)


def stats_added(prev: SessionStats, entry: StoredEntry) -> SessionStats:
    """Count one more entry of its kind (its content bytes, its recording time)."""
    counts = dict(prev.counts)
    counts[entry.kind] = counts.get(entry.kind, 0) + 1
    return SessionStats(counts, prev.entries + 1, prev.bytes + entry.size,
                        max(prev.last_activity, entry.recorded_at))


def memory_saved(rec: RecordedEvent, event: MemorySaved) -> MemoryView:
    """A remembered fact, replacing any earlier one under the key."""
    return MemoryView(event.user_id, event.key, event.memory_id, event.content, "live",
                      rec.seq, rec.recorded_at, rec.seq, session_id=event.session_id)


def memory_forgotten(prev: MemoryView, rec: RecordedEvent) -> MemoryView:
    """Forgotten by key: the content goes."""
    return replace(prev, content=None, state="forgotten", changed_seq=rec.seq)


def accessed(prev: AccessView | None, at: int) -> AccessView:
    """One more access."""
    if prev is None:
        return AccessView(1, at)
    return AccessView(prev.count + 1, max(prev.last_at, at))


def decay_params(event: DecayApplied) -> DecayParams:
    """Parameters in force from the event on (unknown kinds keep defaults)."""
    rates = {**DecayParams().rates, **event.rates}
    return DecayParams(rates, event.floor, event.access_boost, event.importance_boost,
                       event.as_of)


def deletion_requested(rec: RecordedEvent, event: DeletionRequested) -> DeletionRecord:
    """A new ledger line."""
    criteria: Mapping[str, object] = msgspec.to_builtins(event.criteria)
    return DeletionRecord(event.request_id, event.reason, event.requested_by, dict(criteria),
                          rec.seq, rec.recorded_at)


def deletion_done(prev: DeletionRecord, rec: RecordedEvent, event: EntriesDeleted) -> DeletionRecord:
    """The tombstone landed."""
    return replace(prev, entry_ids=event.entry_ids, erased_seqs=event.erased_seqs,
                   counts_by_kind=dict(event.counts_by_kind), deleted_seq=rec.seq,
                   deleted_at=rec.recorded_at)


def deletion_purged(prev: DeletionRecord, rec: RecordedEvent, event: PurgeCompleted) -> DeletionRecord:
    """The physical purge finished."""
    return replace(prev, purge_seq=rec.seq, purged_at=rec.recorded_at,
                   purge_verified=event.verified, files_rewritten=event.files_rewritten)
