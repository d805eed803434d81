"""Recent payloads under SIGKILL: a writer killed between the segments' commit of a
seal and the main commit that empties ``recent`` loses no acknowledged append,
the log verifies, and a purge still erases sealed and unsealed payloads alike
(no byte of their content anywhere under the data directory).

The writer is this very module run as a script (see ``_writer``): a fresh
interpreter appends one event at a time (the recent path) and, after each
append returns, durably records its event id in a side file. Its failpoints
(``MEMLOG_CRASH_AT`` with ``MEMLOG_CRASH_KILL``) kill it with SIGKILL at the
N-th seal, between the two commits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from eventstore import EntriesDeleted, EntryRecorded, EventLog
from eventstore.lmdb.layout import META, RECENT
from eventstore.lmdb.recent import read_sealed

from ..conftest import scan_dir

SEAL_EVERY = 8  # the writer seals ``recent`` this often (the default is far larger)
SPAN = 16  # small segments, so that seals cross segment boundaries


def _content(trial: int, k: int) -> str:
    return f"recent-crash secret t{trial} a{k} {'x' * (k % 7)}"


def _writer(log_dir: str, side_file: str, trial: int) -> None:
    """Append one event per call forever; after each returns, fsync its id to the side file."""
    import eventstore.lmdb.write as write
    from eventstore import LogSettings

    write.SEAL_AT = SEAL_EVERY
    with EventLog.open(log_dir, LogSettings(segment_span=SPAN)) as log, \
            open(side_file, "a", encoding="ascii") as side:
        k = 0
        while True:
            event = EntryRecorded(entry_id=f"t{trial}-a{k}", kind="message", occurred_at=k,
                                  content=_content(trial, k))
            log.append("s:recent", [event], actor="w", event_ids=[f"t{trial}.{k}"])
            side.write(f"{k}\n")
            side.flush()
            os.fsync(side.fileno())
            k += 1


def _run_until_killed(log_dir: Path, side: Path, trial: int, seal: int) -> list[int]:
    env = {**os.environ, "MEMLOG_CRASH_AT": str(seal), "MEMLOG_CRASH_KILL": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.eventstore.test_append_recent_crash", str(log_dir), str(side),
         str(trial)], env=env, capture_output=True, timeout=120, check=False,
        cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode(errors="replace")
    lines = side.read_text(encoding="ascii").split("\n")[:-1]
    return [int(line) for line in lines]


def _sealed(log: EventLog) -> int | None:
    shared = log.backend.shared  # type: ignore[attr-defined]
    return shared.read(lambda txn: read_sealed(txn, shared.dbs[META]))  # type: ignore[no-any-return]


def _keys(log: EventLog, seqs: list[int]) -> list[bytes]:
    """The keys concealing the recent payloads of ``seqs`` (their segments' keys)."""
    segments = log.backend.shared.segments  # type: ignore[attr-defined]
    keys = [segments.key(segments.index_of(s)) for s in seqs]
    assert all(keys)
    return keys  # type: ignore[return-value]


def _recent_count(log: EventLog) -> int:
    shared = log.backend.shared  # type: ignore[attr-defined]
    return shared.read(lambda txn: txn.stat(shared.dbs[RECENT])["entries"])  # type: ignore[no-any-return]


@pytest.mark.parametrize("seal", [1, 2, 3])
def test_kill_between_seal_commits_loses_nothing_and_purge_erases_all(tmp_path: Path,
                                                                      seal: int) -> None:
    """SIGKILL at the ``seal``-th seal, after the segments committed the sealed payloads
    and before ``recent`` was emptied: every acknowledged append is there, the log
    verifies, and erasing one sealed and one unsealed payload leaves no byte of either."""
    log_dir = tmp_path / "log"
    acked = _run_until_killed(log_dir, tmp_path / "side.txt", 0, seal)
    assert len(acked) >= seal * SEAL_EVERY - 1
    from eventstore import LogSettings

    with EventLog.open(log_dir, LogSettings(segment_span=SPAN)) as log:
        for k in acked:
            seq = log.seq_of(f"t0.{k}")
            assert seq is not None, f"lost acknowledged append a{k}"
            event = log.get(seq).event
            assert isinstance(event, EntryRecorded) and event.content == _content(0, k)
        assert log.verify().ok
        sealed, head = _sealed(log), log.head().seq
        # The kill left the seal undone: the payloads are still recent, and copies of
        # them wait in the segments after ``sealed``.
        assert sealed is not None and sealed < head and _recent_count(log) == head - sealed
        victims = [1 + (sealed - 1) // 2 if sealed else 1, head]  # one sealed (if any), one recent
        secrets_ = [log.get(s).event.content.encode() for s in victims]  # type: ignore[union-attr]
        secrets_ += _keys(log, victims)  # the purge destroys them with the segments' old files
        log.erase(victims, EntriesDeleted(request_id="r", entry_ids=("e",), erased_seqs=tuple(victims)),
                  stream="system", actor="dpo")
        # Appends go on after the erase (the recent path again), then the purge.
        log.append("s:recent", [EntryRecorded(entry_id="after", kind="message", occurred_at=0,
                                              content="after the erase")], actor="w")
        log.purge()
        assert scan_dir(log_dir, secrets_) == {}
        assert log.verify().ok
        for s in victims:
            assert log.get(s).event is None
        kept = [k for k in acked if log.seq_of(f"t0.{k}") not in victims]
        for k in kept:
            event = log.get(log.seq_of(f"t0.{k}") or 0).event
            assert isinstance(event, EntryRecorded) and event.content == _content(0, k)
    assert scan_dir(log_dir, secrets_) == {}
    with EventLog.open(log_dir, LogSettings(segment_span=SPAN)) as log:
        assert log.verify().ok and _sealed(log) is None  # the close sealed everything


def test_purge_erases_recent_payloads_without_a_crash(tmp_path: Path) -> None:
    """An erased payload that never left ``recent`` is unreadable after the purge, and
    its plaintext was never stored under the data directory at all."""
    log_dir = tmp_path / "log"
    secret = b"never-in-the-clear-" + os.urandom(8).hex().encode()
    with EventLog.open(log_dir) as log:
        first = log.append("s", [EntryRecorded(entry_id="a", kind="message", occurred_at=0,
                                               content=secret.decode())], actor="w")
        log.append("s", [EntryRecorded(entry_id="b", kind="message", occurred_at=1,
                                       content="kept")], actor="w")
        assert scan_dir(log_dir, [secret]) == {}  # concealed in ``recent``
        key = _keys(log, [first.first_seq])[0]
        assert log.get(first.first_seq).event is not None
        log.erase([first.first_seq], EntriesDeleted(request_id="r", entry_ids=("a",),
                                                    erased_seqs=(first.first_seq,)),
                  stream="system", actor="dpo")
        log.purge()
        assert log.verify().ok and log.get(first.first_seq).event is None
        assert log.get(first.first_seq + 1).event is not None
    # Neither the content nor the key that concealed it in the main environment is left.
    assert scan_dir(log_dir, [secret, key]) == {}


if __name__ == "__main__":
    _writer(sys.argv[1], sys.argv[2], int(sys.argv[3]))


_HOLDER = """
import sys
from eventstore import EventLog
from tests.eventstore.contract import entry
with EventLog.open(sys.argv[1]) as log:
    for line in sys.stdin:
        log.append("s:a", [entry(int(line))], actor="t")
        print("ok", flush=True)
"""


def test_a_failed_purge_leaves_no_process_with_a_dropped_key(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A purge drops a segment's key only after moving the generation on, so
    another process that cached the key reopens before its next append, even
    when the purge's rewrite then fails: every acknowledged payload reads back
    and a later purge passes."""
    import eventstore.storage.compact as compact

    from .contract import entry

    path = tmp_path / "log"
    root = Path(__file__).resolve().parents[2]
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)], cwd=root, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert holder.stdin is not None and holder.stdout is not None

    def holder_appends(n: int) -> None:
        holder.stdin.write(f"{n}\n")  # type: ignore[union-attr]
        holder.stdin.flush()  # type: ignore[union-attr]
        assert holder.stdout.readline().strip() == "ok"  # type: ignore[union-attr]

    try:
        with EventLog.open(path) as q:
            q.append("s:a", [entry(1)], actor="t")
            holder_appends(2)  # the holder caches segment 0's key
            q.erase([1], EntriesDeleted(request_id="r", entry_ids=("e1",), erased_seqs=(1,)),
                    stream="system", actor="dpo")

            def no_space(*_: object) -> None:
                raise OSError(28, "No space left on device")

            monkeypatch.setattr(compact, "_compact_copy", no_space)
            with pytest.raises(OSError):
                q.purge()
            monkeypatch.undo()
            holder_appends(4)
            q.append("s:a", [entry(5)], actor="t")
            holder_appends(6)
        holder.stdin.close()
        assert holder.wait(timeout=30) == 0
    finally:
        holder.kill()
    with EventLog.open(path) as fresh:
        assert [r.event is not None for r in fresh.read(1)] == [False, True, True, True, True, True]
        assert fresh.purge().files_rewritten and fresh.verify().ok
