"""The generation file is held open and read with one pread before every
operation; writers overwrite it in place, so a holder sees every change,
whichever process made it, and a shorter number leaves no digit behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from eventstore import RetiredError
from eventstore.storage import open_shared_env, release_shared_env
from eventstore.storage.env import RETIRED
from eventstore.storage.files import INT_WIDTH, overwrite_int_file, pread_int, read_int_file, write_int_file


def test_an_open_file_sees_each_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "generation"
    overwrite_int_file(path, 0)  # missing: created
    fd = os.open(path, os.O_RDONLY)
    try:
        for value in (7, 123456, RETIRED):
            overwrite_int_file(path, value)
            assert pread_int(fd) == value == read_int_file(path)
        assert path.stat().st_size == INT_WIDTH
    finally:
        os.close(fd)


def _in_another_process(path: Path, value: int) -> None:
    code = ("import sys; from pathlib import Path; from eventstore.storage.files import overwrite_int_file; "
            "overwrite_int_file(Path(sys.argv[1]), int(sys.argv[2]))")
    subprocess.run([sys.executable, "-c", code, str(path), str(value)], check=True, timeout=60)


def test_another_process_bump_and_retirement_reach_an_open_environment(tmp_path: Path) -> None:
    shared = open_shared_env(tmp_path / "env", (b"d",), sync=False)
    try:
        shared.write(lambda txn: txn.put(b"k", b"v", db=shared.dbs[b"d"]))
        before = shared.env
        _in_another_process(tmp_path / "env" / "generation", 5)  # as another process's purge
        assert shared.read(lambda txn: bytes(txn.get(b"k", db=shared.dbs[b"d"]))) == b"v"
        assert shared.generation == 5 and shared.env is not before  # reopened
        _in_another_process(tmp_path / "env" / "generation", RETIRED)  # as a rebuild's retirement
        with pytest.raises(RetiredError):
            shared.read(lambda txn: None)
    finally:
        release_shared_env(shared)


@pytest.mark.parametrize("how", ["replaced", "deleted"])
def test_a_held_file_that_was_unlinked_is_let_go(tmp_path: Path, how: str) -> None:
    """A generation file replaced by a rename (an older writer) or deleted and
    written again: the holder notices the unlink and reads the file at the path."""
    shared = open_shared_env(tmp_path / "env", (b"d",), sync=False)
    try:
        shared.read(lambda txn: None)
        path = tmp_path / "env" / "generation"
        if how == "replaced":
            write_int_file(path, 3)
        else:
            path.unlink()
            shared.read(lambda txn: None)  # missing: reads as 0, as before
            overwrite_int_file(path, 3)
        shared.read(lambda txn: None)
        assert shared.generation == 3
        overwrite_int_file(path, 4)  # held again: an in-place bump is seen
        shared.read(lambda txn: None)
        assert shared.generation == 4
    finally:
        release_shared_env(shared)
