"""File-system helpers: private directories, durable renames, wiping files.

LMDB lock files (``lock.mdb``) are never opened here (:func:`is_lmdb_lock_file`):
LMDB keeps a POSIX record lock on its lock file while an environment is open,
and POSIX drops every record lock a process holds on a file as soon as the
process closes *any* descriptor of that file. A process whose lock is gone
looks absent to the others: the next process to open the environment takes
the lock exclusive and re-initialises the lock file (its reader table and the
robust mutexes) under this process's transactions, and a process closing it
destroys the mutexes. A thread of this process that held the writer mutex then
fails to unlock it, the mutex stays on the thread's robust-mutex list, and the
thread's next LMDB lock after the file is unmapped crashes the process (two
writers may also have run at once). The file holds reader slots (pid, thread,
txnid) and the mutexes, never keys or values: nothing needs to read or
zero-fill it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import LockTimeoutError, NotWritableError, StorageError, StorageFullError
from .safety import open_private, refuse_links

__all__ = [
    "MaintenanceLock",
    "create_int_file",
    "ensure_private_dir",
    "fsync_dir",
    "is_lmdb_lock_file",
    "overwrite_int_file",
    "pread_int",
    "private_tree",
    "read_int_file",
    "storage_error",
    "wipe_file",
    "wipe_tree",
    "write_int_file",
]

_ZEROS = bytes(1 << 20)
LMDB_LOCK_FILE = "lock.mdb"


def is_lmdb_lock_file(path: Path) -> bool:
    """True for an LMDB lock file, which must never be opened (see the module doc)."""
    return path.name == LMDB_LOCK_FILE


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` (and parents) with mode 0700 and make sure it is 0700;
    refuse it when it, or a file in it, is a link."""
    refuse_links(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o777 != 0o700:
        path.chmod(0o700)


def private_tree(path: Path) -> None:
    """Make every file under ``path`` 0600 and every directory 0700, whatever
    the umask was when they were created (Tantivy creates its files 0666 less
    the umask). Links are left alone: nothing under a data directory links out."""
    with os.scandir(path) as entries:
        for entry in entries:
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir():
                    if entry.stat().st_mode & 0o777 != 0o700:
                        os.chmod(entry.path, 0o700)
                    private_tree(Path(entry.path))
                elif entry.stat().st_mode & 0o777 != 0o600:
                    os.chmod(entry.path, 0o600)
            except FileNotFoundError:
                continue  # removed meanwhile (another process's merge or wipe)


def fsync_dir(path: Path) -> None:
    """fsync a directory so that renames inside it are durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_int_file(path: Path, default: int = 0) -> int:
    """Read a small integer file; ``default`` when it does not exist."""
    try:
        fd = open_private(path, os.O_RDONLY)
    except FileNotFoundError:
        return default
    try:
        return pread_int(fd, default)
    finally:
        os.close(fd)


def write_int_file(path: Path, value: int) -> None:
    """Atomically and durably replace a small integer file (mode 0600)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.write(fd, str(value).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


INT_WIDTH = 20  # an overwritten integer file is this wide: no rewrite makes it shorter


def overwrite_int_file(path: Path, value: int) -> None:
    """Durably overwrite a small integer file in place, at a fixed width (one
    ``pwrite`` within the first sector, then ``fsync``), so that a reader that
    holds the file open (:func:`pread_int`) sees the new value; a missing file
    is created as :func:`write_int_file` does. Callers serialise writers and
    readers (the generation: under the maintenance lock)."""
    try:
        fd = open_private(path, os.O_WRONLY)
    except FileNotFoundError:
        write_int_file(path, value)
        return
    try:
        os.pwrite(fd, f"{value:>{INT_WIDTH}}".encode(), 0)
        os.fsync(fd)
    finally:
        os.close(fd)


def pread_int(fd: int, default: int = 0) -> int:
    """The integer in an open small integer file (``default`` when it is empty
    or not an integer), read with one ``pread``."""
    try:
        return int(os.pread(fd, 32, 0).strip() or default)
    except ValueError:
        return default


def create_int_file(path: Path, value: int) -> None:
    """Create a small integer file unless it exists (safe when processes race)."""
    try:
        fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return
    try:
        os.write(fd, str(value).encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def wipe_fd(fd: int) -> int:
    """Overwrite an open file with zeros and fsync it; return the bytes written."""
    size = os.fstat(fd).st_size
    os.lseek(fd, 0, os.SEEK_SET)
    done = 0
    while done < size:
        done += os.write(fd, _ZEROS[: min(len(_ZEROS), size - done)])
    os.fsync(fd)
    return size


def wipe_file(path: Path) -> int:
    """Zero-fill, fsync and unlink a file; return its size (0 if missing).
    A link is removed itself, never wiped through; an LMDB lock file is only
    unlinked (it holds no content, and must not be opened: see the module doc)."""
    if path.is_symlink() or is_lmdb_lock_file(path):
        path.unlink(missing_ok=True)
        return 0
    try:
        fd = open_private(path, os.O_RDWR)
    except FileNotFoundError:
        return 0
    try:
        size = wipe_fd(fd)
    finally:
        os.close(fd)
    path.unlink(missing_ok=True)
    return size


def wipe_tree(path: Path) -> int:
    """Zero-fill and remove every file under ``path``, then the directories."""
    if path.is_symlink():
        path.unlink()
        return 0
    if not path.exists():
        return 0
    total = 0
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            target = Path(root) / name
            if target.is_symlink():
                target.unlink()
            else:
                total += wipe_file(target)
        for name in dirs:
            target = Path(root) / name
            with contextlib.suppress(OSError):
                target.unlink() if target.is_symlink() else target.rmdir()
    with contextlib.suppress(OSError):
        path.rmdir()
    return total


def storage_error(exc: BaseException, what: str, where: Path | None = None) -> StorageError:
    """Translate an OS or LMDB error into the memlog tree. An I/O error (EIO)
    on a file system with no free block left (``where`` names a directory on
    it) is a full disk: LMDB reports a commit that found no room that way."""
    err = getattr(exc, "errno", None)
    if err == errno.ENOSPC or "No space left" in str(exc) or _full_eio(exc, where):
        return StorageFullError(f"{what}: the disk is full; nothing was written")
    if err in (errno.EACCES, errno.EPERM, errno.EROFS) or "Read-only file system" in str(exc):
        return NotWritableError(f"{what}: {exc.strerror if isinstance(exc, OSError) else exc}")
    return StorageError(f"{what}: {type(exc).__name__}: {exc}")


def _full_eio(exc: BaseException, where: Path | None) -> bool:
    if where is None or not (getattr(exc, "errno", None) == errno.EIO or "Input/output error" in str(exc)):
        return False
    try:
        return os.statvfs(where).f_bavail == 0
    except OSError:
        return False


class MaintenanceLock:
    """A cross-process reader/writer lock on a file (flock).

    Ordinary operations hold it shared; a purge holds it exclusive while it
    swaps files. It is re-entrant for shared holders within one process.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd = open_private(path, os.O_RDWR | os.O_CREAT)
        self._cond_lock = threading.RLock()  # entered directly on the hot path (a C call)
        self._cond = threading.Condition(self._cond_lock)
        self._shared = 0
        self._owner: int | None = None  # thread holding it exclusive
        self._exclusive_waiting = 0  # threads waiting for every shared holder to leave

    def close(self) -> None:
        """Release the file descriptor."""
        with self._cond:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the lock shared for the block (the purging thread passes through)."""
        self.hold_shared()
        try:
            yield
        finally:
            self.release_shared()

    def hold_shared(self) -> None:
        """Take the lock shared (:meth:`shared` without a generator, for the
        operations' hot path); pair with :meth:`release_shared`."""
        me = threading.get_ident()
        with self._cond_lock:
            while self._owner is not None and self._owner != me:
                self._cond.wait()
            if self._shared == 0 and self._owner is None:
                fcntl.flock(self._fd, fcntl.LOCK_SH)
            self._shared += 1

    def release_shared(self) -> None:
        """Drop one shared hold taken by :meth:`hold_shared`."""
        with self._cond_lock:
            self._shared -= 1
            if self._shared == 0 and self._owner is None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            if self._exclusive_waiting:  # the only waiters a release can wake
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self, timeout: float) -> Iterator[None]:
        """Hold the lock exclusive for the block, waiting up to ``timeout`` s."""
        with self._cond:
            self._exclusive_waiting += 1
            try:
                free = self._cond.wait_for(lambda: self._shared == 0 and self._owner is None, timeout)
            finally:
                self._exclusive_waiting -= 1
            if not free:
                raise LockTimeoutError("this process stayed mid-operation; the purge did not start")
            self._acquire_exclusive(timeout)
            self._owner = threading.get_ident()
        try:
            yield
        finally:
            with self._cond:
                self._owner = None
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                self._cond.notify_all()

    def _acquire_exclusive(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeoutError(
                        f"the maintenance lock stayed busy for {timeout:.0f} s"
                    ) from None
                time.sleep(0.005)
