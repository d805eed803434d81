"""What each record does to the search index: a pure mapping to operations.

The operations are computed from the record and the views as of the record's
seq (already caught up), so a replay produces the same index as live updates.
An ``entry.recorded`` record carries its entry, so its document is built from
the record without reading the log; updates, redactions and compactions read
the entry back through the views (from the log payload at its source seq).
A saved memory is a document of kind ``memory`` (routed to its shard by its
memory id, as a forget's purge looks for it); a later save under the same key
ends it, a forget removes every version. An edited entry has one document per
text, all under its recorded seq: each ends where the next edit begins.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from eventstore import (
    EntriesDeleted,
    EntryEdited,
    EntryRecorded,
    EntryRedacted,
    EntryUpdated,
    MemoryForgotten,
    MemorySaved,
    RecordedEvent,
    SessionCompacted,
)

from ..views.read import ViewReader
from ..views.reducers import apply_changes
from .index import OPEN_SEQ, entry_document, memory_document

__all__ = ["Op", "search_ops"]

# ("add", entry_id, document) or ("remove", entry_id, rseq)
Op = tuple[str, str, Any]


def search_ops(rec: RecordedEvent, views: ViewReader) -> Iterator[Op]:
    """The index operations for one record; ``views`` reads as of ``rec.seq``."""
    event = rec.event
    match event:
        case EntryRecorded():
            entry = _recorded_entry(rec, event, views)
            if entry is not None:
                yield "add", event.entry_id, entry_document(entry, rec.seq, rec.seq)
        case EntryUpdated() | EntryRedacted() | EntryEdited():
            # A compacted entry keeps its end: as of the compaction it left its session.
            yield from _reindex(event.entry_id, views, views.compacted_at(event.entry_id))
        case SessionCompacted():
            for eid in event.removed_entry_ids:
                if views.compacted_at(eid) == rec.seq:  # not one compacted earlier: its end stays
                    yield from _reindex(eid, views, rec.seq)
        case EntriesDeleted():
            for eid in event.entry_ids:
                stored = views.stored_entry(eid)
                if stored is not None:
                    yield "remove", eid, stored.recorded_seq
            for ref in event.refs:  # a forget: every saved version of the memory
                if ref.kind == "memory":
                    yield "remove", ref.entry_id, ref.recorded_seq
        case MemorySaved():
            yield from _memory_saved(rec, event, views)
        case MemoryForgotten():
            for version in views.memory_versions(event.user_id, event.key):
                yield "remove", version.memory_id, version.saved_seq
        case _:
            return


def _memory_saved(rec: RecordedEvent, event: MemorySaved, views: ViewReader) -> Iterator[Op]:
    """The saved memory's document; the version it replaces ends at this seq."""
    versions = views.memory_versions(event.user_id, event.key)
    mine = [i for i, v in enumerate(versions) if v.saved_seq == rec.seq]
    if not mine:
        return
    at = mine[0]
    if at > 0 and versions[at - 1].state == "live" and versions[at - 1].content is not None:
        old = versions[at - 1]
        yield "remove", old.memory_id, old.saved_seq
        yield "add", old.memory_id, memory_document(old, old.saved_seq, old.saved_seq, rec.seq)
    yield "add", event.memory_id, memory_document(versions[at], rec.seq, rec.seq)


def _recorded_entry(rec: RecordedEvent, event: EntryRecorded, views: ViewReader) -> EntryRecorded | None:
    """The entry recorded at ``rec`` as the views have it at that seq (None when
    the id was recorded before): from the record itself unless a redaction
    replaced it."""
    stored = views.stored_entry(event.entry_id)
    if stored is None or stored.recorded_seq != rec.seq:
        return None
    if stored.source_seq == rec.seq:
        return event if stored.changes is None else apply_changes(event, stored.changes)
    view = views.entry(event.entry_id)
    return None if view is None else view.entry


def _reindex(entry_id: str, views: ViewReader, ended: int | None) -> Iterator[Op]:
    """Every document of the entry again: one per text it had (an edit ends
    the one before it), the last ending at ``ended`` (None: open)."""
    view = views.entry(entry_id)
    if view is None or view.entry is None:
        return
    rseq = view.recorded_seq
    yield "remove", entry_id, rseq
    versions = views.entry_versions(entry_id) if view.edits else [(rseq, view.entry)]
    ends = [start for start, _ in versions[1:]] + [OPEN_SEQ if ended is None else ended]
    for (start, entry), end in zip(versions, ends, strict=True):
        yield "add", entry_id, entry_document(entry, rseq, start, end)
