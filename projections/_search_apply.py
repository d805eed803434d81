"""What each record does to the search index: a pure mapping to operations.

The operations are computed from the record and the views as of the record's
seq (already caught up), so a replay produces the same index as live updates.
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

from ._view_read import ViewReader
from .search import entry_document

__all__ = ["Op", "search_ops"]

# ("add", entry_id, document) or ("remove", entry_id, rseq)
Op = tuple[str, str, Any]


def search_ops(rec: RecordedEvent, views: ViewReader) -> Iterator[Op]:
    """The index operations for one record; ``views`` reads as of ``rec.seq``."""
    event = rec.event
    match event:
        case EntryRecorded():
            view = views.entry(event.entry_id)
            if view is not None and view.recorded_seq == rec.seq and view.entry is not None:
                yield "add", event.entry_id, entry_document(view.entry, rec.seq, rec.seq)
        case EntryUpdated() | EntryRedacted():
            yield from _reindex(event.entry_id, views, None)
        case SessionCompacted():
            for eid in event.removed_entry_ids:
                yield from _reindex(eid, views, rec.seq)
        case EntriesDeleted():
            for eid in event.entry_ids:
                view = views.entry(eid)
                if view is not None:
                    yield "remove", eid, view.recorded_seq
        case _:
            return


def _reindex(entry_id: str, views: ViewReader, ended: int | None) -> Iterator[Op]:
    view = views.entry(entry_id)
    if view is None or view.entry is None:
        return
    yield "remove", entry_id, view.recorded_seq
    if ended is None:
        yield "add", entry_id, entry_document(view.entry, view.recorded_seq, view.recorded_seq)
    else:
        yield "add", entry_id, entry_document(view.entry, view.recorded_seq, view.recorded_seq, ended)
