"""The projection runner: owns the I/O, the checkpoints and rebuilds.

Layout under the data directory::

    proj -> proj-<n>/          (a symlink, swapped atomically by a replay)
    proj-<n>/views/            the views LMDB environment
    proj-<n>/search/shard-NN/  the Tantivy shards
    proj-<n>/vectors/          the vector projection (a small LMDB environment and
                               its rows in ``part-NNNNNN/`` partitions), when an
                               embedder is installed (:mod:`projections.embed`)

Before any read, the projections it needs catch up from their checkpoint to the
log head, so an append that returned is visible to the next read from any
process. Views catch up eagerly; the search index on search (its commits cost
milliseconds, so they are batched until someone searches). An event a
projection cannot apply is skipped and reported (:mod:`projections._skips`).
The vectors catch up with the search index, from the same operations.

Opening (the link, the checks, rebuilding a broken directory) is
:class:`~projections._open.ProjectionDir`, the base class.
"""

from __future__ import annotations

import contextlib
import functools
import secrets
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal, NamedTuple, TypeVar

from eventstore import EntryRecorded, EventLog, RecordedEvent, RetiredError
from eventstore.storage import crashpoint, purge_env, wipe_tree

from ._dirs import file_lock, mark_layout, wipe_replaced
from ._open import LAYOUT, ProjectionDir
from ._skips import Skipped, add_skips, error_class, read_skips, unapplicable, warn_skipped
from .embed import Embedder, VectorIndex, VectorOp, default_embedder, purge_without_model
from .embed.ops import VectorFeed, vector_ops
from .search import Ranking, SearchIndex, SearchQuery, fit, rank, search_ops
from .search.apply import Op
from .search.cache import fresh
from .search.docs import shard_docs
from .views import ViewReader, ViewStore

__all__ = ["LAYOUT", "Projections", "PurgeSplit"]

_VIEW_CHUNK = 50_000
_SEARCH_LAG = 1_000
_VECTOR_CHUNK = 2_000  # records per vector transaction when the vectors catch up alone
VECTOR_WORKER_EVENTS = 50_000  # a replay from this size embeds in a worker process
_VECTOR_OPS = 2_000  # operations per vector transaction during the search catch-up

Progress = Callable[[int], None]


class Projections(ProjectionDir):
    """Views and search for one data directory, kept caught up with the log.

    Opening checks the projection directory first (see
    :class:`~projections._open.ProjectionDir`): one that is broken, or of
    another layout, is rebuilt from the log into a fresh directory, as
    :meth:`replay` does; the old one is never opened.
    """

    def __init__(self, data_dir: Path, log: EventLog, *, shards: int | None = None, sync: bool = True,
                 embedder: Embedder | Literal["default"] | None = "default") -> None:
        """``shards``: a fixed search shard count; None fits it to the store
        (:func:`~projections.search.fit.shards_for` the log head; see
        :meth:`refit_due`). ``embedder``: the model of the vector projection;
        ``"default"`` is the shipped static model when numpy is installed;
        None: no vectors (text search only)."""
        self._init(data_dir, log, shards, sync, None,
                   default_embedder() if embedder == "default" else embedder)
        self._ensure_link()
        self._open()

    # -- catching up --------------------------------------------------------

    def catch_up(self, search: bool = False, progress: Progress | None = None,
                 rebuilding: Collection[int] = ()) -> int:
        """Bring the views (and the search index) up to the log head.
        ``rebuilding``: shards about to be rebuilt (a purge), whose changes are
        rolled back rather than committed (a commit may wait 0.5 s on a merge)."""
        self._check_current()
        head = self.log.head().seq
        done = self._catch_up_views(head, progress)
        if search:
            self._catch_up_search(head, progress, rebuilding)
            self._catch_up_vectors(head, progress)
        return done

    def refit_due(self, head: int | None = None) -> bool:
        """Whether the search shard count no longer fits the store (when it is
        fitted, not fixed). A search never refits (a read never waits for a
        write): :meth:`replay` and :meth:`refit` (``memlog maintain``) rebuild
        with the count that fits, and a store keeps its count until then."""
        head = self.log.head().seq if head is None else head
        return self.shards is None and self.wanted_shards(head) != self.shard_count

    def refit(self, progress: Progress | None = None) -> bool:
        """Replay into a directory with the shard count that fits the store,
        unless another process did so meanwhile; whether it replayed. Readers
        keep the directory they have until the link moves, as for any replay."""
        with file_lock(self.data_dir / "proj.lock"):
            self._check_current()  # another process may have refitted
            if not self.refit_due():
                return False
            self._replay_locked(None, progress)
            return True

    def _catch_up_views(self, head: int, progress: Progress | None) -> int:
        assert self.views is not None
        if head <= self._views_at:
            return self._views_at  # this process saw the views there; they only move on
        start = done = self.views.checkpoint()
        while done < head:
            upto = min(head, done + _VIEW_CHUNK)
            done = self.views.apply(functools.partial(_after, self.log, upto), upto)
            if progress:
                progress(done)
        if done - start >= fit.ONE_PASS_EVENTS:  # a long catch-up: the runs' freed heap back to the system
            fit.return_freed_memory()
        self._views_at = done
        return done

    def _catch_up_search(self, head: int, progress: Progress | None,
                         rebuilding: Collection[int] = ()) -> None:
        index = self.search_index
        assert index is not None and self.views is not None
        if head == self._indexed_head:
            return  # nothing appended since this process last caught the index up
        with index.lock.shared(), file_lock(self.root / "search.lock"):
            index.refresh()
            marks = [shard.checkpoint() for shard in index.shards]
            start = min(marks)
            for i in rebuilding:  # nothing is indexed into a shard its rebuild replaces
                marks[i] = max(marks[i], head)
            for n, shards in enumerate(fit.search_passes(marks, head, start)):
                self._search_pass(index, marks, shards, (start, head), progress, feed_vectors=n == 0)
            for i in rebuilding:
                index.shards[i].rollback()  # its rebuild follows; until then the next catch-up redoes it
            if not rebuilding:
                self._indexed_head = head

    def _search_pass(self, index: SearchIndex, marks: list[int], shards: list[int],
                     span: tuple[int, int], progress: Progress | None, feed_vectors: bool) -> None:
        """Index the records after ``span[0]`` up to ``span[1]`` into ``shards``
        (the first pass also feeds the vectors), then commit those shards."""
        start, head = span
        pass_marks = [mark if i in shards else max(mark, head) for i, mark in enumerate(marks)]
        try:
            with (self._vector_feed(start) if feed_vectors else contextlib.nullcontext()) as feed:
                skipped = self._index_range(index, pass_marks, start + 1, head, progress, feed)
            if skipped:  # before the commit: a crash in between records them again
                add_skips(self.root / "search" / "skipped", skipped)
        except BaseException:
            index.rollback()
            raise
        for i in shards:
            shard = index.shards[i]
            if shard.dirty or head - marks[i] >= _SEARCH_LAG:
                shard.commit(head)
        if head - start >= fit.ONE_PASS_EVENTS:  # a long pass: its writers' memory back to the system
            fit.return_freed_memory()

    def _index_range(self, index: SearchIndex, marks: list[int], first: int, last: int,
                     progress: Progress | None, feed: VectorFeed | None) -> list[Skipped]:
        """Index records ``first`` to ``last`` (and feed their operations to the
        vectors); return those that could not be indexed (each is skipped,
        reported and logged); without a feed, an entry for a shard past it is passed over."""
        assert self.views is not None
        skipped = []
        with self.views.read() as views:
            for rec in self.log.read(first, last):
                if progress and rec.seq % 10_000 == 0:
                    progress(rec.seq)
                if feed is None and _indexed_past(index, marks, rec):
                    continue
                views.as_of = rec.seq
                ops: list[Op] = []
                try:
                    ops = list(search_ops(rec, views))
                    index.apply(marks, rec.seq, ops)
                except Exception as exc:
                    if not unapplicable(exc):
                        raise
                    skipped.append(Skipped(rec.seq, rec.type, error_class(exc), "search"))
                    warn_skipped(skipped[-1])
                if feed is not None:
                    feed.add(rec.seq, ops)
        return skipped

    @contextlib.contextmanager
    def _vector_feed(self, start: int) -> Iterator[VectorFeed | None]:
        """A feed of the vectors (created if need be) for the search catch-up's
        pass over the records after ``start``, under the vectors' lock; None
        without an embedder, or when the vectors are behind ``start`` (they then
        catch up alone). What it collected is applied when the pass ends
        without an error."""
        vectors = self._vector_store()
        if vectors is None:
            yield None
            return
        with file_lock(self.root / "vectors.lock"):
            feed = VectorFeed(vectors, _VECTOR_OPS)
            if feed.done < start:
                yield None
                return
            yield feed
            feed.flush()

    def _vector_store(self) -> VectorIndex | None:
        """The vectors (the first search of this projection directory creates
        them), or None without an embedder."""
        if self.embedder is not None and self.vectors is None:
            self.vectors = VectorIndex(self.root / "vectors", self.embedder)
        return self.vectors

    def _catch_up_vectors(self, head: int, progress: Progress | None) -> None:
        """Bring the vectors to ``head``, a chunk of records per transaction
        (the chunk's texts embedded in one call)."""
        vectors = self._vector_store() if head != self._vectors_head else None
        if vectors is None:
            return
        with file_lock(self.root / "vectors.lock"):
            done = vectors.checkpoint()
            while done < head:
                upto = min(head, done + _VECTOR_CHUNK)
                ops, skipped = self._vector_range(done + 1, upto)
                if skipped:  # before the commit: a crash in between records them again
                    add_skips(self.root / "vectors.skipped", skipped)
                done = vectors.apply(ops, upto)
                if progress:
                    progress(done)
        self._vectors_head = head

    def _vector_range(self, first: int, last: int) -> tuple[list[VectorOp], list[Skipped]]:
        """The vector operations of records ``first`` to ``last``, and the records
        that could not be mapped (skipped, reported and logged, as for search)."""
        assert self.views is not None
        ops: list[VectorOp] = []
        skipped = []
        with self.views.read() as views:
            for rec in self.log.read(first, last):
                views.as_of = rec.seq
                try:
                    ops += vector_ops(rec, views)
                except Exception as exc:
                    if not unapplicable(exc):
                        raise
                    skipped.append(Skipped(rec.seq, rec.type, error_class(exc), "vectors"))
                    warn_skipped(skipped[-1])
        return ops, skipped

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
            return rank(self.search_index, reader, query, as_of, now, self.vectors, self.embedder,
                        fresh(self.search_cache, reader, self._head))
        with self.read(as_of, search=True) as views:
            assert self.search_index is not None
            return rank(self.search_index, views, query, as_of, now, self.vectors, self.embedder,
                        fresh(self.search_cache, views, self._head))

    # -- physical purge -----------------------------------------------------

    def purge(self, entry_ids: Iterable[str], timeout: float = 30.0, *, views: bool,
              every_shard: bool = False, reads_done: Callable[[], None] | None = None) -> PurgeSplit:
        """Rewrite the search shards holding ``entry_ids`` and, with ``views``,
        the views without stale bytes; retire leftover projection directories.
        ``every_shard`` rebuilds every shard (a purge whose scan found content).

        The views hold no entry content, so a purge of entries alone leaves them
        as they are (``views_seconds`` is then 0); memory values and session
        metadata live there, so a purge of those asks for ``views``.

        It catches up first (the shards it rebuilds are not committed then).
        ``reads_done`` is called once it has read all it reads from the log
        (the last shard's documents; Tantivy then commits, without the GIL):
        the log's purge, which holds the log exclusive while it rewrites a
        segment, is best started then, or reads wait for it.
        """
        assert self.views is not None and self.search_index is not None
        index = self.search_index
        shards = set(range(len(index.shards))) if every_shard else {index.shard_of(e) for e in entry_ids}
        self.catch_up(search=True, rebuilding=shards)
        self.search_cache.clear()  # no deleted text stays in this process's payloads, views or term counts
        started = time.perf_counter()
        rewritten: list[str] = []
        # The vectors' compacting copies (of the partitions that lost a vector;
        # LMDB releases the GIL) run beside the views' copy and the shard rebuild.
        with ThreadPoolExecutor(1, thread_name_prefix="memlog-vectors") as pool:
            vectors_job = pool.submit(self._purge_vectors, timeout, every_shard)
            if views:
                rewritten += [str(p) for p in purge_env(self.views.shared, timeout).files_rewritten]
            views_s = time.perf_counter() - started if views else 0.0
            rewritten += self._rebuild_shards(sorted(shards), timeout, reads_done=reads_done)
            rewritten += vectors_job.result()
        self._sweep_leftovers()
        return PurgeSplit(tuple(rewritten), views_s, time.perf_counter() - started - views_s)

    def _purge_vectors(self, timeout: float, everything: bool = False) -> list[str]:
        """Rewrite the vector partitions that lost a vector (a vector can leak
        its text). A process without an embedder cannot bring the vectors up
        to date, so it empties them instead (processes with one then rebuild them)."""
        crashpoint("vectors: compacting copy")
        if self.vectors is not None:
            return self.vectors.purge(timeout, everything)
        if not (self.root / "vectors" / "data.mdb").exists():
            return []
        return purge_without_model(self.root / "vectors", timeout)

    def _rebuild_shards(self, shards: Sequence[int], timeout: float, progress: Progress | None = None,
                        reads_done: Callable[[], None] | None = None) -> list[str]:
        """Rebuild ``shards`` from the views into fresh directories, swap them
        in and wipe the old ones; return the shard links rewritten.
        ``reads_done``: called after the last shard's documents are read."""
        index = self.search_index
        assert index is not None and self.views is not None
        rewritten = []
        if reads_done is not None and not shards:
            reads_done()
        with index.lock.exclusive(timeout):
            index.sweep_orphans()
            for i, n in enumerate(shards):
                with self.views.read() as reader, contextlib.closing(  # a helper process stops with it
                        shard_docs(reader, index, n, self._worker_paths())) as made:
                    docs = _then(made, reads_done) if reads_done and i == len(shards) - 1 else made
                    old = index.rebuild(n, docs, reader.checkpoint())
                    if progress:
                        progress(reader.checkpoint())
                rewritten.append(str(index.shards[n].link))
                crashpoint("search: wipe the old shard")
                wipe_tree(old)
        return rewritten

    def _worker_paths(self) -> tuple[Path, Path] | None:
        """The log's and the views' directories, for a process helping a shard
        rebuild (:mod:`.search.docs_worker`); None when the log is not local."""
        assert self.views is not None
        log = self.log.local_path
        return None if log is None else (log, self.views.path)

    def _sweep_leftovers(self) -> None:
        """Wipe what interrupted purges and rebuilds left beside the projections
        in use: other projection directories and temporary links."""
        if any(p.name != self._target for p in self.data_dir.glob("proj-*")):
            crashpoint("projections: wipe a replaced directory")
            with file_lock(self.data_dir / "proj.lock"):  # never a replay's half-built directory
                wipe_replaced(self.data_dir, self._target or "")
        for link in self.data_dir.glob(".proj-link-*"):
            link.unlink(missing_ok=True)

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
        """Rebuild every projection from the log into a fresh directory and swap it in.

        The projections in use are never read, so a broken directory does not
        stop a replay; it is wiped afterwards like any replaced one. A crash
        before the swap leaves the old projections in use; the partial
        directory is removed by the next replay.
        """
        with file_lock(self.data_dir / "proj.lock"):
            return self._replay_locked(until, progress)

    def _replay_locked(self, until: int | None, progress: Progress | None) -> int:
        head = self.log.head().seq if until is None else min(until, self.log.head().seq)
        target = f"proj-{secrets.token_hex(4)}"
        root = self.data_dir / target
        root.mkdir(mode=0o700)
        fresh = Projections.__new__(Projections)
        fresh._init(self.data_dir, self.log, self.shards, self.sync, target, self.embedder)
        fresh.shard_count = self.wanted_shards(head)
        mark_layout(root, fresh._layout_mark)
        try:
            fresh.views = ViewStore(root / "views", sync=False, events_at=self.log.events_at)
            fresh.search_index = SearchIndex(root / "search", fresh.shard_count)
            if self.embedder is not None:
                fresh.vectors = VectorIndex(root / "vectors", self.embedder)
            with fresh._vector_worker(head):
                fresh._catch_up_views(head, progress)
                fresh._catch_up_search(head, progress)
            fresh._catch_up_vectors(head, progress)
            fresh.views.shared.env.sync(True)
        finally:
            fresh._close_stores()
        self._swap_to(target)
        return head

    @contextlib.contextmanager
    def _vector_worker(self, head: int) -> Iterator[None]:
        """A replay's vectors made by a worker process on the other core (the shipped model, from
        ``VECTOR_WORKER_EVENTS`` events; :mod:`.embed.worker`), complete when the block ends."""
        vectors = self.vectors
        if vectors is None or head < VECTOR_WORKER_EVENTS or self.embedder is not default_embedder():
            yield
            return
        vectors.start_worker(self.log.local_path, head)
        try:
            yield
        except BaseException:
            vectors.stop_worker(ok=False)
            raise
        vectors.stop_worker()

    def rebuild_vectors(self, progress: Progress | None = None, timeout: float = 30.0) -> int:
        """Rebuild the vectors alone from the log (the views caught up first):
        cleared, caught up from seq 0, then rewritten by a compacting copy so
        the old file's bytes are gone. Returns the seq reached."""
        head = self.catch_up()
        if self.embedder is None:
            return head
        self._vectors_head = -1
        self._catch_up_vectors(head, None)  # opens (or creates) them
        assert self.vectors is not None
        self.vectors.clear()
        self._vectors_head = -1
        self._catch_up_vectors(head, progress)
        self.vectors.purge(timeout)
        return head

    def skipped(self) -> list[Skipped]:
        """The events a projection could not apply, by seq: views, search and vectors."""
        with self.read() as views:
            found = views.skipped()
        found += read_skips(self.root / "search" / "skipped") + read_skips(self.root / "vectors.skipped")
        return sorted(found, key=lambda s: (s.seq, s.projection))


def _indexed_past(index: SearchIndex, marks: list[int], rec: RecordedEvent) -> bool:
    """Whether ``rec`` records an entry into a shard already past it (nothing to index)."""
    event = rec.event
    return type(event) is EntryRecorded and index.past(marks, event.entry_id, rec.seq)


def _after(log: EventLog, upto: int, after: int) -> Iterator[RecordedEvent]:
    """The log's records after seq ``after``, up to ``upto``."""
    return log.read(after + 1, upto)


T = TypeVar("T")


def _then(items: Iterator[T], done: Callable[[], None]) -> Iterator[T]:
    """``items``, then a call of ``done`` once they are exhausted."""
    yield from items
    done()


class PurgeSplit(NamedTuple):
    """What a projection purge rewrote and how long each part took."""

    files_rewritten: tuple[str, ...]
    views_seconds: float
    search_seconds: float
