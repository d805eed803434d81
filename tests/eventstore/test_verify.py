"""verify() walks the chain and names the first bad seq."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventstore import CorruptionError, EntriesDeleted, EventLog
from eventstore.lmdb.layout import HEADERS, META, PAYLOADS

from .contract import entry
from .tamper import flip, get_value, put_value, raw_env, segment_dir

TARGET = 3


def build(log_dir: Path, count: int = 6) -> None:
    """A small log of ``count`` entries."""
    with EventLog.open(log_dir) as log:
        for i in range(count):
            log.append("s:a", [entry(i)], actor="t")
        assert log.verify().ok


def first_bad(log_dir: Path) -> int | None:
    """Reopen the log and return verify's first bad seq."""
    with EventLog.open(log_dir) as log:
        result = log.verify()
    assert result.ok is (result.first_bad_seq is None)
    return result.first_bad_seq


def test_good_log_verifies(log_dir: Path) -> None:
    """A log written through the API verifies with the right counts."""
    build(log_dir)
    with EventLog.open(log_dir) as log:
        result = log.verify()
    assert (result.ok, result.events, result.head, result.first_bad_seq) == (True, 6, 6, None)


@pytest.mark.parametrize("db", [HEADERS, PAYLOADS])
def test_every_flipped_byte_is_caught_at_its_seq(log_dir: Path, db: bytes) -> None:
    """Flipping any single byte of a header, commitment, chain, salt or payload fails at that seq."""
    build(log_dir)
    original = get_value(log_dir, db, TARGET)
    for index in range(len(original)):
        put_value(log_dir, db, TARGET, flip(original, index))
        assert first_bad(log_dir) == TARGET, f"byte {index} of {db!r}"
    put_value(log_dir, db, TARGET, original)
    assert first_bad(log_dir) is None


@pytest.mark.parametrize("seq", [1, TARGET, 6])
def test_removed_event_is_caught(log_dir: Path, seq: int) -> None:
    """Dropping a whole event (header and payload) fails at that seq: verify names it,
    or, for the head, the open already does (the head's payload is gone)."""
    build(log_dir)
    put_value(log_dir, HEADERS, seq, None)
    put_value(log_dir, PAYLOADS, seq, None)
    if seq < 6:
        assert first_bad(log_dir) == seq
        return
    with pytest.raises(CorruptionError) as info:
        first_bad(log_dir)
    assert info.value.seq == seq and "data.mdb" in str(info.value)


def test_payload_removed_without_tombstone_is_caught(log_dir: Path) -> None:
    """A payload deleted behind the log's back fails verify at its seq."""
    build(log_dir)
    put_value(log_dir, PAYLOADS, TARGET, None)
    assert first_bad(log_dir) == TARGET


def test_payload_removed_with_tombstone_verifies(log_dir: Path) -> None:
    """A payload erased through erase() is named by its tombstone and verifies."""
    build(log_dir)
    with EventLog.open(log_dir) as log:
        tomb = EntriesDeleted(request_id="r1", entry_ids=("e2",), erased_seqs=(TARGET,))
        log.erase([TARGET], tomb, stream="system", actor="dpo")
        result = log.verify()
    assert result.ok and result.erased == 1


def test_head_hash_tampering_is_caught(log_dir: Path) -> None:
    """A changed head hash in meta fails verify."""
    build(log_dir)
    with raw_env(log_dir) as (env, dbs), env.begin(write=True) as txn:
        head = bytes(txn.get(b"head", db=dbs[META]))
        txn.put(b"head", head[:8] + bytes(32) + head[40:], db=dbs[META])
    assert first_bad(log_dir) == 6


def test_byte_flipped_in_the_file_is_caught(log_dir: Path) -> None:
    """Flipping one byte of a payload inside its segment's data.mdb fails verify at that seq."""
    build(log_dir)
    data_file = segment_dir(log_dir, TARGET) / "data.mdb"
    blob = bytearray(data_file.read_bytes())
    needle = b"some content 2"  # entry(2) is at seq 3
    at = blob.find(needle)
    assert at > 0
    while at != -1:  # freed pages may hold stale copies; flip the live one too
        blob[at + 5] ^= 0x01
        at = blob.find(needle, at + 1)
    data_file.write_bytes(bytes(blob))
    assert first_bad(log_dir) == TARGET


def test_corrupted_payload_read_raises_corruption(log_dir: Path) -> None:
    """Reading a corrupted record raises CorruptionError naming the seq."""
    build(log_dir)
    payload = get_value(log_dir, PAYLOADS, TARGET)
    put_value(log_dir, PAYLOADS, TARGET, flip(payload, len(payload) - 3))
    with EventLog.open(log_dir) as log:
        with pytest.raises(CorruptionError) as info:
            log.get(TARGET)
        assert info.value.seq == TARGET and info.value.code == "E_STORAGE_CORRUPT"
    header = get_value(log_dir, HEADERS, TARGET)
    put_value(log_dir, HEADERS, TARGET, header[:64] + b"\xc1" + header[65:])
    with EventLog.open(log_dir) as log, pytest.raises(CorruptionError) as info:
        list(log.read())
    assert info.value.seq == TARGET
