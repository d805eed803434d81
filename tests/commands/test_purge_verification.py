"""The purge's verification is true: what it finds is recorded with where and
what was done, and a failed verification exits non-zero."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from commands import MemoryLog
from commands.cli import cli

TEXT = "a deleted text that a stray copy keeps around, 5d2e"


def test_content_left_in_a_stray_file_fails_the_verification(tmp_path: Path) -> None:
    """A copy of the deleted text that no purge step owns is found, named, and fails the purge."""
    root = tmp_path / "s"
    with MemoryLog.open(root) as mem:
        sid = mem.start_session(user_id="u")
        mid = mem.add_message(sid, role="user", content=TEXT)
    (root / "stray-notes.txt").write_text(f"copied by hand: {TEXT}\n")
    result = CliRunner().invoke(cli, ["--dir", str(root), "--json", "delete", "--id", mid, "--reason", "r",
                                      "--requested-by", "dpo", "--yes"])
    assert result.exit_code == 5
    assert "E_PURGE_UNVERIFIED" in result.stderr and TEXT not in result.stderr
    report = json.loads(result.stdout)
    assert report["verified"] is False
    assert report["findings"] == ["stray-notes.txt: 1 hits"]
    assert report["action"].endswith("still found")
    with MemoryLog.open(root) as mem:
        record = mem.deletions()[-1]
        assert record.purge_verified is False
        completed = [r.event for r in mem.log.read() if r.type == "purge.completed"][-1]
        assert completed.findings == ("stray-notes.txt: 1 hits",)  # type: ignore[union-attr]


def test_a_clean_purge_records_its_checks(tmp_path: Path) -> None:
    """A verified purge lists the scan and the structural checks it made."""
    with MemoryLog.open(tmp_path / "s") as mem:
        sid = mem.start_session(user_id="u")
        mid = mem.add_message(sid, role="user", content=TEXT)
        report = mem.delete(ids=[mid], reason="r", requested_by="dpo")
    assert report.verified and not report.findings and report.action is None
    vectors = "" if mem.store.proj.embedder is None else " and 1 of their vectors"
    assert report.checks[0] == "scan for 1 deleted texts" + vectors
    assert any("unchanged" in c for c in report.checks)


def test_a_damaged_intent_is_finished_by_rewriting_everything(tmp_path: Path) -> None:
    """An intent whose file was damaged still gets finished at the next open: every
    shard and the views are rewritten, the deleted text is gone, the intent goes."""
    import os
    import subprocess
    import sys

    root = tmp_path / "s"
    with MemoryLog.open(root) as mem:
        sid = mem.start_session(user_id="u")
        mid = mem.add_message(sid, role="user", content=TEXT)
        mem.search("stray")
    crash = subprocess.run(
        [sys.executable, "-m", "commands", "--dir", str(root), "delete", "--id", mid, "--reason", "r",
         "--requested-by", "dpo", "--yes"], env={**os.environ, "MEMLOG_CRASH_AT": "3"}, check=False)
    assert crash.returncode != 0
    (intent,) = (root / "purges").glob("*.json")
    intent.write_bytes(b"\x00garbage" + intent.read_bytes()[8:])
    with MemoryLog.open(root) as mem:
        assert len(mem.recovered) == 1 and mem.recovered[0].verified
        assert mem.show(mid).state == "deleted"
    assert list((root / "purges").glob("*.json")) == []
    assert not any(TEXT.encode() in p.read_bytes() for p in root.rglob("*") if p.is_file())
