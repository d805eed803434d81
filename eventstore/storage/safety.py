"""The data directory is memlog's alone: no link is followed, no file is
opened for others, and a directory others can write to is refused.

Also the failpoints of the purge: :func:`crashpoint` names every file-system
step of a deletion's purge, so a test can kill the process (``os._exit``)
before any one of them and check that the next open finishes the work
(``MEMLOG_CRASH_AT=N`` exits before the N-th step; ``MEMLOG_CRASH_TRACE=FILE``
appends each step's name to FILE; with ``MEMLOG_CRASH_KILL=1`` the process
kills itself with SIGKILL instead of exiting). They are read when a step runs,
never at import, and cost one dictionary lookup when unset. The sealing of
recent payloads (:mod:`eventstore.lmdb.recent`) has failpoints too.
"""

from __future__ import annotations

import errno
import os
import shlex
import signal
import stat
import threading
from pathlib import Path

from ..errors import UnsafeStoreError

__all__ = ["CRASH_EXIT", "check_private_dir", "crashpoint", "open_private", "refuse_links"]

CRASH_EXIT = 86  # the exit status of a crash injected by MEMLOG_CRASH_AT
_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC
_steps = [0]
_steps_lock = threading.Lock()


def open_private(path: Path, flags: int, mode: int = 0o600) -> int:
    """``os.open`` that never follows a link (a link planted in the data
    directory is refused) and leaves a file it creates at ``mode`` whatever the
    umask."""
    try:
        fd = os.open(path, flags | _FLAGS, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeStoreError(
                f"{path} is a symbolic link; memlog never follows links in its data directory") from None
        raise
    if flags & os.O_CREAT and stat.S_IMODE(os.fstat(fd).st_mode) != mode:
        os.fchmod(fd, mode)
    return fd


def refuse_links(directory: Path) -> None:
    """Refuse ``directory`` when it, or anything directly in it, is a link
    (the LMDB environments and lock files must be our own files)."""
    if directory.is_symlink():
        raise UnsafeStoreError(f"{directory} is a symbolic link; memlog never follows links in its data "
                               "directory")
    if not directory.is_dir():
        return
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_symlink():
                raise UnsafeStoreError(f"{entry.path} is a symbolic link; memlog never follows links "
                                       "in its data directory")


def check_private_dir(path: Path) -> None:
    """Refuse a data directory that is a link, belongs to another user, or
    that others can write to (they could plant links or files in it)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        target = os.path.realpath(path)
        info = os.stat(target)
    if info.st_uid != os.geteuid():
        raise UnsafeStoreError(f"{path} belongs to another user; memlog keeps its data in a directory "
                               f"of its own: {_elsewhere(path, info.st_mode)}")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        fix = _inside(path) if info.st_mode & stat.S_ISVTX else f"make it private: chmod 700 {_q(path)}"
        raise UnsafeStoreError(f"{path} can be written by others (mode {oct(stat.S_IMODE(info.st_mode))}); "
                               + fix)


def _elsewhere(path: Path, mode: int) -> str:
    """The fix for a directory of another user: a private one inside it when it
    is shared with the sticky bit (``/tmp``) and open to this user, else one of
    the user's own."""
    if mode & stat.S_ISVTX and os.access(path, os.W_OK | os.X_OK):
        return _inside(path)
    return "give --dir (or MEMLOG_DIR) a directory you own"


def _inside(path: Path) -> str:
    """A shared directory with the sticky bit is not memlog's to change: a fresh
    private directory inside it, named so that no one can guess it first (the
    sticky bit keeps others from renaming or replacing it)."""
    return f"use a private directory inside it as --dir: mktemp -d {_q(path)}/memlog.XXXXXXXX"


def _q(path: Path) -> str:
    return shlex.quote(str(path))


def crashpoint(step: str) -> None:
    """A failpoint before one file-system step of a purge (see the module doc)."""
    at = os.environ.get("MEMLOG_CRASH_AT")
    trace = os.environ.get("MEMLOG_CRASH_TRACE")
    if at is None and trace is None:
        return
    with _steps_lock:  # a purge's threads (the log's, the vectors') pass failpoints too
        _steps[0] += 1
        count = _steps[0]
        if trace:
            with open(trace, "a") as fh:
                fh.write(f"{count} {step}\n")
    if at is not None and count == int(at):
        if os.environ.get("MEMLOG_CRASH_KILL"):
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(CRASH_EXIT)
