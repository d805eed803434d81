"""The documents a search shard must hold, from the views: what a shard
rebuild (a purge, ``memlog replay --projection search``) writes into a fresh
directory. They are the documents live updates (:mod:`.apply`) leave there,
saved memories included."""

from __future__ import annotations

import signal
import sys
from collections.abc import Generator, Iterator
from pathlib import Path

from eventstore import EventLog

from ..models import MemoryView
from ..views import ViewStore
from ..views.keys import SEP, prefix_items
from ..views.read import ViewReader
from .docs_worker import SPLIT_FROM, DocWorker, send_docs
from .index import OPEN_SEQ, SearchIndex, entry_document, memory_document

__all__ = ["entry_docs", "shard_docs", "worker_main"]


def shard_docs(views: ViewReader, index: SearchIndex, shard: int,
               paths: tuple[Path, Path] | None = None) -> Generator[str, None, None]:
    """The documents shard ``shard`` must hold: its entries from the views, their
    text from the log (resolved in chunks), then its saved memories.

    ``paths`` (the local log's directory and the views'): a large shard's upper
    half is made by a second process (:mod:`.docs_worker`), in the same order."""
    low, high = index.hash_range(shard)
    if paths is None or _entries(views) < SPLIT_FROM * len(index.shards):
        yield from entry_docs(views, low, high)
    else:
        yield from _split_docs(views, low, high, paths)
    yield from _memory_docs(views, index, shard)


def entry_docs(views: ViewReader, low: int, high: int) -> Iterator[str]:
    """The documents of the live entries whose ``crc32(id)`` lies in ``[low, high)``, in hash order."""
    for view in views.latest_entries_by_hash(low, high):
        if view.entry is None:
            continue
        ended = view.changed_seq if view.state == "compacted" else OPEN_SEQ
        if not view.edits:
            yield entry_document(view.entry, view.recorded_seq, view.recorded_seq, ended)
            continue
        versions = views.entry_versions(view.entry_id)  # each text ends where the next edit begins
        ends = [start for start, _ in versions[1:]] + [ended]
        for (start, entry), end in zip(versions, ends, strict=True):
            yield entry_document(entry, view.recorded_seq, start, end)


def _split_docs(views: ViewReader, low: int, high: int, paths: tuple[Path, Path]) -> Iterator[str]:
    """The lower half here while a child makes the upper half; the child's are
    used only when it read the same state of the views (else made here)."""
    mid = (low + high) // 2
    try:
        worker: DocWorker | None = DocWorker(*paths, mid, high)
    except (OSError, RuntimeError):  # no process could be started: all made here
        worker = None
    upper = None
    try:
        yield from entry_docs(views, low, mid)
        upper = None if worker is None else worker.docs(views.checkpoint())
    finally:
        if worker is not None:
            worker.close()
    yield from entry_docs(views, mid, high) if upper is None else upper


def worker_main() -> None:
    """A :class:`DocWorker` child: open the log and the views (nothing is
    applied or written), send the documents of its hash range."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stopped: close the environments first
    log_path, views_path, low, high = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if not (log_path / "generation").is_file() or not (views_path / "generation").is_file():
        sys.exit(1)  # never create a store: the parent makes the documents itself
    with EventLog.open(log_path) as log:
        views = ViewStore(views_path, sync=False, events_at=log.events_at)
        try:
            with views.read() as reader:
                send_docs(sys.stdout.buffer, reader.checkpoint(), entry_docs(reader, low, high))
        finally:
            views.close()


def _entries(views: ViewReader) -> int:
    """How many entry ids the views know (deleted ones included)."""
    return int(views.txn.stat(views.dbs[b"by_hash"])["entries"])


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
