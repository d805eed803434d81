"""The forensic scan: look for byte strings in every file under a directory.

Used after a purge with the deleted content as needles (held in memory only).
Files are read in chunks that overlap by the longest needle, so a needle that
straddles two chunks is still found.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

__all__ = ["scan_needles", "scan_tree"]

_CHUNK = 16 << 20
_PER_PATTERN = 400


def scan_tree(root: Path, needles: Iterable[bytes]) -> tuple[dict[str, int], int]:
    """Which files hold any needle (file -> hits) and how many bytes were read."""
    files, scanned, _ = scan_needles(root, needles)
    return files, scanned


def scan_needles(root: Path, needles: Iterable[bytes]) -> tuple[dict[str, int], int, set[bytes]]:
    """Like :func:`scan_tree`, plus which needles were found."""
    wanted = sorted(set(needles), key=len, reverse=True)
    patterns = [re.compile(b"|".join(re.escape(n) for n in wanted[i : i + _PER_PATTERN]))
                for i in range(0, len(wanted), _PER_PATTERN)]
    overlap = max((len(n) for n in wanted), default=1) - 1
    found: dict[str, int] = {}
    which: set[bytes] = set()
    scanned = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        hits, size = _scan_file(path, patterns, overlap, which)
        scanned += size
        if hits:
            found[str(path.relative_to(root))] = hits
    return found, scanned, which


def _scan_file(path: Path, patterns: list[re.Pattern[bytes]], overlap: int,
               which: set[bytes]) -> tuple[int, int]:
    hits = size = 0
    tail = b""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below, read in chunks
    except OSError:
        return 0, 0
    with fh:
        while chunk := fh.read(_CHUNK):
            size += len(chunk)
            data = tail + chunk
            for pattern in patterns:
                for match in pattern.finditer(data):
                    hits += 1
                    which.add(match.group(0))
            tail = data[-overlap:] if overlap else b""
    return hits, size if size else os.path.getsize(path)
