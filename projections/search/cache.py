"""What a process's searches keep between them (:class:`SearchCache`): the
log's events by seq (a seq's payload never changes) and the views' memo of
current entries (:mod:`projections.views.current`, which says why it stays
true without invalidation). Both serve current reads only.

The owner (:class:`~projections.Projections`) empties the cache on every
purge and close, as :func:`~.bm25.forget_texts` does for the term counts, so
no erased content stays in the process past its purge.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from ..views import ViewReader
from ..views.current import MEMO_MAX, CurrentMemo

__all__ = ["SearchCache", "cached_reads"]


class SearchCache:
    """The log's events by seq, and the views' memo; see the module's text."""

    __slots__ = ("events", "memo")

    def __init__(self) -> None:
        self.events: dict[int, Any] = {}
        self.memo = CurrentMemo()

    def clear(self) -> None:
        """Forget everything (a purge, a close)."""
        self.events.clear()
        self.memo.clear()


@contextlib.contextmanager
def cached_reads(views: ViewReader, cache: SearchCache | None) -> Iterator[None]:
    """Serve ``views``' current reads of payloads and entries from ``cache``
    for the block; as of a seq, or without a cache, ``views`` reads as it is."""
    if cache is None or views.as_of is not None:
        yield
        return
    fetch = views.events_at
    events = cache.events

    def events_at(seqs: Sequence[int]) -> list[Any]:
        # From a local copy: another thread's search may empty the cache meanwhile.
        found = {seq: events.get(seq) for seq in seqs}
        missing = [seq for seq, event in found.items() if event is None]
        if missing:
            fetched = fetch(missing)
            if len(events) + len(missing) > MEMO_MAX:
                events.clear()
            for seq, event in zip(missing, fetched, strict=True):
                found[seq] = event
                if event is not None:
                    events[seq] = event
        return [found[seq] for seq in seqs]

    views.events_at = events_at
    views.memo = cache.memo
    try:
        yield
    finally:
        views.events_at = fetch
        views.memo = None
