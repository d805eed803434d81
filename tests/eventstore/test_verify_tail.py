"""verify_tail checks the last records as verify checks all: links, commitments, erasures, the head."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventstore import EntriesDeleted, EventLog, InvalidInputError, LogSettings
from eventstore.lmdb.layout import HEADERS, seq_key

from .contract import entry
from .tamper import get_value, raw_env

SPAN_3 = LogSettings(segment_span=3)


def build(log_dir: Path) -> None:
    """Seven entries, then a tombstone for seq 6 at seq 8."""
    with EventLog.open(log_dir, SPAN_3) as log:
        for i in range(7):
            log.append("s:a", [entry(i)], actor="t")
        log.erase([6], EntriesDeleted(request_id="r1", entry_ids=("e5",), erased_seqs=(6,)),
                  stream="system", actor="dpo")


def flip_header(log_dir: Path, seq: int) -> None:
    value = bytearray(get_value(log_dir, HEADERS, seq))
    value[-1] ^= 1
    with raw_env(log_dir) as (env, dbs), env.begin(write=True) as txn:
        txn.put(seq_key(seq), bytes(value), db=dbs[HEADERS])


def tail(log_dir: Path, count: int) -> tuple[bool, int, int | None]:
    with EventLog.open(log_dir) as log:
        result = log.verify_tail(count)
    return result.ok, result.events, result.first_bad_seq


def test_an_intact_tail_verifies_with_its_erasures(log_dir: Path) -> None:
    build(log_dir)
    assert tail(log_dir, 3) == (True, 3, None)
    assert tail(log_dir, 100) == (True, 8, None)


def test_a_changed_header_in_the_tail_is_caught_and_one_before_it_is_not_looked_at(log_dir: Path) -> None:
    build(log_dir)
    flip_header(log_dir, 7)
    assert tail(log_dir, 3) == (False, 3, 7)
    assert tail(log_dir, 1)[0]  # seq 8 links to seq 7's stored hash, which is unchanged


def test_an_empty_log_and_bad_counts(log_dir: Path) -> None:
    with EventLog.open(log_dir) as log:
        assert log.verify_tail(10).ok
        with pytest.raises(InvalidInputError):
            log.verify_tail(0)
