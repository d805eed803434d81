"""Nothing opens an LMDB lock file: closing any descriptor of ``lock.mdb`` drops
the POSIX lock LMDB holds on it, and the next process to open the environment
then takes it exclusive and re-initialises the lock file under this process's
transactions (docs/reliability.md, "Nothing opens an LMDB lock file").

The probe does what ``lmdb.open`` does to decide it is alone: another process
tries to take byte 0 of the lock file exclusive."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import lmdb

from commands import MemoryLog
from commands.app.forgetting.scan import scan_needles
from eventstore.storage import wipe_tree

_PROBE = """
import fcntl, os, sys
for name in sys.argv[1:]:
    fd = os.open(name, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        print(name)
    except OSError:
        pass
"""


def _taken_elsewhere(lock_files: list[Path]) -> list[str]:
    """The lock files another process could take exclusive (it would re-initialise them)."""
    out = subprocess.run([sys.executable, "-c", _PROBE, *map(str, lock_files)],
                         capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_the_purge_scan_leaves_lmdb_its_locks(tmp_path: Path) -> None:
    root = tmp_path / "s"
    with MemoryLog.open(root) as mem:
        sid = mem.start_session(user_id="u")
        mem.add_message(sid, role="user", content="a message the scan looks for")
        lock_files = sorted(root.rglob("lock.mdb"))
        assert len(lock_files) >= 3  # the log, its segment, the views
        assert _taken_elsewhere(lock_files) == []
        mem.log.backend.seal()  # recent payloads are concealed until sealed (eventstore/lmdb/recent.py)
        _, scanned, found = scan_needles(root, [b"a message the scan looks for"])
        assert found and scanned > 0
        assert _taken_elsewhere(lock_files) == []


def test_wiping_a_tree_never_opens_a_lock_file(tmp_path: Path) -> None:
    """A wipe unlinks ``lock.mdb`` without opening it (it holds no content)."""
    env = lmdb.open(str(tmp_path / "env"), map_size=1 << 20)
    try:
        with env.begin(write=True) as txn:
            txn.put(b"k", b"v")
        lock_file = tmp_path / "env" / "lock.mdb"
        linked = tmp_path / "lock-link"
        linked.hardlink_to(lock_file)  # the same file, still there after the wipe
        wipe_tree(tmp_path / "env")
        assert not lock_file.exists() and linked.stat().st_size > 0
        assert _taken_elsewhere([linked]) == []
    finally:
        env.close()
