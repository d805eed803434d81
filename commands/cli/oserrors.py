"""The data directory checked before a command opens it, and the OS errors
that still reach the CLI translated into memlog's categories.

An OS error is the machine's answer, not a bug: permissions, a read-only file
system, a file where a directory must be, a full disk. At the CLI boundary it
becomes :class:`~eventstore.NotWritableError`,
:class:`~eventstore.StorageFullError` or :class:`~eventstore.StorageError`
(exit 5) instead of an internal error (exit 70). Messages name the path and
the system's reason, never content.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from eventstore import (
    MemlogError,
    NotWritableError,
    StorageError,
    StorageFullError,
    StoreNotFoundError,
)

__all__ = ["check_data_dir", "storage_cause", "translate_os_error", "writable"]

_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
_DENIED = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
_NOT_DIR = frozenset({errno.ENOTDIR, errno.EISDIR, errno.EEXIST})
_HINT = "memlog writes to its data directory, lock files included, even to read"


def _where(path: Path) -> str:
    return repr(os.fspath(path))


def check_data_dir(data_dir: Path, write: bool) -> None:
    """Refuse a data directory that cannot hold a store, before anything opens it.

    A path that exists but is not a directory (a file, ``/dev/null``) is
    :class:`~eventstore.StoreNotFoundError` for a read and
    :class:`~eventstore.NotWritableError` for a write. A write also needs the
    directory, or the nearest existing parent it will be created in, to be a
    writable directory.
    """
    if data_dir.exists() and not data_dir.is_dir():
        if not write:
            raise StoreNotFoundError(f"no memlog store in {_where(data_dir)}: it is not a directory; "
                                     "check --dir (or MEMLOG_DIR)")
        raise NotWritableError(f"{_where(data_dir)} is not a directory; point --dir (or MEMLOG_DIR) "
                               "at a directory")
    if not write:
        return
    existing = data_dir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise NotWritableError(f"{_where(existing)} is not a directory, so {_where(data_dir)} cannot be "
                               "created in it")
    if not writable(existing):
        raise NotWritableError(f"cannot write to {_where(existing)}: permission denied or a read-only "
                               f"file system; {_HINT}")


def writable(directory: Path) -> bool:
    """Whether this process may create files in ``directory`` (False on a read-only
    file system, even for root)."""
    return os.access(directory, os.W_OK | os.X_OK)


def translate_os_error(exc: OSError) -> MemlogError:
    """An OS error as the memlog error of its category."""
    where = f" {_where(Path(exc.filename))}" if exc.filename is not None else ""
    reason = exc.strerror or type(exc).__name__
    code = exc.errno
    if code in _FULL:
        return StorageFullError(f"cannot write{where}: the disk is full ({reason}); free some space and "
                                "run the command again")
    if code in _DENIED:
        return NotWritableError(f"cannot write{where}: {reason}; {_HINT}")
    if code in _NOT_DIR or isinstance(exc, NotADirectoryError | IsADirectoryError | FileExistsError):
        return NotWritableError(f"cannot use{where}: {reason} (a file where a directory must be, or "
                                "the reverse)")
    return StorageError(f"storage failed{where}: {reason}")


def storage_cause(exc: StorageError) -> MemlogError | None:
    """A more precise category for a plain :class:`~eventstore.StorageError`
    from the storage kit, read from the error it translated (an ``OSError``,
    or an LMDB error that names the system's reason); None to keep it."""
    if type(exc) is not StorageError:
        return None
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, OSError) and cause.errno is not None:
        return translate_os_error(cause)
    text = str(cause) if cause is not None else ""
    for code in (errno.EROFS, errno.EACCES):
        if text.endswith(os.strerror(code)):
            return NotWritableError(f"{exc.message}; {_HINT}")
    return None
