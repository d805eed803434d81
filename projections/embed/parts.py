"""The vector rows, partitioned by seq range into LMDB environments.

A purge has to leave no byte of a removed vector, and only a compacting copy
of an environment does that; at 1M entries one environment of every vector
(654 MB) took 2 s to copy on every purge, and the purge's forensic scan read
all of it. So the rows live in partitions, like the log's payload segments:
the row of rseq ``r`` is in partition ``r // PART_SPAN``
(``<vectors>/part-NNNNNN/``), and a purge rewrites only the partitions that
lost a row since their last rewrite.

``PART_SPAN`` is 65,536 seqs (the payload segments' span): at 1M entries
that makes 16 partitions of about 45 MB (a delete's vector purge went from
3.5 s to 0.35 s there, beside the shard rebuild), and a replay chunk (2,000
records) writes one partition, or two at a boundary. A smaller span would
copy less per purge but keep more environments (three descriptors each) open
in every process.

Databases of a partition:

- ``vectors``: rseq (u64) -> from_seq (u64) | to_seq (u64) | the vector (float16);
- ``meta``: ``dirty``, present when a row was deleted (its bytes may linger
  in freed pages). It is written in the same transaction as the delete, so a
  committed removal is never unmarked; a purge removes the mark, then copies.
  A write that removed a row is synced before the vectors' checkpoint (in the
  main environment, another file) moves past it, so a power loss cannot keep
  the checkpoint and lose the removal with its mark.

Each operation reads the environment's database handles inside its
transaction: another process's purge swaps a partition's file, and the
operation that notices reopens it with new handles.
"""

from __future__ import annotations

import functools
import re
import struct
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from eventstore.storage import SharedEnv, crashpoint, open_shared_env, purge_env, release_shared_env

__all__ = ["PART_DBS", "PART_SPAN", "Partitions", "Row"]

PART_SPAN = 1 << 16
PART_DBS = (b"vectors", b"meta")
_U64 = struct.Struct(">Q")
_NAME = re.compile(r"part-(\d{6})\Z")
_DIRTY = b"dirty"

# (rseq, the stored value, or None for a removal)
Row = tuple[int, bytes | None]


def part_of(rseq: int) -> int:
    """The partition holding rseq's row."""
    return rseq // PART_SPAN


class Partitions:
    """The partitions under one vectors directory, opened on first use."""

    def __init__(self, root: Path, sync: bool) -> None:
        self.root = root
        self.sync = sync
        self._open: dict[int, SharedEnv] = {}
        self._lock = threading.Lock()  # a purge runs in a thread beside searches

    def existing(self) -> list[int]:
        """The partitions on disk, in order."""
        found = (_NAME.match(p.name) for p in self.root.glob("part-*") if p.is_dir())
        return sorted(int(m.group(1)) for m in found if m is not None)

    def env(self, n: int) -> SharedEnv:
        """Partition ``n`` (created when new)."""
        with self._lock:
            shared = self._open.get(n)
            if shared is None:
                shared = open_shared_env(self.root / f"part-{n:06d}", PART_DBS, sync=self.sync)
                self._open[n] = shared
            return shared

    def open_all(self) -> None:
        """Open every partition on disk (a damaged one fails here, at open)."""
        for n in self.existing():
            self.env(n)

    def follow(self) -> None:
        """Let every partition open here adopt a file a purge swapped in (an
        operation reopens an environment whose generation moved on)."""
        with self._lock:
            opened = list(self._open.values())
        for shared in opened:
            with shared.operation():
                pass

    def close(self) -> None:
        """Release every partition opened."""
        with self._lock:
            opened, self._open = self._open, {}
        for shared in opened.values():
            release_shared_env(shared)

    # -- writing -----------------------------------------------------------------

    def write(self, rows: Sequence[Row]) -> None:
        """Apply ``rows`` in order, one transaction per partition; a deletion
        that removed a row marks its partition dirty in that transaction.
        Idempotent: each row is a blind put or delete, so applying rows again
        (after a crash before the checkpoint moved) ends in the same state."""
        groups: dict[int, list[Row]] = {}
        for row in rows:
            groups.setdefault(part_of(row[0]), []).append(row)
        for n in sorted(groups):
            shared = self.env(n)
            if shared.write(functools.partial(_write_rows, shared, groups[n])) and not self.sync:
                # A removal reaches the disk before the checkpoint that says it
                # was applied (another file): after a power loss, a removal and
                # its dirty mark are never lost behind a checkpoint past them.
                with shared.operation() as env:
                    env.sync(True)

    def clear(self) -> None:
        """Drop every row of every partition, marking each dirty."""
        for n in self.existing():
            shared = self.env(n)
            shared.write(functools.partial(_drop_rows, shared))

    # -- reading -----------------------------------------------------------------

    def scan(self, visit: Callable[[int, Any], None]) -> None:
        """Call ``visit(rseq, value)`` on every row, partition by partition, in
        one read transaction per partition (``value`` is a buffer valid only
        during the call)."""
        for n in self.existing():
            shared = self.env(n)
            shared.read(functools.partial(_scan_rows, shared, visit))

    def get(self, rseqs: Iterable[int]) -> dict[int, bytes | None]:
        """The values of ``rseqs`` (None when absent), one read per partition."""
        groups: dict[int, list[int]] = {}
        for rseq in rseqs:
            groups.setdefault(part_of(rseq), []).append(rseq)
        out: dict[int, bytes | None] = {}
        for n in sorted(groups):
            if not (self.root / f"part-{n:06d}").is_dir():
                out.update((r, None) for r in groups[n])
                continue
            shared = self.env(n)
            out.update(shared.read(functools.partial(_get_rows, shared, groups[n])))
        return out

    def count(self) -> int:
        """How many rows are stored."""
        total = 0
        for n in self.existing():
            shared = self.env(n)
            total += shared.read(functools.partial(_entries, shared))
        return total

    # -- erasure -----------------------------------------------------------------

    def dirty(self) -> list[int]:
        """The partitions marked dirty."""
        out = []
        for n in self.existing():
            shared = self.env(n)
            if shared.read(functools.partial(_is_dirty, shared)):
                out.append(n)
        return out

    def purge(self, parts: Iterable[int], timeout: float) -> list[str]:
        """Rewrite ``parts`` with a compacting copy each (the mark removed in a
        transaction first, so the copy does not carry it; a removal committed
        meanwhile marks it again). Returns the files rewritten."""
        files: list[str] = []
        for n in sorted(set(parts)):
            if not (self.root / f"part-{n:06d}").is_dir():
                continue
            shared = self.env(n)
            shared.write(functools.partial(_unmark, shared))
            crashpoint("vectors: partition unmarked, not copied")
            files += [str(p) for p in purge_env(shared, timeout).files_rewritten]
        return files


def _write_rows(shared: SharedEnv, rows: Sequence[Row], txn: Any) -> bool:
    """Apply ``rows``; whether a row was removed (the partition is then marked dirty)."""
    dbs = shared.dbs
    removed = False
    for rseq, value in rows:
        key = _U64.pack(rseq)
        if value is None:
            removed = txn.delete(key, db=dbs[b"vectors"]) or removed
        else:
            txn.put(key, value, db=dbs[b"vectors"])
    if removed:
        txn.put(_DIRTY, b"1", db=dbs[b"meta"])
    return removed


def _drop_rows(shared: SharedEnv, txn: Any) -> None:
    dbs = shared.dbs
    txn.drop(dbs[b"vectors"], delete=False)
    txn.put(_DIRTY, b"1", db=dbs[b"meta"])


def _get_rows(shared: SharedEnv, rseqs: list[int], txn: Any) -> dict[int, bytes | None]:
    dbs = shared.dbs
    out: dict[int, bytes | None] = {}
    for rseq in rseqs:
        value = txn.get(_U64.pack(rseq), db=dbs[b"vectors"])
        out[rseq] = None if value is None else bytes(value)
    return out


def _scan_rows(shared: SharedEnv, visit: Callable[[int, Any], None], txn: Any) -> None:
    dbs = shared.dbs
    for key, value in txn.cursor(db=dbs[b"vectors"]):
        visit(_U64.unpack(bytes(key))[0], value)


def _entries(shared: SharedEnv, txn: Any) -> int:
    dbs = shared.dbs
    return int(txn.stat(dbs[b"vectors"])["entries"])


def _is_dirty(shared: SharedEnv, txn: Any) -> bool:
    dbs = shared.dbs
    return txn.get(_DIRTY, db=dbs[b"meta"]) is not None


def _unmark(shared: SharedEnv, txn: Any) -> None:
    dbs = shared.dbs
    txn.delete(_DIRTY, db=dbs[b"meta"])
