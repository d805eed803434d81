"""erase() + purge() leave no byte of an erased payload on disk."""

from __future__ import annotations

import secrets
import subprocess
import sys
import textwrap
from pathlib import Path

from eventstore import EntriesDeleted, EntryRecorded, EventLog
from eventstore.lmdb.layout import PAYLOADS

from ..conftest import scan_dir
from .tamper import get_value


def marked_log(log_dir: Path, markers: list[str], filler: int = 500) -> list[int]:
    """Append filler entries plus one entry per marker; return the marked seqs."""
    seqs = []
    with EventLog.open(log_dir) as log:
        log.append("s:fill", [EntryRecorded(entry_id=f"f{i}", kind="message", occurred_at=i,
                                            content=f"filler text number {i}")
                              for i in range(filler)], actor="t")
        for i, marker in enumerate(markers):
            event = EntryRecorded(entry_id=f"m{i}", kind="decision", occurred_at=i,
                                  content=f"secret {marker} decision")
            seqs.append(log.append("s:m", [event], actor="t").first_seq)
    return seqs


def erase(log: EventLog, seqs: list[int]) -> None:
    """Erase ``seqs`` with a tombstone."""
    tomb = EntriesDeleted(request_id="r1", entry_ids=tuple(f"m{i}" for i in range(len(seqs))),
                          erased_seqs=tuple(seqs))
    log.erase(seqs, tomb, stream="system", actor="dpo")


def test_purge_removes_every_byte_of_erased_payloads(log_dir: Path) -> None:
    """After erase + purge the scan finds no marker nor payload; the controls find them before."""
    markers = [secrets.token_hex(12) for _ in range(3)]
    seqs = marked_log(log_dir, markers)
    values = [get_value(log_dir, PAYLOADS, s) for s in seqs]
    needles = [m.encode() for m in markers] + values
    assert set(scan_dir(log_dir, needles)) == set(needles)  # positive control
    with EventLog.open(log_dir) as log:
        erase(log, seqs)
    assert set(scan_dir(log_dir, [m.encode() for m in markers])) == {
        m.encode() for m in markers
    }  # negative control: a tombstone alone leaves the bytes in freed pages
    with EventLog.open(log_dir) as log:
        report = log.purge()
        assert log.verify().ok
        assert all(log.get(s).event is None for s in seqs)
        assert log.get(1).event is not None
    assert scan_dir(log_dir, needles) == {}
    assert report.bytes_wiped >= report.bytes_after > 0
    assert sorted(p.name for p in log_dir.iterdir()) == [
        "data.mdb", "generation", "lock.mdb", "maint.lock", "seg-000000"
    ]
    assert {p.name for p in (log_dir / "seg-000000").iterdir()} <= {"data.mdb", "lock.mdb"}


def test_files_are_private(log_dir: Path) -> None:
    """The log's directories are 0700 and its files 0600, also after a purge."""
    seqs = marked_log(log_dir, ["x"], filler=1)
    with EventLog.open(log_dir) as log:
        erase(log, seqs)
        log.purge()
        assert log.get(seqs[0]).event is None  # reopens the segment after the purge
    assert log_dir.stat().st_mode & 0o777 == 0o700
    for path in log_dir.rglob("*"):
        mode = 0o700 if path.is_dir() else 0o600
        assert path.stat().st_mode & 0o777 == mode, path.name


_HOLDER = textwrap.dedent("""
    import sys
    from eventstore import EventLog, EntryRecorded
    log = EventLog.open(sys.argv[1])
    seqs = [int(s) for s in sys.argv[2].split(",")]
    assert all(log.get(s).event is not None for s in seqs)
    print("ready", flush=True)
    sys.stdin.readline()  # the parent purges now
    assert all(log.get(s).event is None for s in seqs), "erased payload still visible"
    result = log.append("s:after", [EntryRecorded(entry_id="late", kind="message",
                                                  content="after purge", occurred_at=1)],
                        actor="holder")
    assert log.verify().ok
    print("seq", result.first_seq, "generation", log.head().generation, flush=True)
    with open(f"/proc/self/maps") as maps:
        print("deleted-maps", sum("(deleted)" in line for line in maps), flush=True)
    log.close()
""")


def test_other_process_reopens_after_purge(log_dir: Path) -> None:
    """A process holding the log open keeps working across a purge and maps no old file."""
    markers = [secrets.token_hex(12) for _ in range(2)]
    seqs = marked_log(log_dir, markers)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(log_dir), ",".join(map(str, seqs))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "ready"
    with EventLog.open(log_dir) as log:
        erase(log, seqs)
        log.purge()
        holder.stdin.write("go\n")
        holder.stdin.flush()
        out = holder.stdout.read()
        assert holder.wait(timeout=30) == 0, out
        assert log.get(int(out.split()[1])).event is not None
        assert log.verify().ok
    assert "generation 1" in out and "deleted-maps 0" in out
    assert scan_dir(log_dir, [m.encode() for m in markers]) == {}
