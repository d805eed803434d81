"""A purge that dies mid-way while another process keeps the store open and
writes: that process must leave the old files (it reopens at the new
generation) and none of its acknowledged appends may be lost."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from commands import MemoryLog

pytestmark = pytest.mark.slow

WRITER = """
import sys, time
from commands import MemoryLog
acked = open(sys.argv[2], "a")
with MemoryLog.open(sys.argv[1]) as mem:
    mem.add_message("busy", role="user", content="warm-up: the segment is open in this process")
    open(sys.argv[3], "w").write("ready")
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:
        entry = mem.add_message("busy", role="user", content="a writer keeps writing")
        acked.write(entry + "\\n"); acked.flush()
        time.sleep(0.01)
"""


@pytest.mark.parametrize("step", ["compact: remove the old lock file", "log: clear the dirty segments",
                                  "compact: zero-fill the old file"])
def test_no_acknowledged_append_is_lost(tmp_path: Path, step: str) -> None:
    """Crash the purge before ``step`` while a writer appends: every acknowledged append survives."""
    root, acked, ready = tmp_path / "s", tmp_path / "acked", tmp_path / "ready"
    with MemoryLog.open(root) as mem:
        sid = mem.start_session(user_id="u", session_id="busy")
        target = mem.add_message(sid, role="user", content="a message that will go, padded to 32+ bytes")
        mem.search("message")
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER), str(root), str(acked),
                               str(ready)])
    try:
        while not ready.exists():
            time.sleep(0.01)
        trace = tmp_path / "trace"
        subprocess.run([sys.executable, "-m", "commands", "--dir", str(root), "delete", "--id", target,
                        "--reason", "r", "--requested-by", "dpo", "--yes"],
                       env={**os.environ, "MEMLOG_CRASH_TRACE": str(trace)}, capture_output=True,
                       check=False, timeout=60)
        assert writer.wait(timeout=60) == 0
    finally:
        writer.kill()
    # Again, crashing at the step: a fresh store each time keeps the cases apart.
    root2, acked2, ready2 = tmp_path / "s2", tmp_path / "acked2", tmp_path / "ready2"
    with MemoryLog.open(root2) as mem:
        sid = mem.start_session(user_id="u", session_id="busy")
        target = mem.add_message(sid, role="user", content="a message that will go, padded to 32+ bytes")
        mem.search("message")
    at = next(i for i, line in enumerate(trace.read_text().splitlines(), 1) if line.split(" ", 1)[1] == step)
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER), str(root2), str(acked2),
                               str(ready2)])
    try:
        while not ready2.exists():
            time.sleep(0.01)
        crashed = subprocess.run([sys.executable, "-m", "commands", "--dir", str(root2), "delete", "--id",
                                  target, "--reason", "r", "--requested-by", "dpo", "--yes"],
                                 env={**os.environ, "MEMLOG_CRASH_AT": str(at)}, capture_output=True,
                                 check=False, timeout=60)
        assert crashed.returncode == 86
        assert writer.wait(timeout=60) == 0
    finally:
        writer.kill()
    ids = acked2.read_text().split()
    assert len(ids) > 10
    with MemoryLog.open(root2) as mem:
        assert mem.verify().ok
        assert [mem.show(i).state for i in ids] == ["live"] * len(ids)
        assert mem.show(target).state == "deleted"
