"""verify() checks everything it can: besides the chain and the payloads, the stream
index, the stream versions, the event-id index, the erased set and the segment map."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import lmdb
import pytest

from eventstore import CorruptionError, EntriesDeleted, EventLog, LogSettings
from eventstore.lmdb.layout import ERASED, EVENT_IDS, STREAM_INDEX, STREAMS, seq_key

from .contract import entry
from .tamper import get_value, raw_env, segment_dir

SPAN_3 = LogSettings(segment_span=3)


def build(log_dir: Path) -> list[str]:
    """Seven entries on two streams (s:a gets seqs 1, 3, 5, 7), then a tombstone for
    seq 2 at seq 8; return the event ids by seq - 1."""
    with EventLog.open(log_dir, SPAN_3) as log:
        for i in range(7):
            log.append("s:a" if i % 2 == 0 else "s:b", [entry(i)], actor="t")
        tomb = EntriesDeleted(request_id="r1", entry_ids=("e1",), erased_seqs=(2,))
        log.erase([2], tomb, stream="system", actor="dpo")
        assert log.verify().ok
        return [r.id for r in log.read()]


def tamper(log_dir: Path, db: bytes, key: bytes, value: bytes | None) -> None:
    """Put (or delete, with None) one key of a main database of the closed log."""
    with raw_env(log_dir) as (env, dbs), env.begin(write=True) as txn:
        if value is None:
            assert txn.delete(key, db=dbs[db])
        else:
            txn.put(key, value, db=dbs[db])


def verify(log_dir: Path) -> tuple[int | None, str]:
    """Reopen the log; verify's first bad seq and problem."""
    with EventLog.open(log_dir) as log:
        result = log.verify()
    assert result.ok is (result.first_bad_seq is None)
    return result.first_bad_seq, result.problem or ""


def test_a_lowered_stream_version_is_caught_and_no_event_is_lost(log_dir: Path) -> None:
    """streams says s:a is at version 3 (it is at 4): verify fails at s:a's last seq; the
    next append to s:a would reuse version 4, and is refused instead of taking over the
    stream index entry of seq 7 (read_stream would lose it)."""
    build(log_dir)
    tamper(log_dir, STREAMS, b"s:a", seq_key(3))
    bad, problem = verify(log_dir)
    assert bad == 7 and "version 3" in problem
    with EventLog.open(log_dir) as log:
        with pytest.raises(CorruptionError):
            log.append("s:a", [entry(9)], actor="t")
        assert [r.seq for r in log.read_stream("s:a")] == [1, 3, 5, 7]


@pytest.mark.parametrize(("db", "damage", "bad"), [
    (STREAM_INDEX, "delete", 5),
    (STREAM_INDEX, "elsewhere", 5),
    (STREAM_INDEX, "extra", 4),
    (EVENT_IDS, "delete", 5),
    (EVENT_IDS, "elsewhere", 5),
    (EVENT_IDS, "extra", 4),
    (STREAMS, "delete", 7),
    (STREAMS, "extra", 9),
])
def test_index_damage_is_caught_at_its_seq(log_dir: Path, db: bytes, damage: str, bad: int) -> None:
    """A missing, misdirected or extra entry in an index fails verify at the seq it concerns
    (an entry for a stream without events: just after the head)."""
    ids = build(log_dir)
    key = {STREAM_INDEX: b"s:a\x00" + seq_key(3), EVENT_IDS: ids[4].encode(), STREAMS: b"s:a"}[db]
    if damage == "delete":
        tamper(log_dir, db, key, None)
    elif damage == "elsewhere":
        tamper(log_dir, db, key, seq_key(6))
    else:
        extra = {STREAM_INDEX: b"s:zzz\x00" + seq_key(1), EVENT_IDS: b"no-such-id", STREAMS: b"s:zzz"}
        tamper(log_dir, db, extra[db], seq_key(4) if db != STREAMS else seq_key(1))
    assert verify(log_dir)[0] == bad


@pytest.mark.parametrize(("damage", "bad"), [("unnamed", 4), ("unmarked", 2)])
def test_the_erased_set_must_equal_what_the_tombstones_name(log_dir: Path, damage: str,
                                                            bad: int) -> None:
    """A seq marked erased that no tombstone names, or a named one left unmarked, fails."""
    build(log_dir)
    if damage == "unnamed":
        tamper(log_dir, ERASED, seq_key(4), b"")
    else:
        tamper(log_dir, ERASED, seq_key(2), None)
    bad_seq, problem = verify(log_dir)
    assert bad_seq == bad and "erased" in problem


def test_a_payload_outside_its_segment_is_caught(log_dir: Path) -> None:
    """A payload stored in another segment than its seq maps to fails at that seq."""
    build(log_dir)
    value = get_value(log_dir, b"payloads", 5)
    env = lmdb.open(str(segment_dir(log_dir, 1)), max_dbs=0)
    with env.begin(write=True) as txn:
        txn.put(seq_key(5), value)
    env.close()
    bad, problem = verify(log_dir)
    assert bad == 5 and "outside its span" in problem


def _put_mark(segment: Path, base: int) -> None:
    """In another process (the log is open here): store ``base`` as a segment's mark."""
    code = ("import lmdb, struct, sys\nenv = lmdb.open(sys.argv[1], max_dbs=0)\n"
            "with env.begin(write=True) as txn:\n"
            "    txn.put(bytes(8), struct.pack('>Q', int(sys.argv[2])))\n")
    subprocess.run([sys.executable, "-c", code, str(segment), str(base)], check=True, timeout=60)


def test_a_segment_marked_beyond_the_head_fails_verify(log_dir: Path) -> None:
    """A segment whose append started after the head (the main file lost commits while
    the log was open) fails verify just after the head."""
    build(log_dir)
    with EventLog.open(log_dir) as log:
        _put_mark(log_dir / "seg-000002", 12)  # the segment of seq 8
        result = log.verify()
    assert (result.ok, result.first_bad_seq) == (False, 9)
    assert "started after seq 12" in (result.problem or "")
