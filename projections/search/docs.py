"""The documents a search shard must hold, from the views: what a shard
rebuild (a purge, ``memlog maintain --rebuild search``) writes into a fresh
directory. They are the documents live updates (:mod:`.apply`) leave there."""

from __future__ import annotations

from collections.abc import Iterator

from ..models import MemoryView
from ..views.keys import SEP, prefix_items
from ..views.read import ViewReader
from .index import OPEN_SEQ, SearchIndex, entry_document, memory_document

__all__ = ["shard_docs"]


def shard_docs(views: ViewReader, index: SearchIndex, shard: int) -> Iterator[str]:
    """The documents shard ``shard`` must hold: its entries from the views, their
    text from the log (resolved in chunks), then its saved memories."""
    for view in views.latest_entries_by_hash(*index.hash_range(shard)):
        if view.entry is None:
            continue
        ended = view.changed_seq if view.state == "compacted" else OPEN_SEQ
        yield entry_document(view.entry, view.recorded_seq, view.recorded_seq, ended)
    yield from _memory_docs(views, index, shard)


def _memory_docs(views: ViewReader, index: SearchIndex, shard: int) -> Iterator[str]:
    """The memory documents of shard ``shard``, as live updates leave them
    (:mod:`.search.apply`): every saved version still live, each ended by the
    next save of its key."""
    entities = dict.fromkeys(k[:-9] for k, _ in prefix_items(views.txn, views.dbs[b"memories"], b""))
    for entity in entities:
        user_id, _, key = entity.decode().partition(SEP.decode())
        saves: dict[int, MemoryView] = {}
        for version in views.memory_versions(user_id, key):
            saves[version.saved_seq] = version  # a later change of the same save wins
        ordered = sorted(saves.items())
        for i, (seq, memory) in enumerate(ordered):
            if memory.state != "live" or memory.content is None or index.shard_of(memory.memory_id) != shard:
                continue
            ended = ordered[i + 1][0] if i + 1 < len(ordered) else OPEN_SEQ
            yield memory_document(memory, seq, seq, ended)
