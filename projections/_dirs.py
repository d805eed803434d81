"""The projection directories on disk: the ``proj`` link, layout marks, the
rebuild lock and wiping replaced directories (broken ones without opening them)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from eventstore import StorageError
from eventstore.storage import ensure_private_dir, fsync_dir, open_private, wipe_tree

from ._checks import views_problem
from ._fsutil import wipe_dir
from .embed import VECTOR_DBS
from .views import VIEW_DBS

__all__ = ["file_lock", "mark_layout", "point_link", "wipe_replaced"]


def mark_layout(root: Path, mark: str) -> None:
    """Write the layout mark of a projection directory (created 0700 if needed)."""
    ensure_private_dir(root)
    fd = open_private(root / "layout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.write(fd, (mark + "\n").encode())
    finally:
        os.close(fd)


def point_link(link: Path, target: str) -> None:
    """Atomically and durably make ``link`` name ``target`` (a sibling). Whatever
    stands in its way as a directory is moved aside as a ``proj-*``
    directory, so the next wipe of replaced directories removes it."""
    if link.is_dir() and not link.is_symlink():
        os.rename(link, link.with_name(f"proj-stray{secrets.token_hex(4)}"))
    tmp = link.with_name(f".{link.name}-link-{secrets.token_hex(4)}")
    os.symlink(target, tmp)
    os.replace(tmp, link)
    fsync_dir(link.parent)


def wipe_replaced(data_dir: Path, keep: str) -> None:
    """Zero-fill and remove every projection directory but ``keep``.

    A directory whose views open safely is retired first (processes holding
    it reopen the current projections); one whose views file is damaged is
    wiped without opening it, which could crash the process.
    """
    for path in data_dir.glob("proj-*"):
        if path.name == keep or path.is_symlink() or not path.is_dir():
            continue
        if views_problem(path / "views") is None and views_problem(path / "vectors") is None:
            try:
                wipe_dir(path, (("views", VIEW_DBS), ("vectors", VECTOR_DBS)))
                continue
            except StorageError:
                pass
        wipe_tree(path)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on ``path`` (created 0600) for the block."""
    fd = open_private(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
