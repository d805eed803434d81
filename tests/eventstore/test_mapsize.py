"""The LMDB map grows by itself, also when another process grew it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from eventstore import EntryRecorded, EventLog

BIG = "lorem ipsum dolor " * 50_000  # ~900 KB, under the 1 MiB default limit


def big(n: int) -> EntryRecorded:
    """An entry of about 900 KB."""
    return EntryRecorded(entry_id=f"b{n}", kind="message", content=BIG, occurred_at=n)


def test_map_grows_past_its_initial_size(log_dir: Path) -> None:
    """Appending ~90 MB into a 64 MiB map succeeds and stays readable."""
    with EventLog.open(log_dir) as log:
        for start in range(0, 100, 10):
            log.append("s:big", [big(n) for n in range(start, start + 10)], actor="t")
        assert log.head().seq == 100
        assert log.verify().ok


_GROWER = textwrap.dedent("""
    import sys
    from eventstore import EntryRecorded, EventLog
    with EventLog.open(sys.argv[1]) as log:
        for start in range(0, 100, 10):
            log.append("s:other", [EntryRecorded(entry_id=f"o{n}", kind="message",
                                                 content="x" * 900_000, occurred_at=n)
                                   for n in range(start, start + 10)], actor="grower")
""")


def test_adopts_a_map_grown_by_another_process(log_dir: Path) -> None:
    """A process whose map was grown by another one keeps appending and reading."""
    with EventLog.open(log_dir) as log:
        log.append("s:mine", [big(0)], actor="t")
        subprocess.run([sys.executable, "-c", _GROWER, str(log_dir)], check=True)
        log.append("s:mine", [big(1)], actor="t")
        assert log.head().seq == 102
        assert sum(1 for _ in log.read()) == 102
        assert log.verify().ok
