"""Raw access to a closed log's LMDB file, for tamper tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lmdb

from eventstore._lmdb_layout import DB_NAMES, seq_key


@contextlib.contextmanager
def raw_env(log_dir: Path) -> Iterator[tuple[Any, dict[bytes, Any]]]:
    """Open the log's environment directly (the EventLog must be closed)."""
    env = lmdb.open(str(log_dir), max_dbs=len(DB_NAMES) + 2)
    try:
        dbs = {name: env.open_db(name) for name in DB_NAMES}
        yield env, dbs
    finally:
        env.close()


def get_value(log_dir: Path, db: bytes, seq: int) -> bytes:
    """The stored value of ``seq`` in database ``db``."""
    with raw_env(log_dir) as (env, dbs), env.begin() as txn:
        return bytes(txn.get(seq_key(seq), db=dbs[db]))


def put_value(log_dir: Path, db: bytes, seq: int, value: bytes | None) -> None:
    """Overwrite (or delete, when ``value`` is None) the value of ``seq``."""
    with raw_env(log_dir) as (env, dbs), env.begin(write=True) as txn:
        if value is None:
            txn.delete(seq_key(seq), db=dbs[db])
        else:
            txn.put(seq_key(seq), value, db=dbs[db])


def flip(value: bytes, index: int) -> bytes:
    """``value`` with every bit of byte ``index`` inverted."""
    return value[:index] + bytes([value[index] ^ 0xFF]) + value[index + 1 :]
