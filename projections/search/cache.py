"""What a process's searches keep between them (:class:`SearchCache`).

Reading the candidates is most of a search on a small store: for each, its
stored version (one cursor step), its payload from the log, and the view
built from the two. The payload of a seq never changes, and neither does the
view of a stored version: it is a pure function of the version's bytes and
the payload at its ``source_seq``. So a process keeps both, keyed by what
they are a function of, and only for current reads (``as_of`` None): the
current version of an entry never points at an erased payload (a deletion
leaves it none, a redaction points it at the redacted copy), while an older
version can. A change to an entry writes a new version, whose bytes miss the
cache; nothing is ever invalidated but by a purge.

The owner (:class:`~projections.Projections`) empties the cache on every
purge and close, as :func:`~.bm25.forget_texts` does for the term counts, so
no erased content stays in the process past its purge.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from ..models import EntryView
from ..views import ViewReader
from ..views.read import MEMO_MAX

__all__ = ["SearchCache", "cached_reads"]


class SearchCache:
    """The log's events by seq, and the current entries' views by the bytes
    of their stored version; see the module's text."""

    __slots__ = ("events", "views")

    def __init__(self) -> None:
        self.events: dict[int, Any] = {}
        self.views: dict[bytes, EntryView] = {}

    def clear(self) -> None:
        """Forget everything (a purge, a close)."""
        self.events.clear()
        self.views.clear()


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
    views.memo = cache.views
    try:
        yield
    finally:
        views.events_at = fetch
        views.memo = None
