"""The in-memory matrix of the vector projection, for brute-force cosine search.

Rows are document versions (an rseq, its ``[from_seq, to_seq)`` interval and
its unit vector as float32). Rows are updated in place; a removed row is
zeroed and marked dead, and the matrix is packed when half of it is dead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MatrixCache"]

_OPEN = (1 << 63) - 1
_MIN_CAPACITY = 1024


class MatrixCache:
    """Vectors by rseq, searchable as one matrix."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.row: dict[int, int] = {}
        self.size = 0
        self._alloc(_MIN_CAPACITY)

    def _alloc(self, capacity: int) -> None:
        self.rseqs = np.zeros(capacity, dtype=np.int64)
        self.lo = np.zeros(capacity, dtype=np.int64)
        self.hi = np.zeros(capacity, dtype=np.int64)
        self.alive = np.zeros(capacity, dtype=bool)
        self.vecs = np.zeros((capacity, self.dim), dtype=np.float32)

    def __len__(self) -> int:
        return len(self.row)

    def put(self, rseq: int, lo: int, hi: int, vector: Any) -> None:
        """Set (or replace) the row of ``rseq``."""
        at = self.row.get(rseq)
        if at is None:
            if self.size == len(self.rseqs):
                self._grow()
            at = self.size
            self.size += 1
            self.row[rseq] = at
        self.rseqs[at], self.lo[at], self.hi[at], self.alive[at] = rseq, lo, min(hi, _OPEN), True
        self.vecs[at] = vector

    def drop(self, rseq: int) -> None:
        """Remove the row of ``rseq`` (its vector zeroed), if any."""
        at = self.row.pop(rseq, None)
        if at is not None:
            self.alive[at] = False
            self.vecs[at] = 0.0
            if len(self.row) * 2 < self.size and self.size > _MIN_CAPACITY:
                self._pack()

    def _arrays(self) -> tuple[Any, Any, Any, Any, Any]:
        return self.rseqs, self.lo, self.hi, self.alive, self.vecs

    def _grow(self) -> None:
        old = self._arrays()
        self._alloc(2 * len(old[0]))
        for new, was in zip(self._arrays(), old, strict=True):
            new[: len(was)] = was

    def _pack(self) -> None:
        keep = np.flatnonzero(self.alive[: self.size])
        old = self._arrays()
        self._alloc(max(_MIN_CAPACITY, 2 * len(keep)))
        for new, was in zip(self._arrays(), old, strict=True):
            new[: len(keep)] = was[keep]
        self.size = len(keep)
        self.row = {int(r): i for i, r in enumerate(self.rseqs[: self.size])}

    def search(self, vector: Any, k: int, as_of: int | None) -> list[tuple[int, float]]:
        """(rseq, cosine) of the ``k`` best rows, best first: current rows
        (open interval) when ``as_of`` is None, else rows whose interval holds it."""
        n = self.size
        if n == 0 or k < 1:
            return []
        if as_of is None:
            live = self.alive[:n] & (self.hi[:n] == _OPEN)
        else:
            live = self.alive[:n] & (self.lo[:n] <= as_of) & (self.hi[:n] > as_of)
        if not live.any():
            return []
        scores = self.vecs[:n] @ np.asarray(vector, dtype=np.float32).reshape(-1)
        scores[~live] = -np.inf
        k = min(k, int(live.sum()))
        top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        top = top[live[top]]
        top = top[np.lexsort((self.rseqs[top], -scores[top]))]
        return [(int(self.rseqs[i]), float(scores[i])) for i in top]
