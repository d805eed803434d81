"""Physical purge of one LMDB environment: a compacting copy swapped in.

Deleting or overwriting an LMDB value leaves its old bytes in freed pages for
an unbounded number of commits; only a compacting copy is clean. So a purge:

1. takes the maintenance lock exclusive (in-flight operations of every process
   finish first; new ones wait);
2. makes a compacting copy of each environment to rewrite, beside it, and
   fsyncs it;
3. bumps the generation (before the first swap, so that a crash after it
   still makes every other process reopen), so every other process reopens
   the new files before its next operation (they cannot be inside one: the
   lock is exclusive);
4. closes this process's environments, swaps each copy in with
   ``os.replace`` and fsyncs the directory, keeping a descriptor on the old
   file;
5. reopens this process's environment at the new generation;
6. zero-fills each old file through its descriptor, fsyncs it and closes it
   (the rename already unlinked it), and removes the old lock file (it holds
   reader slots, no content).

:func:`purge_env` rewrites one whole environment (the views); :class:`Swap`
is the step the log's segment purge (:mod:`eventstore.lmdb.purge`) repeats
per segment.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lmdb

from ..backend import PurgeReport
from ..errors import StorageError
from .env import SharedEnv
from .files import (
    LMDB_LOCK_FILE,
    ensure_private_dir,
    fsync_dir,
    overwrite_int_file,
    wipe_fd,
    wipe_file,
    wipe_tree,
)
from .safety import crashpoint, open_private

__all__ = ["Swap", "purge_env", "sweep_scratch"]


class Swap:
    """Rewrites of one purge under ``shared``'s exclusive lock: old descriptors
    to wipe once every process has left the old files.

    The generation is bumped *before* the first file is swapped in: a process
    that dies between a swap and the bump would otherwise leave the others
    writing into the old, unlinked file (their appends lost). Bumped first, a
    crash before the swap only makes the others reopen the same file.
    """

    def __init__(self, shared: SharedEnv) -> None:
        self.shared = shared
        self.bumped: int | None = None
        self.files: list[Path] = []
        self.old_fds: list[int] = []
        self.before = 0
        self.wiped = 0

    def rewrite(self, env: Any, dbs: Sequence[Any], directory: Path, close: Any) -> None:
        """Compacting copy of ``env`` (in ``directory``), close it, swap the copy in."""
        data = directory / "data.mdb"
        self.before += data.stat().st_size
        scratch = directory / f".compact-{secrets.token_hex(6)}"
        try:
            crashpoint("compact: copy")
            _compact_copy(env, dbs, scratch)
            close()
            self.bump()
            old_fd = open_private(data, os.O_RDWR)
            try:
                crashpoint("compact: swap in the copy")
                os.replace(scratch / "data.mdb", data)
            except BaseException:
                os.close(old_fd)  # still the live file: never wipe it
                raise
            self.old_fds.append(old_fd)
            self.files.append(data)
            # The lock file holds reader slots, never content; other processes may
            # still map it until they reopen, so it is unlinked rather than zeroed.
            crashpoint("compact: remove the old lock file")
            (directory / LMDB_LOCK_FILE).unlink(missing_ok=True)
            fsync_dir(directory)
        finally:
            crashpoint("compact: remove the scratch directory")
            wipe_tree(scratch)

    def bump(self) -> None:
        """Move the generation on (once), before the first swap (or earlier: a
        caller that changes what other processes cache, as the log's purge
        dropping a segment key)."""
        if self.bumped is None:
            crashpoint("compact: bump the generation")
            self.bumped = self.shared.generation + 1
            overwrite_int_file(self.shared.path / "generation", self.bumped)

    def finish(self) -> int:
        """Reopen this process's environment at the new generation (when one
        was bumped, even if a later step failed), then zero-fill and close the
        old files; return the generation."""
        if self.bumped is not None:
            self.shared.reopen()
        generation = self.shared.generation
        while self.old_fds:
            fd = self.old_fds.pop()
            try:
                crashpoint("compact: zero-fill the old file")
                self.wiped += wipe_fd(fd)
            finally:
                os.close(fd)
        return generation

    def report(self, generation: int, started: float) -> PurgeReport:
        """What this purge rewrote, as a :class:`PurgeReport`."""
        return PurgeReport(
            files_rewritten=tuple(str(f) for f in self.files), bytes_before=self.before,
            bytes_after=sum(f.stat().st_size for f in self.files), bytes_wiped=self.wiped,
            generation=generation, seconds=time.perf_counter() - started,
        )


def purge_env(shared: SharedEnv, timeout: float) -> PurgeReport:
    """Rewrite ``shared``'s data file without stale bytes; see the module doc."""
    started = time.perf_counter()
    swap = Swap(shared)
    with shared.lock.exclusive(timeout):
        sweep_scratch(shared.path)
        if shared.env is None:
            shared.reopen()
        try:
            swap.rewrite(shared.env, list(shared.dbs.values()), shared.path, shared.close_env)
        finally:
            generation = swap.finish()
    return swap.report(generation, started)


def sweep_scratch(directory: Path) -> int:
    """Wipe what an interrupted purge left in ``directory``: its compacting
    copies (``.compact-*``, full copies of the environment) and temporary
    integer files. Call it holding the environment's lock exclusive."""
    wiped = 0
    for leftover in directory.glob(".compact-*"):
        wiped += wipe_tree(leftover) if leftover.is_dir() else wipe_file(leftover)
    for leftover in directory.glob(".generation.*.tmp"):
        wiped += wipe_file(leftover)
    return wiped


def _compact_copy(env: Any, dbs: Sequence[Any], scratch: Path) -> None:
    ensure_private_dir(scratch)
    try:
        if _mostly_overflow(env, dbs):
            # LMDB's compacting copy to a path writes every multi-page value with a
            # synchronous direct write (measured here: 36 s per GiB of 4 KiB values);
            # copying through a descriptor avoids that.
            fd = open_private(scratch / "data.mdb", os.O_RDWR | os.O_CREAT | os.O_EXCL)
            try:
                env.copyfd(fd, compact=True)
            finally:
                os.close(fd)
        else:
            env.copy(str(scratch), compact=True)
    except lmdb.Error as exc:
        raise StorageError(f"compacting copy of {scratch.parent} failed: {exc}") from None
    fd = open_private(scratch / "data.mdb", os.O_RDWR)
    try:
        os.fchmod(fd, 0o600)
        os.fsync(fd)
    finally:
        os.close(fd)


def _mostly_overflow(env: Any, dbs: Sequence[Any]) -> bool:
    """True when over 10 % of the used pages hold values larger than a page
    (``None`` in ``dbs`` stands for the unnamed database)."""
    with env.begin() as txn:
        overflow = sum((env.stat() if db is None else txn.stat(db))["overflow_pages"] for db in dbs)
    used = env.info()["last_pgno"] + 1
    return bool(overflow * 10 > used)
