"""A redaction and a deletion of the same entry, racing in two processes.

Each decides on what it read and appends to the system stream expecting the
version it saw before that read; one that lost the race decides again. So a
redaction never brings back an entry deleted meanwhile, and a deletion also
erases the payload of a redaction committed meanwhile. The other process is
a real one, on the same files, run at the exact point between the read and
the append.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import commands.app.forgetting.pipeline as privacy
from commands import MemoryLog
from eventstore import EntryNotFoundError, EntryRecorded, EntryRedacted

from ..conftest import scan_dir

TEXT = "the quarterly zebrafish migration plan is ready, ask carol@example.com"
WORD = b"zebrafish"


def _other_process(store: Path, code: str) -> None:
    """Run ``code`` with ``mem`` open on ``store``, in a process of its own."""
    script = textwrap.dedent(f"""
        from commands import MemoryLog
        with MemoryLog.open({str(store)!r}, embedder=None) as mem:
        """) + textwrap.indent(textwrap.dedent(code), "    ")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


def _once(monkeypatch: pytest.MonkeyPatch, name: str, then: Callable[[], None]) -> None:
    """Wrap ``privacy.<name>`` so that its first call runs ``then`` after it."""
    original = getattr(privacy, name)
    calls = []

    def wrapped(*args: Any) -> Any:
        result = original(*args)
        if not calls:
            calls.append(1)
            then()
        return result

    monkeypatch.setattr(privacy, name, wrapped)


def _store(tmp_path: Path) -> tuple[Path, str]:
    store = tmp_path / "store"
    with MemoryLog.open(store, embedder=None, redact_on_ingest=False) as mem:
        sid = mem.start_session(user_id="u1")
        eid = mem.record_lesson(sid, content=TEXT)
    return store, eid


def test_a_redaction_does_not_bring_back_an_entry_deleted_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, eid = _store(tmp_path)
    delete = f"mem.delete(ids=[{eid!r}], reason='gdpr', requested_by='d')"
    _once(monkeypatch, "_redacted_entry", lambda: _other_process(store, delete))
    with MemoryLog.open(store, embedder=None) as mem:
        with pytest.raises(EntryNotFoundError):
            mem.redact(eid, regex="carol", reason="pii", requested_by="r")
        assert mem.show(eid).state == "deleted"
        assert mem.search("zebrafish migration", record_access=False) == []
        assert not [rec for rec in mem.log.read() if rec.type == "entry.redacted"]
    assert scan_dir(store, [WORD]) == {}


def test_a_deletion_erases_a_redaction_committed_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, eid = _store(tmp_path)
    redact = f"mem.redact({eid!r}, regex='carol', reason='pii', requested_by='r')"
    _once(monkeypatch, "select", lambda: _other_process(store, redact))
    with MemoryLog.open(store, embedder=None) as mem:
        report = mem.delete(ids=[eid], reason="gdpr", requested_by="d")
        assert report.purged
        redactions = [rec.seq for rec in mem.log.read() if rec.type == "entry.redacted"]
        assert len(redactions) == 1 and redactions[0] in report.erased_seqs  # its payload is gone
        assert mem.show(eid).state == "deleted"
    assert scan_dir(store, [WORD]) == {}  # the redacted text went with the entry


def test_a_redaction_logged_after_the_deletion_does_not_resurrect_the_entry(tmp_path: Path) -> None:
    """A log written before the write side refused this (an ``entry.redacted``
    after its entry's tombstone): the views keep the entry deleted, live and
    replayed."""
    store, eid = _store(tmp_path)
    with MemoryLog.open(store, embedder=None) as mem:
        recorded = next(rec for rec in mem.log.read() if isinstance(rec.event, EntryRecorded))
        assert isinstance(recorded.event, EntryRecorded)
        mem.delete(ids=[eid], reason="gdpr", requested_by="d")
        late = EntryRedacted(entry_id=eid, target_seq=recorded.seq, spans={"regex": 1}, reason="pii",
                             requested_by="r", redacted=recorded.event)
        mem.log.erase([recorded.seq], late, stream="system", actor="r")
        live = (mem.show(eid).state, _counts(mem))
        assert live[0] == "deleted" and live[1]["entries"] == 0
        assert mem.search("zebrafish migration", record_access=False) == []
    subprocess.run([sys.executable, "-m", "commands", "--dir", str(store), "replay"], check=True,
                   capture_output=True, timeout=300)
    with MemoryLog.open(store, embedder=None) as mem:
        assert (mem.show(eid).state, _counts(mem)) == live
        assert mem.search("zebrafish migration", record_access=False) == []


def _counts(mem: MemoryLog) -> dict[str, Any]:
    stats = mem.stats()
    return {key: stats[key] for key in ("events", "entries", "by_kind", "by_type")}


_RACE = """
import sys, time
from pathlib import Path
from commands import MemoryLog
from eventstore import EntryNotFoundError
role, store, ids = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
other = "delete" if role == "redact" else "redact"
with MemoryLog.open(store, embedder=None) as mem:
    for eid in ids:
        (Path(store).parent / f"{role}-{eid}").touch()  # a barrier: both start on the entry at once
        while not (Path(store).parent / f"{other}-{eid}").exists():
            time.sleep(0.0005)
        try:
            if role == "redact":
                mem.redact(eid, regex="carol", reason="pii", requested_by="r")
            else:
                mem.delete(ids=[eid], reason="gdpr", requested_by="d")
        except EntryNotFoundError:
            assert role == "redact", eid
"""


def test_racing_processes_never_bring_back_a_deleted_entry(tmp_path: Path) -> None:
    """Two processes, one redacting and one deleting the same entries, at once."""
    store = tmp_path / "store"
    with MemoryLog.open(store, embedder=None, redact_on_ingest=False) as mem:
        sid = mem.start_session(user_id="u1")
        ids = [mem.add_message(sid, role="user", content=f"{TEXT}, note {i}") for i in range(12)]
    assert len(set(ids)) == len(ids)
    procs = [subprocess.Popen([sys.executable, "-c", _RACE, role, str(store), ",".join(ids)])
             for role in ("redact", "delete")]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    with MemoryLog.open(store, embedder=None) as mem:
        assert {mem.show(eid).state for eid in ids} == {"deleted"}
        assert mem.search("zebrafish migration", record_access=False) == []
    assert scan_dir(store, [WORD]) == {}
