"""Removing replaced projection directories without leaving their bytes behind."""

from __future__ import annotations

from pathlib import Path

from eventstore import StorageError
from eventstore.storage import open_shared_env, release_shared_env, wipe_tree

__all__ = ["wipe_dir"]


def wipe_dir(path: Path, db_names: tuple[bytes, ...] = (), timeout: float = 30.0) -> int:
    """Retire the views environment under ``path`` (other processes then reopen
    the current projections), then zero-fill and remove every file.

    A wipe cut short by a crash leaves a half-zeroed environment that LMDB will
    not open; it is wiped all the same.
    """
    views = path / "views"
    if (views / "data.mdb").exists():
        try:
            shared = open_shared_env(views, db_names)
        except StorageError:
            shared = None
        if shared is not None:
            try:
                shared.retire(timeout)
            finally:
                release_shared_env(shared)
    return wipe_tree(path)
