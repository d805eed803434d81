"""The store knows its own shape: a missing, emptied or truncated data file is a
clear E_STORAGE_CORRUPT naming the file, never an empty store and never a SIGBUS;
the segments vouch for the head; a brand-new directory is a new store."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eventstore import (
    CorruptionError,
    EntriesDeleted,
    EventLog,
    EventNotFoundError,
    InvalidInputError,
    LogSettings,
)
from eventstore.chain import GENESIS
from eventstore.storage import open_shared_env, release_shared_env
from eventstore.storage.shape import read_meta

from .contract import entry

SPAN_3 = LogSettings(segment_span=3)


def build(log_dir: Path, count: int = 8) -> None:
    """``count`` entries in segments of three seqs."""
    with EventLog.open(log_dir, SPAN_3) as log:
        for i in range(count):
            log.append(f"s:{i % 2}", [entry(i)], actor="t")


def open_fails(log_dir: Path, *names: str) -> CorruptionError:
    """Opening the log raises E_STORAGE_CORRUPT naming ``log_dir / name`` for every name."""
    with pytest.raises(CorruptionError) as info:
        EventLog.open(log_dir).close()
    for name in names:
        assert str(log_dir / name) in str(info.value), str(info.value)
    assert info.value.code == "E_STORAGE_CORRUPT"
    return info.value


@pytest.mark.parametrize("damage", ["delete", "empty"])
def test_a_missing_or_empty_main_file_is_corrupt_not_an_empty_store(log_dir: Path, damage: str) -> None:
    """Deleting or emptying log/data.mdb gives E_STORAGE_CORRUPT naming it, and leaves it so."""
    build(log_dir)
    data = log_dir / "data.mdb"
    data.unlink() if damage == "delete" else os.truncate(data, 0)
    open_fails(log_dir, "data.mdb")
    assert not data.exists() or data.stat().st_size == 0  # nothing was initialised over it


@pytest.mark.parametrize("name", ["data.mdb", "seg-000001/data.mdb"])
def test_a_truncated_file_is_refused_before_it_is_mapped(log_dir: Path, name: str) -> None:
    """A data file cut short is refused with its name, in a real process: no SIGBUS."""
    build(log_dir)
    path = log_dir / name
    os.truncate(path, path.stat().st_size // 2)
    code = (f"from eventstore import EventLog, CorruptionError\n"
            f"try:\n    EventLog.open({str(log_dir)!r}).verify()\n"
            f"except CorruptionError as exc:\n    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert f"{path} is truncated" in proc.stdout


def test_meta_pages_are_read_as_lmdb_writes_them(log_dir: Path) -> None:
    """The parsed meta matches what LMDB reports: page size, last page, transaction id."""
    build(log_dir)
    import lmdb

    env = lmdb.open(str(log_dir), max_dbs=10, readonly=True, lock=False)
    try:
        info, psize = env.info(), env.stat()["psize"]
    finally:
        env.close()
    meta = read_meta(log_dir / "data.mdb")
    assert (meta.page_size, meta.last_page, meta.txnid) == (psize, info["last_pgno"], info["last_txnid"])
    assert meta.file_size >= (meta.last_page + 1) * meta.page_size


@pytest.mark.parametrize("leftover", [(), ("maint.lock",), ("maint.lock", "lock.mdb")])
def test_a_brand_new_directory_is_a_new_store(tmp_path: Path, leftover: tuple[str, ...]) -> None:
    """An absent or empty directory, or one holding only the lock files a creation
    that died before its first pages leaves, opens as a new, empty store."""
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    for name in leftover:
        (log_dir / name).write_bytes(b"")
    with EventLog.open(log_dir) as log:
        assert log.head().seq == 0 and log.verify().ok
        log.append("s:a", [entry(1)], actor="t")
    assert (log_dir / "generation").exists()


def test_segments_without_a_main_file_are_a_log_that_lost_it(log_dir: Path) -> None:
    """No data.mdb and no generation file, but payload segments: the main file was lost."""
    build(log_dir)
    (log_dir / "data.mdb").unlink()
    (log_dir / "generation").unlink()
    open_fails(log_dir, "data.mdb")


@pytest.mark.parametrize("damage", ["delete-file", "empty-file", "delete-dir"])
def test_a_lost_segment_is_corrupt(log_dir: Path, damage: str) -> None:
    """A segment below the head that lost its data file, or whole directory, is named."""
    build(log_dir)
    seg = log_dir / "seg-000001"
    if damage == "delete-dir":
        shutil.rmtree(seg)
        open_fails(log_dir, "seg-000001")
    else:
        data = seg / "data.mdb"
        data.unlink() if damage == "delete-file" else os.truncate(data, 0)
        open_fails(log_dir, "seg-000001/data.mdb")


def test_a_segment_whose_seqs_were_all_erased_may_be_missing(log_dir: Path) -> None:
    """A segment may be absent when every seq it held was erased (a format 1 log's
    migration never wrote it): the erased database vouches for that."""
    build(log_dir)
    with EventLog.open(log_dir) as log:
        tomb = EntriesDeleted(request_id="r1", entry_ids=("e",), erased_seqs=(4, 5, 6))
        log.erase([4, 5, 6], tomb, stream="system", actor="dpo")
    shutil.rmtree(log_dir / "seg-000001")
    with EventLog.open(log_dir) as log:
        assert [r.event is None for r in log.read(4, 6)] == [True] * 3 and log.verify().ok


def test_the_segments_vouch_for_the_head(log_dir: Path) -> None:
    """A main file older than its segments by more than the last append (here: a copy
    taken three appends ago) is refused, naming it."""
    build(log_dir, 5)
    shutil.copy(log_dir / "data.mdb", log_dir.parent / "old.mdb")
    with EventLog.open(log_dir) as log:
        for i in range(3):
            log.append("s:x", [entry(10 + i)], actor="t")
    shutil.copy(log_dir.parent / "old.mdb", log_dir / "data.mdb")
    error = open_fails(log_dir, "data.mdb")
    assert "lost commits" in str(error) and error.seq == 6


def test_a_main_file_one_append_behind_reads_as_that_append_crashed(log_dir: Path) -> None:
    """The one loss the segments cannot tell from a crash: exactly the last append.
    The log opens at the older head, verifies, and the next append takes its place."""
    build(log_dir, 5)
    shutil.copy(log_dir / "data.mdb", log_dir.parent / "old.mdb")
    with EventLog.open(log_dir) as log:
        log.append("s:x", [entry(10), entry(11)], actor="t")
    shutil.copy(log_dir.parent / "old.mdb", log_dir / "data.mdb")
    with EventLog.open(log_dir) as log:
        assert log.head().seq == 5 and log.verify().ok
        log.append("s:x", [entry(12)], actor="t")
        assert log.get(6).event == entry(12) and log.verify().ok


def test_a_fresh_main_file_beside_old_segments_is_refused(log_dir: Path) -> None:
    """Head 0 while the segments hold committed appends: the main file was replaced."""
    build(log_dir, 5)
    fresh = log_dir.parent / "fresh"
    EventLog.open(fresh).close()
    shutil.copy(fresh / "data.mdb", log_dir / "data.mdb")
    error = open_fails(log_dir, "data.mdb")
    assert "its head is seq 0" in str(error)


def test_views_environments_know_their_shape_too(tmp_path: Path) -> None:
    """The storage kit's shared environment (the projections' views) refuses a lost file."""
    path = tmp_path / "views"
    shared = open_shared_env(path, (b"a",))
    shared.write(lambda txn: txn.put(b"k", b"v", db=shared.dbs[b"a"]))
    release_shared_env(shared)
    (path / "data.mdb").unlink()
    with pytest.raises(CorruptionError, match=r"views/data\.mdb is missing"):
        open_shared_env(path, (b"a",))


def _open_and_append(log_dir: str, n: int) -> None:
    with EventLog.open(log_dir) as log:
        log.append(f"s:{n}", [entry(n)], actor="t")


def test_processes_creating_one_store_at_once_all_succeed(tmp_path: Path) -> None:
    """Four processes open the same new directory at the same moment: none of them takes
    the other's half-created file for a corrupt one."""
    log_dir = tmp_path / "log"
    code = ("import sys\nfrom tests.eventstore.test_shape import _open_and_append\n"
            "_open_and_append(sys.argv[1], int(sys.argv[2]))\n")
    root = Path(__file__).resolve().parents[2]
    procs = [subprocess.Popen([sys.executable, "-c", code, str(log_dir), str(n)], cwd=root,
                              stderr=subprocess.PIPE, text=True) for n in range(4)]
    errors = [p.communicate(timeout=60)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    with EventLog.open(log_dir) as log:
        assert log.head().seq == 4 and log.verify().ok


def test_chain_at_gives_the_stored_chain_hash(log_dir: Path) -> None:
    """chain_at(seq) is the stored chain hash: the head's is the head hash, seq 0 is the
    genesis, beyond the head is EventNotFoundError, and appends after it leave it as is."""
    build(log_dir, 4)
    with EventLog.open(log_dir) as log:
        assert log.chain_at(4).hex() == log.head().hash
        assert log.chain_at(0) == GENESIS
        at_2 = log.chain_at(2)
        log.append("s:x", [entry(9)], actor="t")
        assert log.chain_at(2) == at_2 and log.chain_at(5).hex() == log.head().hash
        with pytest.raises(EventNotFoundError):
            log.chain_at(6)
        with pytest.raises(InvalidInputError):
            log.chain_at(-1)
