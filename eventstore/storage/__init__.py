"""The storage kit: file and LMDB helpers shared by the log's LMDB backend and
the projections.

- :class:`MaintenanceLock`: a process-shared lock; operations hold it shared,
  a purge exclusive.
- :class:`SharedEnv` (:func:`open_shared_env`, :func:`release_shared_env`): one
  LMDB environment per path per process, reference counted, reopened when
  another process's purge bumped its generation; :class:`RetiredError` when it
  was retired for good.
- :func:`purge_env`: rewrite an environment without stale bytes (a compacting
  copy swapped in, the old file zero-filled); :class:`Swap` is its step.
- :func:`wipe_tree`: zero-fill and remove every file under a directory.
- :func:`is_lmdb_lock_file`: LMDB's ``lock.mdb``, which nothing may open (closing
  any descriptor of it drops LMDB's lock: see :mod:`.files`); it holds no content.
- :func:`ensure_private_dir`, :func:`private_tree`, :func:`fsync_dir`: 0700
  directories and 0600 files whatever the umask, durable renames.
- :func:`open_private`, :func:`refuse_links`, :func:`check_private_dir`: no
  link in the data directory is followed, no directory others can write to is
  used.
- :func:`crashpoint`: the purge's failpoints, for crash-injection tests.
"""

from .compact import Swap, purge_env
from .env import SharedEnv, open_shared_env, release_shared_env
from .files import (
    MaintenanceLock,
    ensure_private_dir,
    fsync_dir,
    is_lmdb_lock_file,
    private_tree,
    wipe_tree,
)
from .safety import CRASH_EXIT, check_private_dir, crashpoint, open_private, refuse_links

__all__ = [
    "CRASH_EXIT",
    "MaintenanceLock",
    "SharedEnv",
    "Swap",
    "check_private_dir",
    "crashpoint",
    "ensure_private_dir",
    "fsync_dir",
    "is_lmdb_lock_file",
    "open_private",
    "open_shared_env",
    "private_tree",
    "purge_env",
    "refuse_links",
    "release_shared_env",
    "wipe_tree",
]
