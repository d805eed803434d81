"""Opening a projection directory: the ``proj`` link, the checks, and the
rebuild of a directory that fails them.

:class:`ProjectionDir` is the lifecycle half of :class:`~projections.Projections`.
Before anything is opened the directory is checked (:mod:`projections._checks`);
a directory that is broken, of another layout, or ahead of the log is rebuilt
from the log into a fresh directory (the replay path: the broken one is never
opened) and the link swapped. Only one process rebuilds at a time
(``<dir>/proj.lock``); the others wait and open what it built. When the
rebuild itself fails (the log cannot be read), the error names the broken file
and ``memlog replay``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from eventstore import CorruptionError, EventLog, MemlogError, StorageError, UnsafeStoreError

from . import _log
from ._checks import Problem, layout_of, link_target, search_problem, views_problem
from ._dirs import file_lock, mark_layout, point_link, wipe_replaced
from .embed import Embedder, VectorIndex
from .search import SearchIndex, broken_index
from .search.cache import SearchCache
from .search.fit import shards_for
from .views import ViewStore

__all__ = ["LAYOUT", "ProjectionDir"]

# The projections' on-disk layout; a directory marked otherwise is rebuilt on open.
# 2: the views' by_hash index, and search shards by crc32 range.
# 3: by_seq values carry ranking inputs (kind, importance, occurred_at) before the id.
# 4: content-free entries (StoredEntry): an entry is read from the log payload at its source seq.
# 5: search shards stem (en_stem) and hold `dl`, `absent` and memory documents; the vectors projection.
# 6: the views' counters hold the last seq of each event type (``last:<type>``).
#    The mark's ``shards=N`` names the directory's shard count; with the count
#    fitted to the store (``shards`` None) any N is opened as it is, and a
#    replay or ``memlog maintain`` refits it (:meth:`projections.Projections.refit_due`).
# 7: the views' ``formation`` (lessons by scope, extraction backlog) and ``upkeep`` (lessons by
#    scope and age, checkpoints, ephemeral sessions) databases.
# 8: search content indexed with term frequencies, not positions (nothing asks for a phrase:
#    a shard indexes about 20 % faster and is a third smaller, which a purge's rebuild pays);
#    the vector rows in seq-range partitions (``vectors/part-NNNNNN``, :mod:`projections.embed.parts`).
# 9: the views keep each entry's agent (agents' counts by kind); a finding's search document
#    has its status and severity (the search filters of that name).
# 10: search documents hold a message's ``topic`` (the ``--topic`` filter); a memory's view, its session.
LAYOUT = "10"


class ProjectionDir:
    """The projection directory in use: link, checks, opening, recovery."""

    def _replay_locked(self, until: int | None, progress: Callable[[int], None] | None) -> int:
        """Rebuild from the log into a fresh directory and swap it in, holding
        ``proj.lock`` (:meth:`projections.Projections.replay`); returns the seq."""
        raise NotImplementedError

    def _init(self, data_dir: Path, log: EventLog, shards: int | None, sync: bool, target: str | None,
              embedder: Embedder | None = None) -> None:
        self.data_dir = data_dir
        self.log = log
        self.shards = shards  # a fixed shard count, or None: fitted to the store (shards_for)
        self.shard_count = shards or 1  # the count of the directory in use (its layout mark)
        self.sync = sync
        self._link = data_dir / "proj"
        self._target = target
        self.views: ViewStore | None = None
        self.search_index: SearchIndex | None = None
        self.embedder = embedder
        self.vectors: VectorIndex | None = None
        self._indexed_head = -1
        self._vectors_head = -1
        self._views_at = -1
        self.search_cache = SearchCache()  # searches' payloads and views (see search.cache)

    # -- lifecycle ----------------------------------------------------------

    def _ensure_link(self) -> None:
        """A new store gets ``proj -> proj-0``; a store that has projection
        directories but no link is left to :meth:`_open`, which rebuilds."""
        if self._link.is_symlink() or self._link.exists() or any(self.data_dir.glob("proj-*")):
            return
        (self.data_dir / "proj-0").mkdir(mode=0o700, exist_ok=True)
        point_link(self._link, "proj-0")

    def _open(self) -> None:
        """Open the projections the link names; rebuild them when they are broken
        or of another layout."""
        problem = self._try_open()
        if problem is not None:
            self._recover(problem)

    def _try_open(self) -> Problem | None:
        """Check and open the projections the link names; on a problem, nothing
        stays open and the problem is returned."""
        self._close_stores()
        target, problem = link_target(self._link)
        if problem is None:
            root = self.data_dir / target
            problem = (self._layout_problem(root) or views_problem(root / "views")
                       or views_problem(root / "vectors")
                       or search_problem(root / "search", self.shard_count) or self._open_stores(root))
        if problem is None:
            self._target = target
        else:
            self._close_stores()
        return problem

    def _layout_problem(self, root: Path) -> Problem | None:
        found = layout_of(root)
        count = _marked_count(found)
        if count is not None and (self.shards is None or count == self.shards):
            self.shard_count = count
            return None
        if not (root / "views").exists():  # a new directory (or its views are gone: they catch up)
            self.shard_count = self.wanted_shards(self.log.head().seq)
            mark_layout(root, self._layout_mark)
            return None
        # Built by an older memlog (other keys or shard assignment), with another
        # fixed shard count, or unreadable: rebuild.
        what = {None: "is unreadable", "": "is missing"}.get(found, "names another layout")
        return Problem(root / "layout", what)

    def _open_stores(self, root: Path) -> Problem | None:
        """Open views and search; a store that does not open, or claims more than
        the log holds, is a problem. (The head is read after the checkpoints: it
        only grows, so a concurrent append cannot make a sound store look ahead.)"""
        self._indexed_head = -1
        self._vectors_head = -1
        self._views_at = -1
        # The views are rebuilt from the log, so they are not fsynced per commit:
        # a power loss can only roll them (and their checkpoint) back.
        views = root / "views" / "data.mdb"
        try:
            self.views = ViewStore(views.parent, sync=False, events_at=self.log.events_at)
            marks = [(views, self.views.checkpoint())]
        except UnsafeStoreError:
            raise  # a planted link is refused, never repaired over
        except (StorageError, OSError) as exc:
            return Problem(views, f"does not open ({_error_name(exc)})")
        try:
            self.search_index = SearchIndex(root / "search", self.shard_count)
            marks += [(shard.link, shard.checkpoint()) for shard in self.search_index.shards]
        except BaseException as exc:
            if isinstance(exc, UnsafeStoreError) or not (isinstance(exc, StorageError) or broken_index(exc)):
                raise
            return Problem(root / "search", f"does not open ({_error_name(exc)})")
        if self.embedder is not None and (root / "vectors").exists():
            # Created by the first search's catch-up (a store never searched pays
            # nothing); a vector store of another model is cleared here.
            try:
                self.vectors = VectorIndex(root / "vectors", self.embedder)
                marks.append((root / "vectors" / "data.mdb", self.vectors.checkpoint()))
            except UnsafeStoreError:
                raise
            except (StorageError, OSError) as exc:
                return Problem(root / "vectors", f"does not open ({_error_name(exc)})")
        head = self.log.head().seq
        ahead = [path for path, mark in marks if mark > head]
        return Problem(ahead[0], "is ahead of the log") if ahead else None

    def _recover(self, problem: Problem) -> None:
        """Rebuild from the log. Only one process rebuilds (``proj.lock``); the
        others wait, then open what it built. A failure names the broken file
        and the command that fixes it."""
        started = time.perf_counter()
        try:
            with file_lock(self.data_dir / "proj.lock"):
                again = self._try_open()  # another process may have rebuilt meanwhile
                if again is None:
                    return
                _log.warning("projections_rebuilding", problem=str(again))
                head = self._replay_locked(None, None)
        except UnsafeStoreError:
            raise
        except (MemlogError, OSError, ValueError) as exc:
            raise CorruptionError(
                f"the projections cannot be used: {problem}, and rebuilding them from the log "
                f"failed ({_error_name(exc)}); once `memlog audit verify` passes, run `memlog replay`"
            ) from None
        _log.warning("projections_rebuilt", events=head, seconds=round(time.perf_counter() - started, 3))

    @property
    def _layout_mark(self) -> str:
        return f"{LAYOUT} shards={self.shard_count}"

    def wanted_shards(self, head: int) -> int:
        """The shard count a directory built at log head ``head`` gets: the
        fixed count, or :func:`~projections.search.fit.shards_for` the head."""
        return self.shards or shards_for(head)

    def _head(self) -> int:
        """The log's head seq."""
        return self.log.head().seq

    def _check_current(self) -> None:
        try:
            current = os.readlink(self._link)
        except OSError:
            current = None
        if current is None or current != self._target or self.views is None:
            self._open()

    def _close_stores(self) -> None:
        self.search_cache.clear()
        if self.vectors is not None:
            self.vectors.close()
            self.vectors = None
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

    def _swap_to(self, target: str) -> None:
        self._close_stores()
        point_link(self._link, target)
        problem = self._try_open()
        if problem is not None:
            raise CorruptionError(f"the rebuilt projections do not open: {problem}; run `memlog replay`")
        wipe_replaced(self.data_dir, target)


def _marked_count(mark: str | None) -> int | None:
    """The shard count of a layout mark of this :data:`LAYOUT` (None for another
    layout, an unreadable mark, or a count out of 1..64)."""
    layout, _, shards = (mark or "").partition(" shards=")
    if layout != LAYOUT or not shards.isdigit() or not 1 <= int(shards) <= 64:
        return None
    return int(shards)


def _error_name(exc: BaseException) -> str:
    """An error's class and, for memlog's own errors, its message (which holds no content)."""
    if isinstance(exc, MemlogError):
        return f"{type(exc).__name__}: {exc.message}"
    return type(exc).__name__
