"""The scan's matcher and its file reader, in the standard library alone.

:mod:`.scan` walks a directory and decides which files a scan reads; this
module finds the needles in them. It imports nothing of memlog, so a large
scan can hand half of its files to a child process that runs this file as a
script (``python -I -S scanner.py``: isolated, no package ``__init__`` runs,
no site packages load, it starts in about 20 ms) while the caller reads the other
half: the search holds the GIL, and a purge's scan is the one step of a
deletion that otherwise runs alone on one core. The child reads the needles
and its paths from its stdin and writes what it found to its stdout (pipes,
never a file: the needles are deleted content).
"""

from __future__ import annotations

import mmap
import os
import pickle
import sys
from collections.abc import Iterable, Sequence

__all__ = ["Matcher", "scan_file", "scan_files"]

_MAP_FROM = 1 << 20
# Sampling tiers (gram length, stride): a needle of at least stride + gram - 1
# bytes contains, wherever it lies, the gram at one of the data offsets the
# scan samples (every ``stride`` bytes), at an offset under ``stride`` of the
# needle. Each needle goes to the tier of the longest stride it allows.
_TIERS = ((16, 128), (16, 32), (8, 8))
_FIND_UP_TO = 6  # needles searched one by one with ``find`` rather than sampled (see Matcher)


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


def scan_file(path: str | bytes, matcher: Matcher, which: set[bytes]) -> tuple[int, int]:
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


def scan_files(paths: Sequence[str], matcher: Matcher, which: set[bytes]) -> list[tuple[str, int, int]]:
    """(path, hits, bytes read) of each of ``paths``; adds the needles found to ``which``."""
    return [(path, *scan_file(path, matcher, which)) for path in paths]


def _child() -> None:
    """The child's side: ``(needles, paths as bytes)`` pickled on stdin (bytes:
    the file names whatever this interpreter's encoding), ``((hits, bytes read)
    of each path in order, needles found)`` pickled on stdout."""
    needles, paths = pickle.load(sys.stdin.buffer)
    which: set[bytes] = set()
    matcher = Matcher(needles)
    results = [scan_file(path, matcher, which) for path in paths]
    pickle.dump((results, which), sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    _child()
