"""Raw access to a closed log's LMDB file, for tamper tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lmdb

from eventstore.lmdb.layout import DB_NAMES, META, PAYLOADS, SPAN, seq_key, seq_of_key


@contextlib.contextmanager
def raw_env(log_dir: Path) -> Iterator[tuple[Any, dict[bytes, Any]]]:
    """Open the log's environment directly (the EventLog must be closed)."""
    env = lmdb.open(str(log_dir), max_dbs=len(DB_NAMES) + 2)
    try:
        dbs = {name: env.open_db(name) for name in DB_NAMES}
        yield env, dbs
    finally:
        env.close()


def segment_dir(log_dir: Path, seq: int) -> Path:
    """The payload segment directory holding ``seq``."""
    with raw_env(log_dir) as (env, dbs), env.begin() as txn:
        span = seq_of_key(txn.get(SPAN, db=dbs[META]))
    return log_dir / f"seg-{(seq - 1) // span:06d}"


@contextlib.contextmanager
def raw_db(log_dir: Path, db: bytes, seq: int) -> Iterator[tuple[Any, Any]]:
    """(env, db handle) holding ``seq`` in ``db``: payloads live in segments."""
    if db != PAYLOADS:
        with raw_env(log_dir) as (env, dbs):
            yield env, dbs[db]
        return
    env = lmdb.open(str(segment_dir(log_dir, seq)), max_dbs=0)
    try:
        yield env, None
    finally:
        env.close()


def get_value(log_dir: Path, db: bytes, seq: int) -> bytes:
    """The stored value of ``seq`` in database ``db``."""
    with raw_db(log_dir, db, seq) as (env, handle), env.begin() as txn:
        return bytes(txn.get(seq_key(seq), db=handle))


def put_value(log_dir: Path, db: bytes, seq: int, value: bytes | None) -> None:
    """Overwrite (or delete, when ``value`` is None) the value of ``seq``."""
    with raw_db(log_dir, db, seq) as (env, handle), env.begin(write=True) as txn:
        if value is None:
            txn.delete(seq_key(seq), db=handle)
        else:
            txn.put(seq_key(seq), value, db=handle)


def put_mark(log_dir: Path, seq: int, base: int) -> None:
    """Store ``base`` as the append mark of the segment holding ``seq``, as an
    append starting from head ``base`` does with its payloads."""
    from eventstore.lmdb.segments import MARK

    env = lmdb.open(str(segment_dir(log_dir, seq)), max_dbs=0)
    try:
        with env.begin(write=True) as txn:
            txn.put(MARK, seq_key(base))
    finally:
        env.close()


def flip(value: bytes, index: int) -> bytes:
    """``value`` with every bit of byte ``index`` inverted."""
    return value[:index] + bytes([value[index] ^ 0xFF]) + value[index + 1 :]
