"""Payload segments: reads across them, a purge rewrites only the dirty ones,
interrupted erasures and appends recover, and a format 1 log migrates."""

from __future__ import annotations

import secrets
from pathlib import Path

import lmdb
import pytest

from eventstore import EntriesDeleted, EntryRecorded, EventLog, InvalidInputError, LogSettings
from eventstore.lmdb.layout import DB_NAMES, ERASING, META, PAYLOADS, SPAN, seq_key

from ..conftest import scan_dir
from .tamper import get_value, put_mark, put_value, raw_env, segment_dir

SPAN_3 = LogSettings(segment_span=3)


def note(i: int, text: str = "") -> EntryRecorded:
    """A small entry, optionally carrying ``text``."""
    return EntryRecorded(entry_id=f"e{i}", kind="message", occurred_at=i, content=f"note {i} {text}")


def tombstone(seqs: list[int]) -> EntriesDeleted:
    """A tombstone for ``seqs``."""
    return EntriesDeleted(request_id="r1", entry_ids=("e",), erased_seqs=tuple(seqs))


def test_reads_cross_segment_boundaries(log_dir: Path) -> None:
    """Range, stream and batch reads and verify see every payload, whichever segment holds it."""
    with EventLog.open(log_dir, SPAN_3) as log:
        for i in range(10):
            log.append(f"s:{i % 2}", [note(i)], actor="t")
        log.append("s:b", [note(i) for i in range(10, 17)], actor="t")
        assert [r.event.entry_id for r in log.read(2, 14) if r.event] == [f"e{i}" for i in range(1, 14)]
        assert len(list(log.read_stream("s:1"))) == 5
        assert [e.entry_id for e in log.events_at([17, 1, 9]) if e] == ["e16", "e0", "e8"]
        assert log.verify().ok
    assert sorted(p.name for p in log_dir.glob("seg-*")) == [f"seg-{i:06d}" for i in range(6)]


def test_purge_rewrites_only_segments_that_held_erased_payloads(log_dir: Path) -> None:
    """Erasing seq 5 rewrites segment 1 alone; the others keep their files and bytes."""
    marker = secrets.token_hex(16)
    with EventLog.open(log_dir, SPAN_3) as log:
        log.append("s:a", [note(i, marker if i == 4 else "") for i in range(9)], actor="t")
        untouched = {p: p.stat().st_ino for p in log_dir.glob("seg-*/data.mdb")}
        log.erase([5], tombstone([5]), stream="system", actor="dpo")
        assert scan_dir(log_dir, [marker.encode()])  # freed pages still hold it
        report = log.purge()
        assert log.verify().ok and log.get(5).event is None and log.get(4).event is not None
    assert report.files_rewritten == (str(segment_dir(log_dir, 5) / "data.mdb"),)
    assert scan_dir(log_dir, [marker.encode()]) == {}
    rewritten = segment_dir(log_dir, 5) / "data.mdb"
    for path, inode in untouched.items():
        assert (path.stat().st_ino == inode) == (path != rewritten)


def test_an_interrupted_erase_reads_as_erased_and_the_purge_finishes_it(log_dir: Path) -> None:
    """A tombstone committed, the payload deletion not yet: reads give None, verify passes,
    and the next purge deletes the payload and leaves none of its bytes."""
    marker = secrets.token_hex(16)
    with EventLog.open(log_dir, SPAN_3) as log:
        log.append("s:a", [note(1), note(2, marker), note(3)], actor="t")
    stored = get_value(log_dir, PAYLOADS, 2)
    with EventLog.open(log_dir) as log:
        log.erase([2], tombstone([2]), stream="system", actor="dpo")
    put_value(log_dir, PAYLOADS, 2, stored)  # as if the process died before deleting it
    with raw_env(log_dir) as (env, dbs), env.begin(write=True) as txn:
        txn.put(ERASING, seq_key(2), db=dbs[META])
    with EventLog.open(log_dir) as log:
        assert log.get(2).event is None
        assert [r.event for r in log.read(2, 2)] == [None] and log.events_at([2]) == [None]
        assert log.verify().ok
        log.purge()
        assert log.verify().ok
    assert scan_dir(log_dir, [marker.encode()]) == {}
    with raw_env(log_dir) as (env, dbs), env.begin() as txn:
        assert txn.get(ERASING, db=dbs[META]) is None


def test_payloads_of_an_append_that_never_committed_are_harmless(log_dir: Path) -> None:
    """A payload written after the head (the headers never committed) does not fail
    verify; the next append overwrites it and a purge removes any left."""
    marker = secrets.token_hex(16)
    with EventLog.open(log_dir, SPAN_3) as log:
        log.append("s:a", [note(1), note(2)], actor="t")
    for seq in (3, 4):  # an append from head 2 wrote its payloads and marks, then died
        put_value(log_dir, PAYLOADS, seq, bytes(32) + marker.encode())
        put_mark(log_dir, seq, 2)
    with EventLog.open(log_dir) as log:
        assert log.verify().ok
        log.append("s:a", [note(3)], actor="t")
        assert log.get(3).event == note(3) and log.verify().ok
        log.purge()
        assert log.verify().ok and log.head().seq == 3
    assert scan_dir(log_dir, [marker.encode()]) == {}


def test_a_format_1_log_moves_its_payloads_into_segments(log_dir: Path) -> None:
    """Payloads kept in the main environment (format 1) move into segments on open,
    and the main file keeps none of their bytes."""
    marker = secrets.token_hex(16)
    with EventLog.open(log_dir, SPAN_3) as log:
        log.append("s:a", [note(i, marker) for i in range(7)], actor="t")
        before = [r.event for r in log.read()]
    _to_format_1(log_dir)
    assert scan_dir(log_dir, [marker.encode()]) == {marker.encode(): ["data.mdb"]}
    with EventLog.open(log_dir) as log:
        assert [r.event for r in log.read()] == before
        assert log.verify().ok
    found = scan_dir(log_dir, [marker.encode()])[marker.encode()]
    assert "data.mdb" not in found and all(f.startswith("seg-") for f in found)


def _to_format_1(log_dir: Path) -> None:
    """Rewrite a closed log the way format 1 stored it: payloads in the main environment."""
    moved = []
    for seg in sorted(log_dir.glob("seg-*")):
        env = lmdb.open(str(seg), max_dbs=0)
        with env.begin() as txn:
            moved += [(bytes(k), bytes(v)) for k, v in txn.cursor()]
        env.close()
        for path in seg.iterdir():
            path.unlink()
        seg.rmdir()
    env = lmdb.open(str(log_dir), max_dbs=len(DB_NAMES) + 2)
    with env.begin(write=True) as txn:
        payloads = env.open_db(PAYLOADS, txn=txn)
        meta = env.open_db(META, txn=txn)
        for key, value in moved:
            txn.put(key, value, db=payloads)
        txn.delete(SPAN, db=meta)
        txn.put(b"format", seq_key(1), db=meta)
    env.close()


def test_a_bad_segment_span_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """segment_span 0 raises a clear error and creates no directory."""
    with pytest.raises(InvalidInputError, match="segment_span"):
        EventLog.open(tmp_path / "log", LogSettings(segment_span=0))
    assert not (tmp_path / "log").exists()


def test_a_purge_that_fails_after_a_swap_still_moves_every_process_on(
        log_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the second segment's copy fails, the first one is already swapped: the
    generation still moves (no process may keep writing the old file), the old
    file is wiped, nothing is lost, and the next purge finishes the job."""
    from eventstore import StorageError
    from eventstore.storage import compact as purge_module

    markers = [secrets.token_hex(16), secrets.token_hex(16)]
    with EventLog.open(log_dir, SPAN_3) as log:
        log.append("s:a", [note(1), note(2, markers[0]), note(3), note(4, markers[1])], actor="t")
        log.erase([2, 4], tombstone([2, 4]), stream="system", actor="dpo")
        generation = log.head().generation
        real = purge_module._compact_copy
        calls: list[Path] = []

        def failing(env: object, dbs: object, scratch: Path) -> None:
            calls.append(scratch)
            if len(calls) == 2:
                raise StorageError("disk full (injected)")
            real(env, dbs, scratch)

        monkeypatch.setattr(purge_module, "_compact_copy", failing)
        with pytest.raises(StorageError, match="injected"):
            log.purge()
        assert log.head().generation == generation + 1
        assert [log.get(s).event for s in (1, 3)] == [note(1), note(3)] and log.verify().ok
        assert scan_dir(log_dir, [markers[0].encode()]) == {}
        monkeypatch.setattr(purge_module, "_compact_copy", real)
        log.purge()
        assert log.verify().ok
    assert scan_dir(log_dir, [m.encode() for m in markers]) == {}
