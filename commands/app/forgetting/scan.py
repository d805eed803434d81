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
:func:`commands.app.forgetting.purging.vector_needles`).

A large scan (:data:`PARALLEL_FROM` bytes or more) reads about half of its
bytes in a child process (:mod:`.scanner`) while this process reads the
rest. A child that cannot start, fails, answers anything but a count for
each of its files or outlives its deadline leaves all its files to this
process, and a file it read nothing of (but that holds bytes) is read here.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from eventstore.storage import is_lmdb_lock_file

from . import scanner
from .scanner import Matcher, scan_files

__all__ = ["PARALLEL_FROM", "Matcher", "purge_scope", "scan_needles", "scan_tree", "usable_cpus"]

PARALLEL_FROM = 128 << 20  # bytes of files from which a scan shares them with a child process
CHILD_SECONDS = 60.0  # a child's deadline: this, plus its bytes at the rate below
CHILD_BYTES_PER_SECOND = 20 << 20

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
    if not matcher or len(paths) < 2 or sum(sizes.values()) < PARALLEL_FROM or usable_cpus() < 2:
        return scan_files(paths, matcher, which)
    mine, theirs = _halves(paths, sizes)
    child = _Child.start(needles, theirs, sum(sizes[p] for p in theirs))
    try:
        results = scan_files(mine, matcher, which)
        done, found = (None, set()) if child is None else child.results(needles, len(theirs))
    finally:
        if child is not None:
            child.stop()
    which |= found
    again = []  # the child's files it did not read (or all, when it failed): read here
    for k, path in enumerate(theirs):
        if done is not None and (done[k][1] or not sizes[path]):
            results.append((path, *done[k]))
        else:
            again.append(path)
    return sorted(results + scan_files(again, matcher, which))


def usable_cpus() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


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


class _Child:
    """A child process scanning some files (:mod:`.scanner`): its work goes
    in and its answer comes out through pipes, on a thread of this process,
    within a deadline; any failure gives no answer (the caller reads those files)."""

    def __init__(self, proc: subprocess.Popen[bytes], work: bytes, deadline: float) -> None:
        self.proc = proc
        self.out: bytes | None = None
        self._thread = threading.Thread(target=self._talk, args=(work, deadline), daemon=True,
                                        name="memlog-scan")
        self._thread.start()

    @classmethod
    def start(cls, needles: list[bytes], paths: list[str], size: int) -> _Child | None:
        """The child for ``paths`` (``size`` bytes), or None when none can run here."""
        if not sys.executable or getattr(sys, "frozen", False) or not os.path.isfile(scanner.__file__):
            return None
        work = pickle.dumps((needles, [os.fsencode(p) for p in paths]), protocol=pickle.HIGHEST_PROTOCOL)
        try:  # -I: no PYTHON* variables, no user site, not the working directory; -S: no site packages
            proc = subprocess.Popen([sys.executable, "-I", "-S", scanner.__file__], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError:
            return None
        try:
            return cls(proc, work, CHILD_SECONDS + size / CHILD_BYTES_PER_SECOND)
        except RuntimeError:  # no thread could start
            proc.kill()
            proc.wait()
            return None

    def _talk(self, work: bytes, deadline: float) -> None:
        try:
            out, _ = self.proc.communicate(work, timeout=deadline)
        except (subprocess.TimeoutExpired, OSError, ValueError):
            return
        if self.proc.returncode == 0:
            self.out = out

    def results(self, needles: list[bytes], files: int) -> tuple[list[tuple[int, int]] | None, set[bytes]]:
        """(hits, bytes read) of each of its ``files`` in order, and the needles
        it found; (None, no needles) when it failed, timed out or answered
        anything else."""
        self._thread.join()
        try:
            done, found = pickle.loads(self.out) if self.out is not None else (None, None)
        except Exception:  # a broken answer: its files are read here
            return None, set()
        if isinstance(done, list) and len(done) == files and all(map(_counts, done)) \
                and isinstance(found, set) and found <= set(needles):
            return done, found
        return None, set()

    def stop(self) -> None:
        """Make sure the child is gone (killed if still running) and reaped."""
        if self.proc.poll() is None:
            self.proc.kill()
        self._thread.join()
        self.proc.wait()


def _counts(value: object) -> bool:
    """Whether ``value`` is a (hits, bytes read) pair."""
    return isinstance(value, tuple) and len(value) == 2 and all(type(n) is int and n >= 0 for n in value)
