"""The purge journal: every purge's intent, on disk before its first step.

A deletion or redaction writes ``<data>/purges/<event id>.json`` (ids, seqs
and flags, never content) *before* it appends the erasing event, and holds an
exclusive ``flock`` on that file until ``purge.completed`` is appended; then
the file goes. So after a crash at any step, the next open of the store (by
any process) or ``memlog purge`` finds the file with no holder and finishes
the purge (:func:`commands.app.forgetting.purging.finish_interrupted`). A file whose lock
is held belongs to a purge still running in another process.

The file is created under a temporary name, locked, written and fsynced, and
only then renamed into place: nobody can see an intent whose owner does not
hold it yet.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import msgspec

from eventstore.storage import crashpoint, ensure_private_dir, fsync_dir, open_private, wipe_tree

__all__ = ["Held", "Journal", "PurgeIntent"]

_encode = msgspec.json.Encoder().encode


class PurgeIntent(msgspec.Struct, frozen=True):
    """What a purge must finish: ids, seqs and flags, no content."""

    event_id: str  # the erasing event (tombstone or redaction): committed or not
    request_ids: tuple[str, ...] = ()  # the deletion requests it purges (ledger lines)
    entry_ids: tuple[str, ...] = ()  # entries whose search shards must be rebuilt
    views: bool = False  # memory values or session metadata went: compact the views
    erased_seqs: tuple[int, ...] = ()
    deferred: bool = False  # purged by `memlog purge`, not by the next open
    everything: bool = False  # the intent was damaged: rewrite every shard and the views


_decode = msgspec.json.Decoder(PurgeIntent).decode


class Held:
    """A journal file this process holds (its purge, or one it finishes)."""

    def __init__(self, path: Path, fd: int, intent: PurgeIntent) -> None:
        self.path = path
        self.fd = fd
        self.intent = intent

    def done(self) -> None:
        """The purge finished: remove the file, then release the lock."""
        crashpoint("journal: remove the intent")
        self.path.unlink(missing_ok=True)
        fsync_dir(self.path.parent)
        self.release()

    def release(self) -> None:
        """Release the lock and keep the file (the purge stays to finish)."""
        if self.fd >= 0:
            os.close(self.fd)  # closing the descriptor drops the flock
            self.fd = -1


class Journal:
    """The purge intents of one data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "purges"

    def write(self, intent: PurgeIntent) -> Held:
        """Record ``intent`` durably and hold it (see the module doc)."""
        ensure_private_dir(self.path)
        for stale in self.path.glob(".*.tmp"):
            _wipe_if_unheld(stale)
        final = self.path / f"{intent.event_id}.json"
        tmp = self.path / f".{intent.event_id}.{os.getpid()}.tmp"
        crashpoint("journal: write the intent")
        fd = open_private(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, _encode(intent))
            os.fsync(fd)
            os.replace(tmp, final)
            fsync_dir(self.path)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        return Held(final, fd, intent)

    def unheld(self) -> Iterator[Held]:
        """The intents whose owner died (this process now holds each one it
        yields; call :meth:`Held.done` or :meth:`Held.release`)."""
        if not self.path.is_dir():
            return
        for path in sorted(self.path.glob("*.json")):
            held = _take(path)
            if held is not None:
                yield held

    def running(self) -> int:
        """How many intents another process holds (purges under way)."""
        if not self.path.is_dir():
            return 0
        busy = 0
        for path in self.path.glob("*.json"):
            held = _take(path)
            if held is None:
                busy += path.exists()
            else:
                held.release()
        return busy


def _take(path: Path) -> Held | None:
    """Lock ``path`` if nobody holds it; None when another process does (or it went)."""
    try:
        fd = open_private(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    if not path.exists():  # finished and removed between our open and our lock
        os.close(fd)
        return None
    try:
        intent = _decode(os.pread(fd, 1 << 20, 0))
    except msgspec.DecodeError:
        # A torn write cannot be (the file is renamed into place only once
        # fsynced): the file was damaged since. What it named is unknown, so the
        # purge that finishes it rewrites everything a purge can rewrite.
        intent = PurgeIntent(event_id=path.stem, everything=True)
    return Held(path, fd, intent)


def _wipe_if_unheld(tmp: Path) -> None:
    """A temporary intent whose writer died before renaming it: its erase never
    started (the intent is written first), so it goes."""
    with contextlib.suppress(FileNotFoundError):
        fd = open_private(tmp, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return
        os.close(fd)
        wipe_tree(tmp)
