"""The OS errors that still reach the CLI, translated into memlog's categories
(the data directory itself is checked before a command opens it:
:func:`commands.app.store.validate.check_data_dir`).

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
)

__all__ = ["storage_cause", "translate_os_error"]

_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
_DENIED = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
_NOT_DIR = frozenset({errno.ENOTDIR, errno.EISDIR, errno.EEXIST})
_HINT = "memlog writes to its data directory, lock files included, even to read"


def _where(path: Path) -> str:
    return repr(os.fspath(path))


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
