"""The forensic scan: look for byte strings in every file under a directory.

Used after a purge with the deleted content as needles (held in memory only).
Files are searched whole (large ones through a read-only map), so a needle is
found wherever it lies. LMDB lock files are not read: they hold reader slots
and mutexes, never content, and opening one (closing the descriptor drops the
lock LMDB holds on it) would let another process re-initialise the lock file
under this process's open environments (see :mod:`eventstore.storage.files`).

A purge scans every file except the stores that by construction never held
the deleted entries (:func:`purge_scope`): the payload segments it did not
rewrite (a payload is written to the one segment of its seq), the search
shards it did not rebuild (an entry is indexed in the one shard of its id)
and the vector partitions it did not rewrite (a partition that lost a vector
is marked dirty in the same transaction, and a purge rewrites every dirty
one: :mod:`projections.embed.parts`). Everything else is scanned, the log's
main environment, the views and the vectors' main environment included,
although they are meant to hold no entry content at all, and the vector
partitions rewritten (the needles then include the deleted texts' vectors:
:func:`commands.app.purging.vector_needles`).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from eventstore.storage import is_lmdb_lock_file

__all__ = ["purge_scope", "scan_needles", "scan_tree"]

_MAP_FROM = 1 << 20
# Sampling tiers (gram length, stride): a needle of at least stride + gram - 1
# bytes contains, wherever it lies, the gram at one of the data offsets the
# scan samples (every ``stride`` bytes), at an offset under ``stride`` of the
# needle. Each needle goes to the tier of the longest stride it allows.
_TIERS = ((16, 128), (16, 32), (8, 8))
_FIND_UP_TO = 6  # needles searched one by one with ``find`` rather than sampled (see Matcher)


def scan_tree(root: Path, needles: Iterable[bytes]) -> tuple[dict[str, int], int]:
    """Which files hold any needle (file -> hits) and how many bytes were read."""
    files, scanned, _ = scan_needles(root, needles)
    return files, scanned


def purge_scope(rewritten: Iterable[str]) -> Callable[[Path], bool]:
    """A filter of the files a purge's scan reads, given the files and shard
    links it rewrote: everything but untouched payload segments, shards and
    vector partitions."""
    paths = [Path(p) for p in rewritten]
    segments = {p.parent.name for p in paths if p.parent.name.startswith("seg-")}
    shards = {p.name for p in paths if p.name.startswith("shard-")}
    parts = {p.parent.name for p in paths if p.parent.name.startswith("part-")}

    def in_scope(path: Path) -> bool:
        parent = path.parent.name
        if parent.startswith("seg-") and path.parent.parent.name == "log":
            return parent in segments
        if parent.startswith("shard-") and path.parent.parent.name == "search":
            return parent.split(".")[0] in shards
        if parent.startswith("part-") and path.parent.parent.name == "vectors":
            return parent in parts
        return True

    return in_scope


def scan_needles(root: Path, needles: Iterable[bytes], scope: Callable[[Path], bool] | None = None
                 ) -> tuple[dict[str, int], int, set[bytes]]:
    """Like :func:`scan_tree`, plus which needles were found; with ``scope``,
    only the files it accepts are read."""
    matcher = Matcher(needles)
    found: dict[str, int] = {}
    which: set[bytes] = set()
    scanned = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        if is_lmdb_lock_file(path) or (scope is not None and not scope(path)):
            continue
        hits, size = _scan_file(path, matcher, which)
        scanned += size
        if hits:
            found[str(path.relative_to(root))] = hits
    return found, scanned, which


class Matcher:
    """Finds many needles in one pass per tier, exactly.

    A regex alternation of thousands of texts costs each byte of data a try
    of every alternative (158 s for 2,500 texts over a 100k-event store). Here
    each long needle is indexed by the grams at its first ``stride`` offsets;
    the scan looks up one gram every ``stride`` bytes and compares the whole
    needle where a gram matches. Needles shorter than the smallest tier are
    searched one by one (a skip-ahead substring search, several GB/s), and so
    is every needle when there are few: the sampling loop runs in Python at
    about 1.3 ns a byte (1.9 s over 1.5 GB at stride 128), a ``find`` in C at
    about 0.15 ns a byte per needle (0.2 s), so up to ``_FIND_UP_TO`` needles
    (a purge of one or a few entries) are found faster one at a time."""

    def __init__(self, needles: Iterable[bytes], find_up_to: int = _FIND_UP_TO) -> None:
        self.short: list[bytes] = []
        self.tiers: list[tuple[int, int, dict[bytes, list[tuple[bytes, int]]]]] = []
        grams: dict[tuple[int, int], dict[bytes, list[tuple[bytes, int]]]] = {}
        unique = sorted(set(needles))
        few = len(unique) <= find_up_to
        for needle in unique:
            tier = None if few else next(((k, s) for k, s in _TIERS if len(needle) >= s + k - 1), None)
            if tier is None:
                self.short.append(needle)
                continue
            k, stride = tier
            index = grams.setdefault(tier, {})
            for offset in range(stride):
                index.setdefault(needle[offset : offset + k], []).append((needle, offset))
        self.tiers = [(k, s, index) for (k, s), index in grams.items()]

    def __bool__(self) -> bool:
        return bool(self.short or self.tiers)

    def hits(self, data: bytes | mmap.mmap, which: set[bytes]) -> int:
        """How many occurrences of the needles ``data`` holds; adds the needles found to ``which``."""
        seen: set[tuple[bytes, int]] = set()
        for k, stride, index in self.tiers:
            for at in range(0, len(data) - k + 1, stride):
                for needle, offset in index.get(data[at : at + k], ()):
                    start = at - offset
                    if start >= 0 and data[start : start + len(needle)] == needle:
                        seen.add((needle, start))
        hits = len(seen)
        which.update(needle for needle, _ in seen)
        for needle in self.short:
            at = data.find(needle)
            while at >= 0:
                hits += 1
                which.add(needle)
                at = data.find(needle, at + 1)
        return hits


def _scan_file(path: Path, matcher: Matcher, which: set[bytes]) -> tuple[int, int]:
    """(hits, bytes read). Large files are mapped, not copied; LMDB and Tantivy
    files never shrink in place (a purge swaps in a new file), so the map stays valid."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if not matcher or size == 0:
                return 0, size
            if size < _MAP_FROM:
                data = fh.read()
                return matcher.hits(data, which), len(data)
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                return matcher.hits(mapped, which), size
    except (OSError, ValueError):
        return 0, 0
