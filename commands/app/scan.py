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

A large scan (:data:`PARALLEL_FROM` bytes or more) reads about half of its
bytes in a child process (:mod:`.scanner`) while this process reads the
rest; a child that cannot start or fails leaves its files to this process,
so a scan never reads less than it would alone.
"""


from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from eventstore.storage import is_lmdb_lock_file

from . import scanner
from .scanner import Matcher, scan_files

__all__ = ["PARALLEL_FROM", "Matcher", "purge_scope", "scan_needles", "scan_tree"]

PARALLEL_FROM = 128 << 20  # bytes of files from which a scan shares them with a child process

Found = list[tuple[str, int, int]]  # (path, hits, bytes read) of each file read


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
    unique = sorted(set(needles))
    paths = [str(p) for p in sorted(root.rglob("*"))
             if p.is_file() and not p.is_symlink() and not is_lmdb_lock_file(p)
             and (scope is None or scope(p))]
    which: set[bytes] = set()
    found: dict[str, int] = {}
    scanned = 0
    for path, hits, size in _scan_shared(paths, unique, which):
        scanned += size
        if hits:
            found[str(Path(path).relative_to(root))] = hits
    return found, scanned, which


def _scan_shared(paths: list[str], needles: list[bytes], which: set[bytes]) -> Found:
    """Every file of ``paths`` read, a large set shared with a child (in path order)."""
    matcher = Matcher(needles)
    sizes = {path: _size(path) for path in paths}
    if not matcher or len(paths) < 2 or sum(sizes.values()) < PARALLEL_FROM or (os.cpu_count() or 1) < 2:
        return scan_files(paths, matcher, which)
    mine, theirs = _halves(paths, sizes)
    child = _start_child(needles, theirs)
    try:
        results = scan_files(mine, matcher, which)
        got = None if child is None else _child_results(child)
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()
    if got is None:  # the child did not do its part: this process does
        results += scan_files(theirs, matcher, which)
    else:
        results += got[0]
        which |= got[1]
    return sorted(results)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _halves(paths: Sequence[str], sizes: dict[str, int]) -> tuple[list[str], list[str]]:
    """Two lists of about equal bytes, the largest files placed first."""
    halves: tuple[list[str], list[str]] = ([], [])
    load = [0, 0]
    for path in sorted(paths, key=lambda p: -sizes[p]):
        side = 0 if load[0] <= load[1] else 1
        halves[side].append(path)
        load[side] += sizes[path]
    return halves


def _start_child(needles: list[bytes], paths: list[str]) -> subprocess.Popen[bytes] | None:
    """A child scanning ``paths`` (:mod:`.scanner`), given its work; None when it cannot start."""
    if not sys.executable:
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOG_CRASH")}  # no failpoints
    try:
        child = subprocess.Popen([sys.executable, "-P", "-S", scanner.__file__], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    except OSError:
        return None
    assert child.stdin is not None
    try:
        with child.stdin:
            child.stdin.write(pickle.dumps((needles, paths), protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        child.kill()
        child.wait()
        return None
    return child


def _child_results(child: subprocess.Popen[bytes]) -> tuple[Found, set[bytes]] | None:
    """What the child found, or None when it failed in any way."""
    assert child.stdout is not None
    try:
        with child.stdout:
            out = child.stdout.read()
        if child.wait() != 0:
            return None
        results, which = pickle.loads(out)
    except Exception:  # a broken child: its files are read here
        return None
    return _checked(results, which)


def _checked(results: Any, which: Any) -> tuple[Found, set[bytes]] | None:
    if not isinstance(results, list) or not isinstance(which, set):
        return None
    return results, which
