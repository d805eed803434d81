"""Format 3 (the erased database and the segments' append marks): a format 2 log
is brought to it on open, and a format 1 log goes through format 2 to it."""

from __future__ import annotations

from pathlib import Path

import lmdb

from eventstore import EventLog
from eventstore.lmdb.layout import ERASED, META, seq_key
from eventstore.lmdb.segments import MARK

from .tamper import raw_env, segment_dir
from .test_verify_indexes import build


def _to_format_2(log_dir: Path) -> None:
    """Rewrite a closed log as format 2 stored it: no erased database, no marks."""
    with raw_env(log_dir) as (env, dbs), env.begin(write=True) as txn:
        txn.drop(dbs[ERASED], delete=True)
        txn.put(b"format", seq_key(2), db=dbs[META])
    for seg in sorted(log_dir.glob("seg-*")):
        env = lmdb.open(str(seg), max_dbs=0)
        with env.begin(write=True) as txn:
            txn.delete(MARK)
        env.close()


def test_a_format_2_log_is_brought_to_format_3(log_dir: Path) -> None:
    """On open, a format 2 log gets its erased set from the tombstones and the segments
    at or after the head's get the head as their mark; reads and verify then work."""
    build(log_dir)
    with EventLog.open(log_dir) as log:
        before = list(log.read())
    _to_format_2(log_dir)
    with EventLog.open(log_dir) as log:
        assert list(log.read()) == before and log.get(2).event is None
        assert log.verify().ok
    with raw_env(log_dir) as (env, dbs), env.begin() as txn:
        assert bytes(txn.get(b"format", db=dbs[META])) == seq_key(3)
        assert [bytes(k) for k, _ in txn.cursor(db=dbs[ERASED])] == [seq_key(2)]
    env = lmdb.open(str(segment_dir(log_dir, 8)), max_dbs=0)
    with env.begin() as txn:
        assert txn.get(MARK) == seq_key(8)
    env.close()
