"""What each record does to the search index: a pure mapping to operations.

The operations are computed from the record and the views as of the record's
seq (already caught up), so a replay produces the same index as live updates.
An ``entry.recorded`` record carries its entry, so its document is built from
the record without reading the log; updates, redactions and compactions read
the entry back through the views (from the log payload at its source seq).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from eventstore import (
    EntriesDeleted,
    EntryRecorded,
    EntryRedacted,
    EntryUpdated,
    RecordedEvent,
    SessionCompacted,
)

from ..views.read import ViewReader
from ..views.reducers import apply_changes
from .index import entry_document

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
        case EntryUpdated() | EntryRedacted():
            yield from _reindex(event.entry_id, views, None)
        case SessionCompacted():
            for eid in event.removed_entry_ids:
                yield from _reindex(eid, views, rec.seq)
        case EntriesDeleted():
            for eid in event.entry_ids:
                stored = views.stored_entry(eid)
                if stored is not None:
                    yield "remove", eid, stored.recorded_seq
        case _:
            return


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
    view = views.entry(entry_id)
    if view is None or view.entry is None:
        return
    yield "remove", entry_id, view.recorded_seq
    if ended is None:
        yield "add", entry_id, entry_document(view.entry, view.recorded_seq, view.recorded_seq)
    else:
        yield "add", entry_id, entry_document(view.entry, view.recorded_seq, view.recorded_seq, ended)
