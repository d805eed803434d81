"""The texts an edited entry had: its source's, then each ``entry.edited``'s.

The views store an entry without content; an edited one keeps the seqs of its
edits (``StoredEntry.edits``), whose payloads carry its later texts. The
search index holds one document per text, each current from its edit's seq.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from eventstore import EntryEdited, EntryRecorded, Event

from ..models import StoredEntry
from .reducers import entry_view

__all__ = ["entry_versions"]

_EventsAt = Callable[[Sequence[int]], list[Event | None]]  # the log's batch read (see .read)


def entry_versions(stored: StoredEntry | None, events_at: _EventsAt) -> list[tuple[int, EntryRecorded]]:
    """The texts of ``stored``, oldest first: (the seq from which each was
    current, the entry with it); the stored changes apply to each. Empty when
    the entry or its source payload is gone."""
    if stored is None or not stored.source_seq:
        return []
    events = events_at([stored.source_seq, *stored.edits])
    first = entry_view(msgspec.structs.replace(stored, edits=()), events[0]).entry
    if first is None:
        return []
    versions = [(stored.recorded_seq, first)]
    for seq, event in zip(stored.edits, events[1:], strict=True):
        if isinstance(event, EntryEdited):
            tags = first.tags if event.tags is None else event.tags
            versions.append((seq, msgspec.structs.replace(first, content=event.content, tags=tags)))
    return versions
