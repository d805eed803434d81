"""One LMDB environment per path per process, safe across purges and map growth.

py-lmdb refuses to open the same path twice in one process, so environments
are shared through a registry with a reference count. Every operation runs
under the shared maintenance lock and first compares the on-disk generation
with the one it opened; a purge bumps the generation, so every process reopens
the new file before touching it. The generation file is held open and read
with one ``pread``; writers overwrite it in place (:func:`.files.overwrite_int_file`).

The environment knows its own shape. Before ``lmdb.open`` the data file is
checked against its meta pages (:mod:`eventstore.storage.shape`), so that a
truncated file is a :class:`CorruptionError` naming it, never a SIGBUS. And a
data file that is missing or empty is a new environment only while nothing says
one was created there:

- the ``generation`` file is written right after the first open of a new data
  file, once that file and its directory entry are durable; so a directory
  holding a ``generation`` file but no data file (or an empty one) lost it;
- a process that opened the environment before and reopens it (a purge bumped
  the generation) must find the file too;
- subclasses add their own evidence (the log: its payload segments).

``maint.lock`` and ``lock.mdb`` are no evidence: every opener creates them
before LMDB writes the first pages, so a crash during the creation of a new
environment, or a second process opening it at the same moment, leaves them
next to a missing or empty data file. When the first check fails and nothing
says the file must be whole, another process may be creating it right now:
LMDB's own lock makes ``lmdb.open`` wait until the creator has written the
first pages, and the file is checked again after the open, before any page is
read.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import lmdb

from ..errors import CorruptionError, MemlogError, RetiredError
from .files import (
    MaintenanceLock,
    create_int_file,
    ensure_private_dir,
    fsync_dir,
    overwrite_int_file,
    pread_int,
    read_int_file,
)
from .safety import open_private
from .shape import check_data_file, lmdb_error

__all__ = ["RETIRED", "SharedEnv", "open_shared_env", "release_shared_env"]

RETIRED = -1

T = TypeVar("T")

_INITIAL_MAP = 64 << 20
_MAX_GROWTH_STEP = 8 << 30
_registry: dict[str, SharedEnv] = {}
_registry_lock = threading.Lock()


class SharedEnv:
    """An LMDB environment plus its maintenance lock and generation."""

    def __init__(self, path: Path, db_names: tuple[bytes, ...], sync: bool) -> None:
        self.path = path
        self.db_names = db_names
        self.sync = sync
        self.refs = 0
        self._generation_file = path / "generation"
        self._generation_fd = -1  # the generation file, held open: read before every operation
        ensure_private_dir(path)
        self.lock = MaintenanceLock(path / "maint.lock")
        self.generation = -1
        self.env: Any = None
        self.dbs: dict[bytes, Any] = {}
        self.opened = False
        # Threads inside an operation use ``env``; a reopen waits until none does
        # (closing an environment under another thread's transaction leaves that
        # thread's robust-mutex list pointing into the unmapped lock file, and the
        # thread's next LMDB lock crashes the process).
        self._users_lock = threading.RLock()  # entered directly on the hot path (a C call)
        self._users = threading.Condition(self._users_lock)
        self._active = 0
        self._reopen_waiting = 0  # threads waiting in _enter for the others to leave
        self._depth = threading.local()
        try:
            with self.lock.shared():  # no purge swaps files while they are checked
                self._open()
        except BaseException:
            self.lock.close()
            raise

    # -- lifecycle ---------------------------------------------------------

    @property
    def data_file(self) -> Path:
        """The LMDB data file (what corruption errors name)."""
        return self.path / "data.mdb"

    def _open(self) -> None:
        must = self._must_exist()
        try:
            checked: bool | None = check_data_file(self.data_file, must_exist=must)
        except CorruptionError:
            if must is not None:
                if read_int_file(self.path / "generation") == RETIRED:
                    raise RetiredError(f"{self.path} was replaced by a rebuild; reopen the store") from None
                raise
            checked = None  # perhaps being created by another process: see the module doc
        self._open_env()
        if checked is not True:
            try:
                check_data_file(self.data_file, must_exist="it was just opened")
            except CorruptionError:
                self.close_env()
                raise
        if checked is False:  # created here: durable before the generation vouches for it
            fsync_dir(self.path)
        create_int_file(self.path / "generation", 0)  # so every check finds a file
        self._hold_generation()
        self.opened = True

    def _hold_generation(self) -> None:
        """Keep the generation file open: a check before an operation is then
        one ``pread`` (writers overwrite it in place), where opening, reading
        and closing it cost a single durable append about 20 us more."""
        self._release_generation()
        try:
            self._generation_fd = open_private(self._generation_file, os.O_RDONLY)
        except FileNotFoundError:
            self._generation_fd = -1  # checked by path until the next open

    def _release_generation(self) -> None:
        with self._users:  # no thread of this process is reading it meanwhile
            if self._generation_fd >= 0:
                os.close(self._generation_fd)
                self._generation_fd = -1

    def _current_generation(self) -> int:
        """The generation on disk. A held file that was unlinked (deleted, or
        replaced by a rename) is let go and the file at the path held instead,
        so a bump written there is never missed."""
        fd = self._generation_fd
        if fd >= 0 and os.fstat(fd).st_nlink > 0:
            return pread_int(fd)
        self._hold_generation()
        if self._generation_fd < 0:
            return read_int_file(self._generation_file)
        return pread_int(self._generation_fd)

    def _open_env(self) -> None:
        self.generation = read_int_file(self.path / "generation")
        try:
            self.env = lmdb.open(
                str(self.path), map_size=_INITIAL_MAP, max_dbs=len(self.db_names) + 2,
                mode=0o600, sync=self.sync, max_readers=256,
            )
            with self.env.begin(write=True) as txn:
                self.dbs = {name: self.env.open_db(name, txn=txn) for name in self.db_names}
        except lmdb.Error as exc:
            if self.env is not None:
                self.env.close()
                self.env = None
            raise lmdb_error(exc, f"cannot open the LMDB environment in {self.path}",
                             self.data_file) from None

    def _must_exist(self) -> str | None:
        """Why the data file must already exist and be whole (None: it may be new)."""
        if self.opened:
            return "this process opened it before"
        if not (self.path / "generation").exists():
            return None
        return "its directory holds a generation file, so it was created before"

    def close_env(self) -> None:
        """Close the environment (the registry entry stays)."""
        self._release_generation()
        if self.env is not None:
            self.env.close()
            self.env = None
            self.dbs = {}

    def reopen(self) -> None:
        """Close and reopen, adopting the current generation."""
        self.close_env()
        self._open()

    # -- operations --------------------------------------------------------

    @contextlib.contextmanager
    def operation(self) -> Iterator[Any]:
        """Hold the maintenance lock shared; reopen if a purge swapped files,
        once no other thread of this process is using the old environment."""
        depth = self._begin()
        try:
            yield self.env
        finally:
            self._end(depth)

    def _begin(self) -> int:
        """Start an operation (what :meth:`operation` enters, without its
        generator: ``read`` and ``write`` call it directly); return the depth
        to give :meth:`_end`."""
        self.lock.hold_shared()
        try:
            depth = getattr(self._depth, "n", 0)
            self._enter(depth)
        except BaseException:
            self.lock.release_shared()
            raise
        self._depth.n = depth + 1
        return depth

    def _end(self, depth: int) -> None:
        self._depth.n = depth
        with self._users_lock:
            self._active -= 1
            if self._reopen_waiting:
                self._users.notify_all()
        self.lock.release_shared()

    def _enter(self, depth: int) -> None:
        """Count this thread in, first adopting a new generation when no other
        thread is inside an operation (``depth``: this thread's own, outer ones)."""
        with self._users_lock:
            while True:
                generation = self._current_generation()
                if generation == RETIRED:
                    raise RetiredError(f"{self.path} was replaced by a rebuild; reopen the store")
                if self.env is not None and generation == self.generation:
                    break
                if self._active <= depth:
                    self.reopen()
                    break
                self._reopen_waiting += 1
                try:
                    self._users.wait()
                finally:
                    self._reopen_waiting -= 1
            self._active += 1

    def retire(self, timeout: float) -> None:
        """Mark the environment replaced (under the exclusive lock) and close it."""
        with self.lock.exclusive(timeout):
            overwrite_int_file(self._generation_file, RETIRED)
            self.close_env()

    def write(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn(txn)`` in one write transaction; grow the map when full."""
        depth = self._begin()
        try:
            env = self.env
            while True:
                try:
                    with env.begin(write=True) as txn:
                        return fn(txn)
                except lmdb.MapFullError:
                    self._grow(env)
                except lmdb.MapResizedError:
                    env.set_mapsize(0)
                except CorruptionError as exc:
                    raise self._located(exc) from None
                except MemlogError:
                    raise
                except lmdb.Error as exc:
                    raise lmdb_error(exc, "write failed", self.data_file) from None
        finally:
            self._end(depth)

    def read(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn(txn)`` in one read transaction (values are buffers)."""
        depth = self._begin()
        try:
            env = self.env
            while True:
                try:
                    with env.begin(buffers=True) as txn:
                        return fn(txn)
                except lmdb.MapResizedError:
                    env.set_mapsize(0)
                except CorruptionError as exc:
                    raise self._located(exc) from None
                except MemlogError:
                    raise
                except lmdb.Error as exc:
                    raise lmdb_error(exc, "read failed", self.data_file) from None
        finally:
            self._end(depth)

    def _located(self, exc: CorruptionError) -> CorruptionError:
        """``exc``, naming this environment's data file when it names neither
        a seq nor a file under this directory (bad bytes met in a transaction
        on this environment were read from its file)."""
        if exc.seq is not None or str(self.path) in exc.message:
            return exc
        return CorruptionError(f"{self.data_file} is corrupt: {exc.message}")

    @staticmethod
    def _grow(env: Any) -> None:
        size = env.info()["map_size"]
        env.set_mapsize(size + min(size, _MAX_GROWTH_STEP))


def open_shared_env(path: Path, db_names: tuple[bytes, ...], *, sync: bool = True,
                    factory: Callable[[Path, tuple[bytes, ...], bool], SharedEnv] | None = None
                    ) -> SharedEnv:
    """Return the process-wide environment for ``path``, opening it if needed
    (with ``factory``, a :class:`SharedEnv` subclass, when given)."""
    key = str(path.resolve())
    with _registry_lock:
        shared = _registry.get(key)
        if shared is None:
            shared = (factory or SharedEnv)(Path(key), db_names, sync)
            _registry[key] = shared
        shared.refs += 1
        return shared


def release_shared_env(shared: SharedEnv) -> None:
    """Drop one reference; close the environment when none is left."""
    with _registry_lock:
        shared.refs -= 1
        if shared.refs <= 0:
            _registry.pop(str(shared.path), None)
            shared.close_env()
            shared.lock.close()
