"""Removing replaced projection directories without leaving their bytes behind."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from eventstore import StorageError
from eventstore.storage import open_shared_env, release_shared_env, wipe_tree

__all__ = ["wipe_dir"]


def wipe_dir(path: Path, envs: Iterable[tuple[str, tuple[bytes, ...]]] = (), timeout: float = 30.0) -> int:
    """Retire the LMDB environments ``envs`` (sub-directory, database names)
    under ``path`` (other processes then reopen the current projections), then
    zero-fill and remove every file.

    A wipe cut short by a crash leaves a half-zeroed environment that LMDB will
    not open; it is wiped all the same.
    """
    for name, db_names in envs:
        env = path / name
        if not (env / "data.mdb").exists():
            continue
        try:
            shared = open_shared_env(env, db_names)
        except StorageError:
            continue
        try:
            shared.retire(timeout)
        finally:
            release_shared_env(shared)
    return wipe_tree(path)
