"""Every read checks the commitment of each payload it decodes, and tells an erased
payload from a lost one: a payload that fails is an error naming the seq, never
served; a missing payload reads as erased only when its seq was erased."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eventstore import CorruptionError, EntriesDeleted, Event, EventLog, LogSettings
from eventstore.lmdb.layout import ERASED, PAYLOADS, seq_key
from eventstore.lmdb.read import scan_range

from .contract import entry
from .tamper import flip, get_value, put_value, raw_env

TARGET = 3
# Each read path, giving the events it served by seq.
READS: dict[str, Callable[[EventLog], dict[int, Event | None]]] = {
    "read": lambda log: {r.seq: r.event for r in log.read()},
    "read-range": lambda log: {r.seq: r.event for r in log.read(TARGET, TARGET)},
    "read_stream": lambda log: {r.seq: r.event for r in log.read_stream("s:a")},
    "get": lambda log: {TARGET: log.get(TARGET).event},
    "events_at": lambda log: dict(zip([1, TARGET], log.events_at([1, TARGET]), strict=True)),
}


def build(log_dir: Path) -> None:
    """Six entries on one stream, in segments of three seqs."""
    with EventLog.open(log_dir, LogSettings(segment_span=3)) as log:
        for i in range(6):
            log.append("s:a", [entry(i)], actor="t")


def tombstone(*seqs: int) -> EntriesDeleted:
    """A tombstone naming ``seqs``."""
    return EntriesDeleted(request_id="r1", entry_ids=("e",), erased_seqs=seqs)


@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize("where", ["salt", "payload"])
def test_a_flipped_payload_byte_is_never_served(log_dir: Path, read: str, where: str) -> None:
    """A flipped byte of the salt or the payload raises CorruptionError naming the seq
    on every read path, even where the bytes still decode."""
    build(log_dir)
    stored = get_value(log_dir, PAYLOADS, TARGET)
    put_value(log_dir, PAYLOADS, TARGET, flip(stored, 5 if where == "salt" else len(stored) - 3))
    with EventLog.open(log_dir) as log, pytest.raises(CorruptionError) as info:
        READS[read](log)
    assert info.value.seq == TARGET and f"seq {TARGET}" in str(info.value)


@pytest.mark.parametrize("read", READS)
def test_a_payload_lost_without_a_tombstone_is_an_error(log_dir: Path, read: str) -> None:
    """A payload deleted behind the log's back is CorruptionError naming the seq, not an
    erased event."""
    build(log_dir)
    put_value(log_dir, PAYLOADS, TARGET, None)
    with EventLog.open(log_dir) as log, pytest.raises(CorruptionError, match="never erased") as info:
        READS[read](log)
    assert info.value.seq == TARGET


@pytest.mark.parametrize("read", READS)
def test_an_erased_payload_reads_as_erased(log_dir: Path, read: str) -> None:
    """A payload erased through erase() reads as None on every path."""
    build(log_dir)
    with EventLog.open(log_dir) as log:
        log.erase([TARGET], tombstone(TARGET), stream="system", actor="dpo")
        served = READS[read](log)
    assert served[TARGET] is None
    assert all(event == entry(seq - 1) for seq, event in served.items() if seq not in (TARGET, 7))


def test_a_payload_restored_after_its_erasure_stays_erased(log_dir: Path) -> None:
    """An erased payload that reappears (a segment restored from a copy) is not served,
    and verify reports it."""
    build(log_dir)
    stored = get_value(log_dir, PAYLOADS, TARGET)
    with EventLog.open(log_dir) as log:
        log.erase([TARGET], tombstone(TARGET), stream="system", actor="dpo")
    put_value(log_dir, PAYLOADS, TARGET, stored)
    with EventLog.open(log_dir) as log:
        assert log.get(TARGET).event is None and log.events_at([TARGET]) == [None]
        assert [r.event for r in log.read(TARGET, TARGET)] == [None]
        result = log.verify()
    assert (result.ok, result.first_bad_seq) == (False, TARGET)
    assert "still stored" in (result.problem or "")


def test_an_erase_committed_during_a_read_is_not_taken_for_a_loss(log_dir: Path) -> None:
    """A read whose snapshot predates an erase, but which reaches the payload after the
    erase deleted it, looks at ``erased`` again and serves the event as erased."""
    build(log_dir)
    with EventLog.open(log_dir) as log:
        backend: Any = log.backend

        def read_across_an_erase(snap: Any) -> list[Any]:
            assert snap.txn.get(seq_key(TARGET), db=snap.dbs[ERASED]) is None
            log.erase([TARGET], tombstone(TARGET), stream="system", actor="dpo")
            return scan_range(snap, 1, 6, 100)

        records = backend._read(read_across_an_erase)
        assert [r.seq for r in records] == [1, 2, 3, 4, 5, 6]
        assert records[TARGET - 1].event is None and records[0].event == entry(0)


def test_a_stream_index_pointing_elsewhere_is_not_followed(log_dir: Path) -> None:
    """read_stream checks that the record it reaches through the stream index is that
    version of that stream."""
    build(log_dir)
    with raw_env(log_dir) as (env, dbs), env.begin(write=True) as txn:
        txn.put(b"s:a\x00" + seq_key(2), seq_key(5), db=dbs[b"stream_index"])
    with EventLog.open(log_dir) as log, pytest.raises(CorruptionError) as info:
        list(log.read_stream("s:a"))
    assert info.value.seq == 5
