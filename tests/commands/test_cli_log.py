"""The CLI commands that exist so far: init, stats, audit verify, replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from commands.cli import cli
from eventstore import EntryRecorded, EventLog, SessionStarted


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A data directory with one session and a few entries."""
    with EventLog.open(tmp_path / "log") as log:
        log.append("session:s1", [SessionStarted(session_id="s1")], actor="t")
        log.append("session:s1", [EntryRecorded(entry_id=f"e{i}", kind="message", occurred_at=i,
                                                content=f"note {i}", session_id="s1")
                                  for i in range(5)], actor="t")
    return tmp_path


def run(store: Path, *args: str) -> tuple[int, str, str]:
    """Invoke the CLI on ``store``."""
    result = CliRunner().invoke(cli, ["--dir", str(store), *args])
    return result.exit_code, result.stdout, result.stderr


def test_init_creates_a_private_store(tmp_path: Path) -> None:
    """init creates the data directory with a 0700 log."""
    code, out, _ = run(tmp_path / "new", "--json", "init")
    assert code == 0 and json.loads(out)["head_seq"] == 0
    assert (tmp_path / "new" / "log").stat().st_mode & 0o777 == 0o700


def test_stats_json(store: Path) -> None:
    """stats --json gives events and head_seq."""
    code, out, _ = run(store, "--json", "stats")
    data = json.loads(out)
    assert code == 0 and data["events"] == 6 and data["head_seq"] == 6


def test_audit_verify_ok_and_tampered(store: Path) -> None:
    """audit verify passes, then exits 1 naming the seq after one byte is flipped in the file."""
    code, out, _ = run(store, "--json", "audit", "verify")
    assert code == 0 and json.loads(out) == {"ok": True, "events": 6, "head": 6,
                                               "first_bad_seq": None, "problem": None}
    data_file = store / "log" / "seg-000000" / "data.mdb"  # payloads live in segments
    blob = bytearray(data_file.read_bytes())
    at = blob.find(b"note 3")
    while at != -1:
        blob[at + 5] ^= 0x01
        at = blob.find(b"note 3", at + 1)
    data_file.write_bytes(bytes(blob))
    code, out, _ = run(store, "--json", "audit", "verify")
    assert code == 1
    assert json.loads(out)["first_bad_seq"] == 5  # entry e3 is the fifth event


def test_replay_json_and_progress(store: Path) -> None:
    """replay --json prints the summary on stdout and progress on stderr."""
    code, out, err = run(store, "--json", "replay")
    assert code == 0 and json.loads(out)["events"] == 6
    assert "replaying" in err
    code, out, _ = run(store, "--json", "replay", "--projection", "search")
    assert code == 0 and json.loads(out)["events"] == 6
    assert json.loads(out)["projections"] == ["search"]
    code, out, err = run(store, "replay", "--projection", "views")  # refused before any work
    assert code == 2 and "replaying" not in err and err.startswith("Error:")


@pytest.mark.parametrize("until", ["@x", "yesterday", "2026-01-01T00:00:00", "@-1"])
def test_a_bad_point_is_one_error_line(store: Path, until: str) -> None:
    """A bad @SEQ or time (the one point parser) exits 2 with one Error line and writes nothing."""
    with EventLog.open(store / "log") as log:
        head = log.head()
    code, out, err = run(store, "audit", "at", until, "entry", "e1")
    assert code == 2 and out == ""
    assert err.strip().startswith("Error:") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    with EventLog.open(store / "log") as log:
        assert log.head() == head
