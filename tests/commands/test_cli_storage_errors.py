"""Storage problems land in their categories with stable codes, never exit 70:
a --dir that is not a directory, a directory or store that cannot be written,
a full disk.

Root bypasses permission bits, so "not writable" is tested for real on a
read-only bind mount and simulated with a patched ``os.access``; a full disk is
tested for real on a 1 MiB tmpfs and simulated with a patched ``ENOSPC``. The
real mounts are skipped where this machine does not allow ``mount``.
"""

from __future__ import annotations

import errno
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from commands import MemoryLog
from commands.app.store import validate
from commands.cli import oserrors
from eventstore import (
    E_INTERNAL,
    E_NO_STORE,
    E_NOT_WRITABLE,
    E_STORAGE_FULL,
    E_STORAGE_IO,
    EventLog,
    StorageError,
    StorageFullError,
)

from .conftest import Run, head_of


def _one_error(err: str, code: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and lines[0].endswith(f"[{code}]"), err
    assert "Traceback" not in err
    return lines[0]


def _mount(*args: str) -> bool:
    if shutil.which("mount") is None:
        return False
    return subprocess.run(["mount", *args], capture_output=True, check=False).returncode == 0


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


@pytest.mark.parametrize("target", ["file", "/dev/null", "file/sub"])
def test_dir_that_is_not_a_directory(run: Run, tmp_path: Path, target: str) -> None:
    """A --dir that is a file: writes E_NOT_WRITABLE (exit 5), reads E_NO_STORE (exit 3)."""
    (tmp_path / "file").write_text("not a store")
    path = target if target.startswith("/") else str(tmp_path / target)
    for args, code, exit_code in ((("init",), E_NOT_WRITABLE, 5),
                                  (("session", "start"), E_NOT_WRITABLE, 5),
                                  (("stats",), E_NO_STORE, 3), (("audit", "verify"), E_NO_STORE, 3),
                                  (("search", "x"), E_NO_STORE, 3)):
        got, _, err = run("--dir", path, *args)
        line = _one_error(err, code)
        assert got == exit_code, err
        assert code != E_NOT_WRITABLE or "not a directory" in line
    assert (tmp_path / "file").read_text() == "not a store"


def test_directory_without_write_permission(run: Run, store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A data directory os.access would call unwritable: writes are refused up front, naming it."""
    got, _, _ = run("init")
    head = head_of(store)
    monkeypatch.setattr(validate, "writable", lambda _path: False)
    got, _, err = run("session", "start")
    assert got == 5 and repr(str(store)) in _one_error(err, E_NOT_WRITABLE)
    got, _, err = run("--dir", str(store / "new" / "deeper"), "init")
    assert got == 5 and repr(str(store)) in _one_error(err, E_NOT_WRITABLE)
    assert not (store / "new").exists() and head_of(store) == head


@pytest.mark.parametrize(("exc", "code"), [
    (OSError(errno.EROFS, "Read-only file system", "/data/log/maint.lock"), E_NOT_WRITABLE),
    (PermissionError(errno.EACCES, "Permission denied", "/data/log/data.mdb"), E_NOT_WRITABLE),
    (IsADirectoryError(errno.EISDIR, "Is a directory", "/data/views"), E_NOT_WRITABLE),
    (NotADirectoryError(errno.ENOTDIR, "Not a directory", "/data/log"), E_NOT_WRITABLE),
    (OSError(errno.ENOSPC, "No space left on device"), E_STORAGE_FULL),
    (OSError(errno.EIO, "Input/output error", "/data/log/data.mdb"), E_STORAGE_IO),
])
def test_os_errors_at_the_boundary(run: Run, monkeypatch: pytest.MonkeyPatch, exc: OSError,
                                   code: str) -> None:
    """An OSError from below becomes its category (exit 5), naming the path, not exit 70."""
    def fail(*_a: object, **_k: object) -> str:
        raise exc

    monkeypatch.setattr(MemoryLog, "start_session", fail)
    got, _, err = run("session", "start")
    line = _one_error(err, code)
    assert got == 5
    assert exc.filename is None or repr(exc.filename) in line


def test_storage_error_from_lmdb_names_its_category() -> None:
    """A StorageError the storage kit made from an LMDB 'Read-only file system' is E_NOT_WRITABLE."""
    class FakeLmdbError(Exception):
        pass

    try:
        try:
            raise FakeLmdbError("/data/log: Read-only file system")
        except FakeLmdbError as inner:
            raise StorageError(f"cannot open the LMDB environment: Error: {inner}") from None
    except StorageError as outer:
        precise = oserrors.storage_cause(outer)
    assert precise is not None and precise.code == E_NOT_WRITABLE
    assert oserrors.storage_cause(StorageFullError("full")) is None


def test_a_bug_is_still_exit_70(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception memlog did not raise on purpose stays an internal error."""
    def fail(*_a: object, **_k: object) -> str:
        raise RuntimeError("secret content")

    monkeypatch.setattr(MemoryLog, "start_session", fail)
    got, _, err = run("session", "start")
    assert got == 70 and "secret" not in _one_error(err, E_INTERNAL)


@pytest.fixture
def readonly_store(tmp_path: Path) -> Iterator[Path]:
    """A store seen through a read-only bind mount (skipped where mount is not allowed)."""
    source, view = tmp_path / "source", tmp_path / "view"
    with MemoryLog.open(source) as mem:
        mem.start_session()
    view.mkdir()
    if not _mount("--bind", str(source), str(view)):
        pytest.skip("mount --bind is not permitted here")
    try:
        if not _mount("-o", "remount,ro,bind", str(view)):
            pytest.skip("a read-only remount is not permitted here")
        yield view
    finally:
        _umount(view)


def test_read_only_store_for_real(run: Run, readonly_store: Path) -> None:
    """On a read-only file system writes and reads say E_NOT_WRITABLE and name the path."""
    for args in (("session", "start"), ("init",)):
        got, _, err = run("--dir", str(readonly_store), *args)
        assert got == 5 and repr(str(readonly_store)) in _one_error(err, E_NOT_WRITABLE)
    for args in (("stats",), ("search", "x"), ("audit", "verify")):
        got, _, err = run("--dir", str(readonly_store), *args)
        assert got == 5 and str(readonly_store) in _one_error(err, E_NOT_WRITABLE)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs (skipped where mount is not allowed)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if not _mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)):
        pytest.skip("mounting a tmpfs is not permitted here")
    try:
        yield disk
    finally:
        _umount(disk)


def test_full_disk_for_real(run: Run, tiny_disk: Path) -> None:
    """Filling a 1 MiB tmpfs: the write that does not fit and a replay both say
    E_STORAGE_FULL (exit 5); the log still verifies."""
    root = tiny_disk / "s"
    with MemoryLog.open(root, redact_on_ingest=False) as mem:
        sid = mem.start_session()
        filler = " ".join(f"word{i:05d}" for i in range(2000))
        with pytest.raises(StorageFullError):
            for _ in range(200):
                mem.add_message(sid, role="user", content=filler)
    got, _, err = run("--dir", str(root), "add", "message", sid, "--role", "user", "--content", filler)
    assert got == 5
    _one_error(err, E_STORAGE_FULL)
    got, _, err = run("--dir", str(root), "replay")
    assert got == 5
    _one_error(err, E_STORAGE_FULL)
    with EventLog.open(root / "log") as log:
        assert log.verify().ok
