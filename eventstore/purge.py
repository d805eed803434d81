"""Physical purge of an LMDB environment.

Deleting or overwriting an LMDB value leaves its old bytes in freed pages for
an unbounded number of commits; only a compacting copy is clean. So a purge:

1. takes the maintenance lock exclusive (in-flight operations of every process
   finish first; new ones wait);
2. makes a compacting copy beside the environment and fsyncs it;
3. closes this process's environment; other processes reopen on their next
   operation because the generation changes;
4. swaps the copy in with ``os.replace`` and fsyncs the directory;
5. zero-fills the old file through a descriptor held across the swap, fsyncs
   it and closes it (the rename already unlinked it);
6. removes the old lock file (it holds reader slots, no content) and bumps
   the generation.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import lmdb

from ._fs import ensure_private_dir, fsync_dir, wipe_fd, wipe_tree, write_int_file
from ._lmdb_env import SharedEnv
from .backend import PurgeReport
from .errors import StorageError

__all__ = ["purge_env"]


def purge_env(shared: SharedEnv, timeout: float) -> PurgeReport:
    """Rewrite ``shared``'s data file without stale bytes; see the module doc."""
    started = time.perf_counter()
    with shared.lock.exclusive(timeout):
        data = shared.path / "data.mdb"
        before = data.stat().st_size
        scratch = shared.path / f".compact-{secrets.token_hex(6)}"
        try:
            _compact_copy(shared, scratch)
            wiped = _swap(shared, scratch / "data.mdb", data)
        finally:
            wipe_tree(scratch)
        generation = shared.generation + 1
        write_int_file(shared.path / "generation", generation)
        shared.reopen()
    return PurgeReport(
        files_rewritten=(str(data),), bytes_before=before, bytes_after=data.stat().st_size,
        bytes_wiped=wiped, generation=generation, seconds=time.perf_counter() - started,
    )


def _compact_copy(shared: SharedEnv, scratch: Path) -> None:
    ensure_private_dir(scratch)
    if shared.env is None:
        shared.reopen()
    try:
        if _mostly_overflow(shared):
            # LMDB's compacting copy to a path writes every multi-page value with a
            # synchronous direct write (measured here: 36 s per GiB of 4 KiB values);
            # copying through a descriptor avoids that.
            fd = os.open(scratch / "data.mdb", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                shared.env.copyfd(fd, compact=True)
            finally:
                os.close(fd)
        else:
            shared.env.copy(str(scratch), compact=True)
    except lmdb.Error as exc:
        raise StorageError(f"compacting copy of {shared.path} failed: {exc}") from None
    fd = os.open(scratch / "data.mdb", os.O_RDWR)
    try:
        os.fchmod(fd, 0o600)
        os.fsync(fd)
    finally:
        os.close(fd)


def _mostly_overflow(shared: SharedEnv) -> bool:
    """True when over 10 % of the used pages hold values larger than a page."""
    with shared.env.begin() as txn:
        overflow = sum(txn.stat(db)["overflow_pages"] for db in shared.dbs.values())
    used = shared.env.info()["last_pgno"] + 1
    return bool(overflow * 10 > used)


def _swap(shared: SharedEnv, copy: Path, data: Path) -> int:
    """Swap ``copy`` in for ``data``; zero-fill the old file and lock file."""
    shared.close_env()
    old_fd = os.open(data, os.O_RDWR)
    try:
        os.replace(copy, data)
        fsync_dir(shared.path)
        wiped = wipe_fd(old_fd)
    finally:
        os.close(old_fd)
    # The lock file holds reader slots, never content; other processes may
    # still map it until they reopen, so it is unlinked rather than zeroed.
    (shared.path / "lock.mdb").unlink(missing_ok=True)
    fsync_dir(shared.path)
    return wiped
