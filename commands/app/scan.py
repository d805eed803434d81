"""The forensic scan: look for byte strings in every file under a directory.

Used after a purge with the deleted content as needles (held in memory only).
Files are searched whole (large ones through a read-only map), so a needle is
found wherever it lies. LMDB lock files are not read: they hold reader slots
and mutexes, never content, and opening one (closing the descriptor drops the
lock LMDB holds on it) would let another process re-initialise the lock file
under this process's open environments (see :mod:`eventstore.storage.files`).

A purge scans every file except the stores that by construction never held
the deleted entries (:func:`purge_scope`): the payload segments it did not
rewrite (a payload is written to the one segment of its seq) and the search
shards it did not rebuild (an entry is indexed in the one shard of its id).
Everything else is scanned, the log's main environment and the views
included, although they are meant to hold no entry content at all, and the
vector projection, which every purge rewrites (the needles then include the
deleted texts' vectors: :func:`commands.app.purging.vector_needles`).
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from eventstore.storage import is_lmdb_lock_file

__all__ = ["purge_scope", "scan_needles", "scan_tree"]

_PER_PATTERN = 400
_FIND_MAX = 2  # up to this many needles, search for each; beyond, one regex of all
_MAP_FROM = 1 << 20


def scan_tree(root: Path, needles: Iterable[bytes]) -> tuple[dict[str, int], int]:
    """Which files hold any needle (file -> hits) and how many bytes were read."""
    files, scanned, _ = scan_needles(root, needles)
    return files, scanned


def purge_scope(rewritten: Iterable[str]) -> Callable[[Path], bool]:
    """A filter of the files a purge's scan reads, given the files and shard
    links it rewrote: everything but untouched payload segments and shards."""
    paths = [Path(p) for p in rewritten]
    segments = {p.parent.name for p in paths if p.parent.name.startswith("seg-")}
    shards = {p.name for p in paths if p.name.startswith("shard-")}

    def in_scope(path: Path) -> bool:
        parent = path.parent.name
        if parent.startswith("seg-") and path.parent.parent.name == "log":
            return parent in segments
        if parent.startswith("shard-") and path.parent.parent.name == "search":
            return parent.split(".")[0] in shards
        return True

    return in_scope


def scan_needles(root: Path, needles: Iterable[bytes], scope: Callable[[Path], bool] | None = None
                 ) -> tuple[dict[str, int], int, set[bytes]]:
    """Like :func:`scan_tree`, plus which needles were found; with ``scope``,
    only the files it accepts are read."""
    wanted = sorted(set(needles), key=len, reverse=True)
    patterns = [re.compile(b"|".join(re.escape(n) for n in wanted[i : i + _PER_PATTERN]))
                for i in range(0, len(wanted), _PER_PATTERN)]
    found: dict[str, int] = {}
    which: set[bytes] = set()
    scanned = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        if is_lmdb_lock_file(path) or (scope is not None and not scope(path)):
            continue
        hits, size = _scan_file(path, wanted, patterns, which)
        scanned += size
        if hits:
            found[str(path.relative_to(root))] = hits
    return found, scanned, which


def _scan_file(path: Path, needles: list[bytes], patterns: list[re.Pattern[bytes]],
               which: set[bytes]) -> tuple[int, int]:
    """(hits, bytes read). Large files are mapped, not copied; LMDB and Tantivy
    files never shrink in place (a purge swaps in a new file), so the map stays valid."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if not needles or size == 0:
                return 0, size
            if size < _MAP_FROM:
                data = fh.read()
                return _hits(data, needles, patterns, which), len(data)
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                return _hits(mapped, needles, patterns, which), size
    except (OSError, ValueError):
        return 0, 0


def _hits(data: bytes | mmap.mmap, needles: list[bytes], patterns: list[re.Pattern[bytes]],
          which: set[bytes]) -> int:
    if len(needles) > _FIND_MAX:
        # One regex pass beats a substring search per needle.
        matches = [m.group(0) for pattern in patterns for m in pattern.finditer(data)]
        which.update(matches)
        return len(matches)
    hits = 0
    for needle in needles:  # a skip-ahead substring search: several GB/s for long needles
        at = data.find(needle)
        while at >= 0:
            hits += 1
            which.add(needle)
            at = data.find(needle, at + 1)
    return hits
