"""The corruption matrix of the log's files: every kind of damage to every kind
of file under a log directory ends cleanly.

A small log (three streams, two erased seqs, segments of three seqs) is built
once with the public API. Each case copies it, damages one file (bytes flipped
in the meta page, a middle page or the last page; truncated to nothing, to half
or to one page; deleted) and runs this file as a script in a real process:
open the log, verify, read everything, append one event. A SIGBUS or any other
signal shows as a failed case, never as a dead test run. Each case must end in
one of three ways:

- a clean :class:`MemlogError` whose message names the damaged file, or that
  names a seq;
- success: verify is ok, every event reads back exactly as it was written, and
  the append works (a lost lock file is harmless); a verify after the append
  is ok or reports what the damage made the append break;
- verify reports the damage.

Never silently wrong (an event served that differs from the one written), never
death by a signal, never an exception memlog did not raise on purpose.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
import pytest

SPAN = 3
PAGE = 4096
ACTOR = "dpo-officer"  # the tombstone's actor: in its header, nowhere else
# Bytes of one record, flipped wherever they occur (live or in freed pages):
# the header of the tombstone (seq 13), the payload of seq 5.
NEEDLES = {"data.mdb": ACTOR.encode(), "seg-000001/data.mdb": b"entry number 4 of"}


def _entry(i: int) -> Any:
    from eventstore import EntryRecorded

    return EntryRecorded(entry_id=f"e{i}", kind="message", occurred_at=1_700_000_000_000_000 + i,
                         content=f"entry number {i} of the matrix", session_id=f"s{i % 3}")


def _build(log_dir: Path) -> bytes:
    """Write the log; return the msgpack of every record as read back."""
    from eventstore import EntriesDeleted, EventLog, LogSettings, RecordedEvent

    with EventLog.open(log_dir, LogSettings(segment_span=SPAN)) as log:
        for i in range(12):
            log.append(f"session:s{i % 3}", [_entry(i)], actor="matrix")
        tomb = EntriesDeleted(request_id="r1", entry_ids=("e2", "e7"), erased_seqs=(3, 8))
        log.erase([3, 8], tomb, stream="system", actor=ACTOR)
        log.append("session:s1", [_entry(20), _entry(21)], actor="matrix")
        records: list[RecordedEvent] = list(log.read())
        assert log.verify().ok and [r.seq for r in records if r.event is None] == [3, 8]
    return msgspec.msgpack.encode(records)


# -- damage ---------------------------------------------------------------------

def _flip(path: Path, where: str) -> None:
    data = bytearray(path.read_bytes())
    pages = len(data) // PAGE
    offset = {
        "meta": 16,  # the magic of meta page 0
        "meta-last-page": _current_meta(data) + 136,  # the low byte of the last page number
        # Nodes fill a page from its end: these bytes are keys and values (live or stale).
        "middle": (pages // 2 + 1) * PAGE - 20,
        "last": pages * PAGE - 20,
        "last-header": (pages - 1) * PAGE + 10,  # the page's flags (branch, leaf, overflow...)
    }[where]
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def _flip_record(path: Path, needle: bytes) -> None:
    data = bytearray(path.read_bytes())
    at = data.find(needle)
    assert at >= 0, f"{needle!r} is not in {path}"
    while at >= 0:
        data[at + 2] ^= 0x01
        at = data.find(needle, at + 1)
    path.write_bytes(bytes(data))


def _current_meta(data: bytearray) -> int:
    txnids = [int.from_bytes(data[at + 144 : at + 152], "little") for at in (0, PAGE)]
    return 0 if txnids[0] > txnids[1] else PAGE


def _truncate(path: Path, size: str) -> None:
    length = {"zero": 0, "half": path.stat().st_size // 2, "one-page": PAGE}[size]
    os.truncate(path, min(length, path.stat().st_size))


DATA_FILES = ["data.mdb", "seg-000001/data.mdb"]
OTHER_FILES = ["lock.mdb", "seg-000001/lock.mdb", "generation", "maint.lock"]
Damage = Callable[[Path], None]


def _cases() -> list[tuple[str, str]]:
    cases = []
    for name in DATA_FILES:
        cases += [(name, f"flip:{w}") for w in ("meta", "meta-last-page", "middle", "last", "last-header")]
        cases.append((name, "flip:record"))
        cases += [(name, f"truncate:{s}") for s in ("zero", "half", "one-page")]
        cases.append((name, "delete"))
    for name in OTHER_FILES:
        cases += [(name, "flip:first"), (name, "truncate:zero"), (name, "delete")]
        if name.endswith("lock.mdb"):
            cases += [(name, "flip:middle"), (name, "truncate:half")]
    return cases


def _damage(case: Path, name: str, action: str) -> None:
    path = case / name
    kind, _, arg = action.partition(":")
    if kind == "delete":
        path.unlink()
    elif kind == "truncate":
        _truncate(path, arg)
    elif arg == "record":
        _flip_record(path, NEEDLES[name])
    elif name in DATA_FILES:
        _flip(path, arg)
    else:
        data = bytearray(path.read_bytes())
        if data:  # maint.lock is empty: nothing to flip
            data[0 if arg == "first" else len(data) // 2] ^= 0xFF
            path.write_bytes(bytes(data))


# -- the child ------------------------------------------------------------------

def _child(log_dir: str, expected_file: str) -> None:
    """Open, verify, read all, append; print one JSON line describing the outcome."""
    from eventstore import EventLog, MemlogError, RecordedEvent

    expected = msgspec.msgpack.decode(Path(expected_file).read_bytes(), type=list[RecordedEvent])
    out: dict[str, Any] = {}
    try:
        with EventLog.open(log_dir) as log:
            result = log.verify()
            out["verify"] = [result.ok, result.first_bad_seq, result.problem]
            if result.ok:
                got = list(log.read())
                out["reads_match"] = got == expected
                seq = log.append("session:new", [_entry(99)], actor="matrix").first_seq
                out["appended"] = log.get(seq).event == _entry(99)
                after = log.verify()
                out["verify_after"] = [after.ok, after.first_bad_seq, after.problem]
    except MemlogError as exc:
        out["error"] = [type(exc).__name__, exc.code, str(exc), getattr(exc, "seq", None)]
    except Exception as exc:  # a bug: memlog did not raise it on purpose
        out["unexpected"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(out))


def _case_dir(root: Path, name: str, action: str) -> Path:
    return root / f"{name.replace('/', '_')}-{action.replace(':', '_')}"


def _run(base: Path, expected: Path, root: Path, name: str, action: str) -> tuple[int, str, str]:
    case = _case_dir(root, name, action)
    shutil.copytree(base, case)
    _damage(case, name, action)
    proc = subprocess.run([sys.executable, __file__, str(case), str(expected)],
                          capture_output=True, text=True, timeout=60, check=False)
    return proc.returncode, proc.stdout, proc.stderr


Outcomes = tuple[Path, dict[tuple[str, str], tuple[int, str, str]]]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Outcomes:
    """Every case run once, in parallel processes."""
    root = tmp_path_factory.mktemp("matrix")
    base = root / "base"
    expected = root / "expected.msgpack"
    expected.write_bytes(_build(base))
    cases = _cases()
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        results = list(pool.map(lambda c: _run(base, expected, root, *c), cases))
    return root, dict(zip(cases, results, strict=True))


@pytest.mark.parametrize(("name", "action"), _cases())
def test_damage_ends_cleanly(outcomes: Outcomes, name: str, action: str) -> None:
    """The damaged log gives a clean error naming the file or a seq, works as written,
    or fails verify; never a signal, never wrong events served."""
    root, results = outcomes
    code, stdout, stderr = results[(name, action)]
    assert code == 0, f"the process ended with {code} (a negative code is a signal):\n{stderr}"
    out = json.loads(stdout)
    assert "unexpected" not in out, out["unexpected"]
    if "error" in out:
        kind, _, message, seq = out["error"]
        named = str(_case_dir(root, name, action) / name) in message
        assert named or seq is not None, f"{kind} names neither the file nor a seq: {message}"
        return
    ok, first_bad, problem = out["verify"]
    if not ok:
        assert first_bad is not None and problem
        return
    assert out["reads_match"], "verify passed but the events read differ from those written"
    assert out["appended"], "the append after the damage did not read back"
    # A damaged page header may surface only when a write changes the page;
    # then verify reports what the write broke.
    ok, first_bad, problem = out["verify_after"]
    assert ok or (first_bad is not None and problem)


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
