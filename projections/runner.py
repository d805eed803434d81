"""The projection runner: owns the I/O, the checkpoints and rebuilds.

Layout under the data directory::

    proj -> proj-<n>/          (a symlink, swapped atomically by a replay)
    proj-<n>/views/            the views LMDB environment
    proj-<n>/search/shard-NN/  the Tantivy shards

Before any read, the projections it needs catch up from their checkpoint to the
log head, so an append that returned is visible to the next read from any
process. Views catch up eagerly; the search index on search (its commits cost
milliseconds, so they are batched until someone searches).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from eventstore import EventLog, RecordedEvent, RetiredError
from eventstore.storage import ensure_private_dir, purge_env, wipe_tree

from ._fsutil import wipe_dir
from ._skips import Skipped, add_skips, error_class, read_skips, unapplicable, warn_skipped
from .search import OPEN_SEQ, Ranking, SearchIndex, SearchQuery, entry_document, rank, search_ops
from .views import VIEW_DBS, ViewReader, ViewStore

__all__ = ["Projections", "PurgeSplit"]

_VIEW_CHUNK = 50_000
_SEARCH_LAG = 1_000

Progress = Callable[[int], None]
# The projections' on-disk layout; a directory marked otherwise is rebuilt on open.
# 2: the views' by_hash index, and search shards by crc32 range.
# 3: by_seq values carry ranking inputs (kind, importance, occurred_at) before the id.
# 4: content-free entries (StoredEntry): an entry is read from the log payload at its source seq.
LAYOUT = "4"


class Projections:
    """Views and search for one data directory, kept caught up with the log."""

    def __init__(self, data_dir: Path, log: EventLog, *, shards: int = 16, sync: bool = True) -> None:
        self.data_dir = data_dir
        self.log = log
        self.shards = shards
        self.sync = sync
        self._link = data_dir / "proj"
        self._target: str | None = None
        self.views: ViewStore | None = None
        self.search_index: SearchIndex | None = None
        self._ensure_link()
        self._open()

    # -- lifecycle ----------------------------------------------------------

    def _ensure_link(self) -> None:
        if not self._link.is_symlink():
            target = "proj-0"
            (self.data_dir / target).mkdir(mode=0o700, exist_ok=True)
            tmp = self.data_dir / f".proj-link-{secrets.token_hex(4)}"
            os.symlink(target, tmp)
            os.replace(tmp, self._link)

    def _open(self) -> None:
        self._target = os.readlink(self._link)
        root = self.data_dir / self._target
        fresh = not (root / "views").exists()
        if fresh:
            _mark_layout(root, self._layout_mark)
        outdated = not fresh and _layout(root) != self._layout_mark
        # The views are rebuilt from the log, so they are not fsynced per commit:
        # a power loss can only roll them (and their checkpoint) back.
        self.views = ViewStore(root / "views", sync=False, events_at=self.log.events_at)
        self._indexed_head = -1
        self._views_at = -1
        self.search_index = SearchIndex(root / "search", self.shards)
        if outdated:
            # Built by an older memlog (other keys or shard assignment) or with
            # another shard count: rebuild.
            self.replay()

    @property
    def _layout_mark(self) -> str:
        return f"{LAYOUT} shards={self.shards}"

    def _check_current(self) -> None:
        if os.readlink(self._link) != self._target:
            self._close_stores()
            self._open()

    def _close_stores(self) -> None:
        if self.search_index is not None:
            self.search_index.close()
            self.search_index = None
        if self.views is not None:
            self.views.close()
            self.views = None

    def close(self) -> None:
        """Close the views and search shards."""
        self._close_stores()

    @property
    def root(self) -> Path:
        """The directory of the projections in use."""
        return self.data_dir / (self._target or "proj-0")

    # -- catching up --------------------------------------------------------

    def catch_up(self, search: bool = False, progress: Progress | None = None) -> int:
        """Bring the views (and the search index) up to the log head."""
        self._check_current()
        head = self.log.head().seq
        done = self._catch_up_views(head, progress)
        if search:
            self._catch_up_search(head, progress)
        return done

    def _catch_up_views(self, head: int, progress: Progress | None) -> int:
        assert self.views is not None
        if head <= self._views_at:
            return self._views_at  # this process saw the views there; they only move on
        done = self.views.checkpoint()
        while done < head:
            upto = min(head, done + _VIEW_CHUNK)
            done = self.views.apply(functools.partial(_after, self.log, upto), upto)
            if progress:
                progress(done)
        self._views_at = done
        return done

    def _catch_up_search(self, head: int, progress: Progress | None) -> None:
        index = self.search_index
        assert index is not None and self.views is not None
        if head == self._indexed_head:
            return  # nothing appended since this process last caught the index up
        with index.lock.shared(), _file_lock(self.root / "search.lock"):
            index.refresh()
            marks = [shard.checkpoint() for shard in index.shards]
            start = min(marks)
            if start < head:
                try:
                    skipped = self._index_range(index, marks, start + 1, head, progress)
                    if skipped:  # before the commit: a crash in between records them again
                        add_skips(self.root / "search" / "skipped", skipped)
                except BaseException:
                    index.rollback()
                    raise
                for i, shard in enumerate(index.shards):
                    if shard.dirty or head - marks[i] >= _SEARCH_LAG:
                        shard.commit(head)
            self._indexed_head = head

    def _index_range(self, index: SearchIndex, marks: list[int], first: int, last: int,
                     progress: Progress | None) -> list[Skipped]:
        """Index records ``first`` to ``last``; return those that could not be
        indexed (each is skipped, reported and logged)."""
        assert self.views is not None
        skipped = []
        with self.views.read() as views:
            for rec in self.log.read(first, last):
                views.as_of = rec.seq
                try:
                    _index_record(index, marks, rec, views)
                except Exception as exc:
                    if not unapplicable(exc):
                        raise
                    skipped.append(Skipped(rec.seq, rec.type, error_class(exc), "search"))
                    warn_skipped(skipped[-1])
                if progress and rec.seq % 10_000 == 0:
                    progress(rec.seq)
        return skipped

    # -- reads --------------------------------------------------------------

    @contextlib.contextmanager
    def read(self, as_of: int | None = None, search: bool = False) -> Iterator[ViewReader]:
        """Catch up, then read the views (as of a seq, if given).

        With ``search``, the search index is caught up too and its maintenance
        lock is held shared for the block, so no shard is wiped under a search.
        """
        with contextlib.ExitStack() as stack:
            for attempt in range(3):
                try:
                    self.catch_up(search=search)
                    assert self.views is not None and self.search_index is not None
                    if search:
                        stack.enter_context(self.search_index.lock.shared())
                        self.search_index.refresh()
                    reader = stack.enter_context(self.views.read(as_of))
                    break
                except RetiredError:
                    stack.close()
                    if attempt == 2:
                        raise
            yield reader

    def search(self, query: SearchQuery, *, as_of: int | None = None, now: int,
               reader: ViewReader | None = None) -> Ranking:
        """The entries ``query`` finds, as of a seq if given, ranked at ``now``
        (see :func:`projections.search.rank`).

        ``reader``: a reader the caller holds from :meth:`read` with
        ``search=True`` (several searches on one snapshot, as the context
        builder makes); without it, one is opened for this search.
        """
        if reader is not None:
            assert self.search_index is not None
            return rank(self.search_index, reader, query, as_of, now)
        with self.read(as_of, search=True) as views:
            assert self.search_index is not None
            return rank(self.search_index, views, query, as_of, now)

    # -- physical purge -----------------------------------------------------

    def purge(self, entry_ids: Iterable[str], timeout: float = 30.0, *, views: bool) -> PurgeSplit:
        """Rewrite the search shards holding ``entry_ids`` and, with ``views``,
        the views without stale bytes; retire leftover projection directories.

        The views hold no entry content, so a purge of entries alone leaves them
        as they are (``views_seconds`` is then 0); memory values and session
        metadata live there, so a purge of those asks for ``views``.

        The caller catches up first (:meth:`catch_up` with ``search=True``).
        The log's purge can run beside this one: the shard rebuild reads entries
        from the log only through short ``events_at`` reads.
        """
        assert self.views is not None and self.search_index is not None
        started = time.perf_counter()
        rewritten: list[str] = []
        if views:
            rewritten += [str(p) for p in purge_env(self.views.shared, timeout).files_rewritten]
        views_s = time.perf_counter() - started if views else 0.0
        index = self.search_index
        rewritten += self._rebuild_shards(sorted({index.shard_of(eid) for eid in entry_ids}), timeout)
        for path in self.data_dir.glob("proj-*"):
            if path.is_dir() and path.name != self._target:
                wipe_dir(path, VIEW_DBS)
        return PurgeSplit(tuple(rewritten), views_s, time.perf_counter() - started - views_s)

    def _rebuild_shards(self, shards: Iterable[int], timeout: float,
                        progress: Progress | None = None) -> list[str]:
        """Rebuild ``shards`` from the views into fresh directories, swap them
        in and wipe the old ones; return the shard links rewritten."""
        index = self.search_index
        assert index is not None and self.views is not None
        rewritten = []
        with index.lock.exclusive(timeout):
            for n in shards:
                with self.views.read() as reader:  # documents and checkpoint from one snapshot
                    old = index.rebuild(n, _shard_docs(reader, index, n), reader.checkpoint())
                    if progress:
                        progress(reader.checkpoint())
                rewritten.append(str(index.shards[n].link))
                wipe_tree(old)
        return rewritten

    # -- rebuild ------------------------------------------------------------

    def rebuild_search(self, progress: Progress | None = None, timeout: float = 30.0) -> int:
        """Rebuild the search index alone, shard by shard, from the views (caught
        up first): each shard is written into a fresh directory and swapped in,
        its old files wiped. Returns the seq it was rebuilt to."""
        head = self.catch_up()
        assert self.search_index is not None
        self._rebuild_shards(range(len(self.search_index.shards)), timeout, progress)
        self._indexed_head = -1
        return head

    def replay(self, until: int | None = None, progress: Progress | None = None) -> int:
        """Rebuild every projection into a fresh directory and swap it in.

        A crash before the swap leaves the old projections in use; the partial
        directory is removed by the next replay.
        """
        self._check_current()
        head = self.log.head().seq if until is None else min(until, self.log.head().seq)
        target = f"proj-{secrets.token_hex(4)}"
        fresh = Projections.__new__(Projections)
        fresh.__dict__.update(self.__dict__)
        fresh._target = target
        fresh._indexed_head = -1
        fresh._views_at = -1
        (self.data_dir / target).mkdir(mode=0o700)
        _mark_layout(self.data_dir / target, self._layout_mark)
        fresh.views = ViewStore(self.data_dir / target / "views", sync=False,
                                events_at=self.log.events_at)
        fresh.search_index = SearchIndex(self.data_dir / target / "search", self.shards)
        try:
            fresh._catch_up_views(head, progress)
            fresh._catch_up_search(head, progress)
            fresh.views.shared.env.sync(True)
        finally:
            fresh._close_stores()
        self._swap_to(target)
        return head

    def _swap_to(self, target: str) -> None:
        tmp = self.data_dir / f".proj-link-{secrets.token_hex(4)}"
        os.symlink(target, tmp)
        os.replace(tmp, self._link)
        fd = os.open(self.data_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._close_stores()
        self._open()
        for path in self.data_dir.glob("proj-*"):
            if path.name != target and path.is_dir():
                wipe_dir(path, VIEW_DBS)

    def skipped(self) -> list[Skipped]:
        """The events a projection could not apply, by seq: views and search."""
        with self.read() as views:
            found = views.skipped()
        return sorted([*found, *read_skips(self.root / "search" / "skipped")],
                      key=lambda s: (s.seq, s.projection))


def _index_record(index: SearchIndex, marks: list[int], rec: RecordedEvent, views: ViewReader) -> None:
    """Apply one record's index operations to the shards not past it."""
    for op, entry_id, arg in search_ops(rec, views):
        if rec.seq <= marks[index.shard_of(entry_id)]:
            continue
        if op == "add":
            index.add(entry_id, arg)
        else:
            index.remove(entry_id, arg)


def _after(log: EventLog, upto: int, after: int) -> Iterator[RecordedEvent]:
    """The log's records after seq ``after``, up to ``upto``."""
    return log.read(after + 1, upto)


class PurgeSplit(NamedTuple):
    """What a projection purge rewrote and how long each part took."""

    files_rewritten: tuple[str, ...]
    views_seconds: float
    search_seconds: float


def _shard_docs(views: ViewReader, index: SearchIndex, shard: int) -> Iterator[Any]:
    """The documents shard ``shard`` must hold: its entries from the views, their
    text from the log (resolved in chunks)."""
    for view in views.latest_entries_by_hash(*index.hash_range(shard)):
        if view.entry is None:
            continue
        ended = view.changed_seq if view.state == "compacted" else OPEN_SEQ
        yield entry_document(view.entry, view.recorded_seq, view.recorded_seq, ended)


def _layout(root: Path) -> str:
    try:
        return (root / "layout").read_text().strip()
    except FileNotFoundError:
        return ""


def _mark_layout(root: Path, mark: str) -> None:
    ensure_private_dir(root)
    fd = os.open(root / "layout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        os.write(fd, (mark + "\n").encode())
    finally:
        os.close(fd)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
