"""The data directory is ours alone: links planted in it are never followed, a
directory others can write to is refused, and purges run beside writers are
verified truly."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from commands import MemoryLog
from eventstore import UnsafeStoreError
from eventstore.storage import safety


def _store(root: Path) -> str:
    with MemoryLog.open(root) as mem:
        sid = mem.start_session(user_id="u")
        mid = mem.add_message(sid, role="user", content="a message long enough to be scanned for, 0123")
        mem.search("message")
    return mid


@pytest.mark.parametrize("planted", ["log/maint.lock", "log/generation", "proj/search/relinked",
                                     "proj/search/maint.lock", "proj/views/maint.lock", "log/lock.mdb"])
def test_a_planted_link_is_refused_and_its_target_untouched(tmp_path: Path, planted: str) -> None:
    """A link in place of one of memlog's files is refused (E_UNSAFE_STORE); the outside file is intact."""
    root = tmp_path / "s"
    mid = _store(root)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"precious outside data\n")
    target = root / planted
    target.unlink()
    target.symlink_to(outside)
    with pytest.raises(UnsafeStoreError), MemoryLog.open(root) as mem:
        mem.delete(ids=[mid], reason="r", requested_by="dpo")
    assert outside.read_bytes() == b"precious outside data\n"


def test_a_directory_others_can_write_to_is_refused(tmp_path: Path) -> None:
    """A world- or group-writable data directory is refused with the command that fixes it."""
    root = tmp_path / "open"
    root.mkdir()
    for mode in (0o770, 0o777):
        root.chmod(mode)
        with pytest.raises(UnsafeStoreError, match="chmod 700"):
            MemoryLog.open(root)
    assert list(root.iterdir()) == []
    root.chmod(0o1777)  # a shared directory, like /tmp: never advise to chmod it
    with pytest.raises(UnsafeStoreError, match=r"mktemp -d .*open/memlog\.XXXXXXXX") as caught:
        MemoryLog.open(root)
    assert "chmod" not in str(caught.value) and list(root.iterdir()) == []
    root.chmod(0o700)


@pytest.mark.parametrize(("mode", "fix"), [(0o1777, "mktemp -d"), (0o755, "a directory you own")])
def test_a_directory_of_another_user_gets_a_fix_that_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           mode: int, fix: str) -> None:
    """Another user's /tmp: a private directory inside it; another user's home: one's own."""
    root = tmp_path / "theirs"
    root.mkdir()
    root.chmod(mode)
    monkeypatch.setattr(safety.os, "geteuid", lambda: os.getuid() + 1)
    with pytest.raises(UnsafeStoreError, match="belongs to another user") as caught:
        MemoryLog.open(root)
    assert fix in str(caught.value) and "chmod" not in str(caught.value)
    monkeypatch.undo()
    root.chmod(0o700)


def test_a_purge_beside_a_writer_is_verified(tmp_path: Path) -> None:
    """Another process appends throughout the purge: the purge is still verified."""
    root = tmp_path / "s"
    with MemoryLog.open(root) as mem:
        sid = mem.start_session(user_id="u", session_id="busy")
        ids = [mem.add_message(sid, role="user", content=f"message {i} that will go away, padded to 32+")
               for i in range(20)]
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from commands import MemoryLog
        deadline = time.monotonic() + 10
        with MemoryLog.open({str(root)!r}) as mem:
            while time.monotonic() < deadline:
                mem.add_message("busy", role="user", content="a writer keeps writing")
    """)], env={**os.environ})
    try:
        with MemoryLog.open(root) as mem:
            reports = [mem.delete(ids=[i], reason="r", requested_by="dpo") for i in ids[:5]]
    finally:
        writer.kill()
        writer.wait()
    assert all(r.verified for r in reports), [r.checks for r in reports]
