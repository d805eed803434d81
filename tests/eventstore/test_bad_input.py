"""Bad input raises a MemlogError with a stable code and writes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eventstore import (
    DeletionCriteria,
    DeletionRequested,
    EntryRecorded,
    EventLog,
    LogSettings,
    MemlogError,
    MemorySaved,
    MessageDetails,
    SessionStarted,
)

from .contract import entry

GOOD = EntryRecorded(entry_id="e1", kind="message", content="hi", occurred_at=1)

CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("bad stream id", dict(stream="bad stream"), "E_INVALID_FORMAT", "invalid stream id"),
    ("empty stream id", dict(stream=""), "E_INVALID_FORMAT", "invalid stream id"),
    ("stream not a str", dict(stream=42), "E_INVALID_FORMAT", "invalid stream id"),
    ("empty actor", dict(actor=""), "E_INVALID_FORMAT", "actor"),
    ("no events", dict(events=[]), "E_INVALID_FORMAT", "at least one event"),
    ("not an event", dict(events=[{"type": "entry.recorded"}]), "E_INVALID_FORMAT",
     "not an event of the catalogue"),
    ("bad entry id", dict(events=[EntryRecorded(entry_id="a b", kind="message", content="x",
                                                occurred_at=1)]),
     "E_INVALID_FORMAT", "$.entry_id"),
    ("empty content", dict(events=[EntryRecorded(entry_id="e", kind="message", content="",
                                                 occurred_at=1)]),
     "E_INVALID_FORMAT", "$.content"),
    ("bad kind", dict(events=[EntryRecorded(entry_id="e", kind="memo",  # type: ignore[arg-type]
                                            content="x", occurred_at=1)]),
     "E_INVALID_FORMAT", "$.kind"),
    ("wrong type", dict(events=[EntryRecorded(entry_id="e", kind="message", content="x",
                                              occurred_at="yesterday")]),  # type: ignore[arg-type]
     "E_INVALID_FORMAT", "$.occurred_at"),
    ("negative time", dict(events=[EntryRecorded(entry_id="e", kind="message", content="x",
                                                 occurred_at=-1)]),
     "E_INVALID_FORMAT", "$.occurred_at"),
    ("bad memory key", dict(events=[MemorySaved(user_id="u", key="Bad-Key", content="x",
                                                memory_id="m")]),
     "E_INVALID_FORMAT", "$.key"),
    ("importance out of range", dict(events=[EntryRecorded(entry_id="e", kind="message",
                                                           content="x", occurred_at=1,
                                                           importance=3.0)]),
     "E_INVALID_FORMAT", "$.importance"),
    ("too large", dict(events=[EntryRecorded(entry_id="e", kind="message", content="x" * 5000,
                                             occurred_at=1)]),
     "E_SIZE_LIMIT", "the limit is 4096 bytes"),
    ("stale expected version", dict(expected_version=0), "E_CONCURRENT_MOD", "expected 0"),
    ("bad expected version", dict(expected_version=-1), "E_INVALID_FORMAT", "expected_version"),
    ("bad event id", dict(event_ids=["no spaces please"]), "E_INVALID_FORMAT", "event id"),
    ("id count mismatch", dict(event_ids=["a", "b"]), "E_INVALID_FORMAT", "2 event ids"),
    ("bad nested id", dict(events=[DeletionRequested(
        request_id="r1", criteria=DeletionCriteria(ids=("ok", "not ok")), reason="x",
        requested_by="t")]), "E_INVALID_FORMAT", "$.criteria.ids"),
    ("bad id in details", dict(events=[EntryRecorded(
        entry_id="e", kind="message", content="x", occurred_at=1,
        details=MessageDetails(parent_id="p q"))]), "E_INVALID_FORMAT", "$.details.parent_id"),
    ("huge int", dict(events=[EntryRecorded(entry_id="e", kind="message", content="x",
                                            occurred_at=1 << 70)]),
     "E_INVALID_FORMAT", "cannot be encoded"),
]


@pytest.mark.parametrize(("name", "override", "code", "words"), CASES, ids=[c[0] for c in CASES])
def test_bad_append_is_refused_and_writes_nothing(
    tmp_path: Path, name: str, override: dict[str, Any], code: str, words: str
) -> None:
    """Each bad append raises a MemlogError with a stable code and leaves the head alone."""
    with EventLog.open(tmp_path / "log", LogSettings(max_payload_bytes=4096)) as log:
        log.append("s:a", [entry(0)], actor="t")
        head = log.head()
        args: dict[str, Any] = dict(stream="s:a", events=[GOOD], actor="t")
        args.update(override)
        with pytest.raises(MemlogError) as info:
            log.append(args.pop("stream"), args.pop("events"), **args)
        assert info.value.code == code
        assert words in str(info.value)
        assert "Traceback" not in str(info.value)
        assert log.head() == head
        assert log.verify().ok


def test_error_messages_never_echo_content(log_dir: Path) -> None:
    """A rejected event's message names fields, not the content it carried."""
    secret = "hunter2-very-secret-words"
    with EventLog.open(log_dir, LogSettings(max_payload_bytes=64)) as log:
        for bad in (
            EntryRecorded(entry_id="e", kind="message", content=secret * 10, occurred_at=1),
            EntryRecorded(entry_id="e", kind="nope",  # type: ignore[arg-type]
                          content=secret, occurred_at=1),
            SessionStarted(session_id=secret + " x"),
        ):
            with pytest.raises(MemlogError) as info:
                log.append("s:a", [bad], actor="t")
            assert secret not in str(info.value)


def test_erase_refuses_bad_seqs(log: EventLog) -> None:
    """erase() refuses seqs beyond the head or non-positive ones, writing nothing."""
    log.append("s:a", [entry(1)], actor="t")
    tomb = EntryRecorded(entry_id="t", kind="message", content="x", occurred_at=1)
    for seqs in ([], [0], [5]):
        with pytest.raises(MemlogError):
            log.erase(seqs, tomb, stream="system", actor="t")
    assert log.head().seq == 1 and log.get(1).event is not None
