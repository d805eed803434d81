"""What a process's searches keep between them (:class:`SearchCache`): the
log's events by seq (a seq's payload never changes) and the views' memo of
current entries (:mod:`projections.views.current`, which says why it stays
true without invalidation). Both serve current reads only, and only on a
snapshot the log has not moved past (:func:`fresh`), so they never serve a
text the log has erased: an older snapshot may not show a deletion yet,
while the log has already erased its payloads.

Nor does the process keep such a text longer than it must: the owner
(:class:`~projections.Projections`) empties the cache on every purge it runs
and on close, and a search empties it first when its snapshot shows an
erasing event (a deletion's tombstone, a redaction) the cache has not seen,
which is how a deletion made by another process reaches this one. The term
counts of :mod:`.bm25` go with it (:func:`~.bm25.forget_texts`). What a
search read before an emptying is not kept after it (the memo's generation).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from eventstore import EntriesDeleted, EntryRedacted

from ..views import ViewReader
from ..views.current import MEMO_MAX, CurrentMemo
from .bm25 import forget_texts

__all__ = ["ERASING_TYPES", "SearchCache", "cached_reads", "fresh"]

# The events whose append erases payloads (memlog's tombstones).
ERASING_TYPES = tuple(str(t.__struct_config__.tag) for t in (EntriesDeleted, EntryRedacted))


class SearchCache:
    """The log's events by seq, and the views' memo; see the module's text."""

    __slots__ = ("erased_at", "events", "memo")

    def __init__(self) -> None:
        self.events: dict[int, Any] = {}
        self.memo = CurrentMemo()
        self.erased_at = 0  # the last erasing event's seq when the cache was last emptied

    def clear(self) -> None:
        """Forget everything (a purge, a close, an erasure seen), the term
        counts too; the memo's generation moves on."""
        self.events.clear()
        self.memo.clear()
        forget_texts()


def fresh(cache: SearchCache, views: ViewReader, log_head: Callable[[], int]) -> SearchCache | None:
    """``cache`` for a search on ``views``, or None (read afresh): the cache
    serves only current reads on a snapshot the log has not moved past. An
    older snapshot would not show a deletion appended since in its counters
    (so :func:`cached_reads` would not empty the cache), while the log may
    already have erased its payloads; read afresh, such an entry comes back
    without its text and is dropped."""
    if views.as_of is not None or log_head() > views.checkpoint():
        return None
    return cache


@contextlib.contextmanager
def cached_reads(views: ViewReader, cache: SearchCache | None) -> Iterator[None]:
    """Serve ``views``' current reads of payloads and entries from ``cache``
    for the block (see :func:`fresh`); as of a seq, without a cache, or on a
    snapshot older than an erasure the cache has seen, ``views`` reads as it is."""
    erased_at = -1 if cache is None or views.as_of is not None else views.last_seq_of(ERASING_TYPES)
    if cache is None or erased_at < cache.erased_at:
        yield
        return
    if erased_at > cache.erased_at:
        cache.clear()
        cache.erased_at = erased_at
    since = cache.memo.generation
    fetch = views.events_at
    events = cache.events

    def events_at(seqs: Sequence[int]) -> list[Any]:
        # From a local copy: another thread's search may empty the cache meanwhile.
        found = {seq: events.get(seq) for seq in seqs}
        missing = [seq for seq, event in found.items() if event is None]
        if missing:
            fetched = fetch(missing)
            keep = cache.memo.generation == since  # nothing read before an emptying is kept after it
            if keep and len(events) + len(missing) > MEMO_MAX:
                events.clear()
            for seq, event in zip(missing, fetched, strict=True):
                found[seq] = event
                if keep and event is not None:
                    events[seq] = event
        return [found[seq] for seq in seqs]

    views.events_at = events_at
    views.memo = (cache.memo, since)
    try:
        yield
    finally:
        views.events_at = fetch
        views.memo = None
