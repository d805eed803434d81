"""One LMDB environment per path per process, safe across purges and map growth.

py-lmdb refuses to open the same path twice in one process, so environments
are shared through a registry with a reference count. Every operation runs
under the shared maintenance lock and first compares the on-disk generation
with the one it opened; a purge bumps the generation, so every process reopens
the new file before touching it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import lmdb

from ..errors import MemlogError, RetiredError
from .files import (
    MaintenanceLock,
    create_int_file,
    ensure_private_dir,
    read_int_file,
    storage_error,
    write_int_file,
)

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
        ensure_private_dir(path)
        self.lock = MaintenanceLock(path / "maint.lock")
        self.generation = -1
        self.env: Any = None
        self.dbs: dict[bytes, Any] = {}
        self._open()

    # -- lifecycle ---------------------------------------------------------

    def _open(self) -> None:
        create_int_file(self.path / "generation", 0)  # so every check finds a file
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
            raise storage_error(exc, f"cannot open the LMDB environment in {self.path}") from None

    def close_env(self) -> None:
        """Close the environment (the registry entry stays)."""
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
        """Hold the maintenance lock shared; reopen if a purge swapped files."""
        with self.lock.shared():
            generation = read_int_file(self.path / "generation")
            if generation == RETIRED:
                raise RetiredError(f"{self.path} was replaced by a rebuild; reopen the store")
            if self.env is None or generation != self.generation:
                self.reopen()
            yield self.env

    def retire(self, timeout: float) -> None:
        """Mark the environment replaced (under the exclusive lock) and close it."""
        with self.lock.exclusive(timeout):
            write_int_file(self.path / "generation", RETIRED)
            self.close_env()

    def write(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn(txn)`` in one write transaction; grow the map when full."""
        with self.operation() as env:
            while True:
                try:
                    with env.begin(write=True) as txn:
                        return fn(txn)
                except lmdb.MapFullError:
                    self._grow(env)
                except lmdb.MapResizedError:
                    env.set_mapsize(0)
                except MemlogError:
                    raise
                except lmdb.Error as exc:
                    raise storage_error(exc, "write failed") from None

    def read(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn(txn)`` in one read transaction (values are buffers)."""
        with self.operation() as env:
            while True:
                try:
                    with env.begin(buffers=True) as txn:
                        return fn(txn)
                except lmdb.MapResizedError:
                    env.set_mapsize(0)
                except MemlogError:
                    raise
                except lmdb.Error as exc:
                    raise storage_error(exc, "read failed") from None

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
