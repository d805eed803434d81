"""health and metrics: aggregate numbers (ids at most), never content."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from commands import MemoryLog
from commands.app.ops import health as health_app
from commands.cli import cli
from eventstore.lmdb.layout import HEADERS

from ..eventstore.tamper import get_value, raw_env

SECRET = "zanzibar-quokka-7781"


def _store(path: Path) -> tuple[str, str]:
    with MemoryLog.open(path, embedder=None) as mem:
        sid = mem.start_session(user_id="alice")
        eid = mem.add_message(sid, role="user", content=f"the vault code is {SECRET}")
        mem.add_message(sid, role="user", content="postgres for the ledger")
        mem.search("ledger")
        mem.delete(ids=[eid], reason="test", requested_by="t")
    return sid, eid


def test_health_reports_the_store_and_no_content(tmp_path: Path) -> None:
    _store(tmp_path / "s")
    out = CliRunner().invoke(cli, ["--dir", str(tmp_path / "s"), "--json", "health"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    assert report["status"] == "ok" and report["verify_tail"]["ok"]
    assert report["head"]["seq"] == report["verify_tail"]["checked"]
    assert report["last"]["purge"]["seq"] > 0 and report["last"]["compaction"] is None
    assert set(report["lag"]) == {"views", "search", "vectors"}
    assert report["bytes_on_disk"]["log"] > 0
    text = CliRunner().invoke(cli, ["--dir", str(tmp_path / "s"), "health"]).output
    for shown in (out.stdout, text):
        assert SECRET not in shown and "ledger" not in shown and "alice" not in shown


def test_health_fails_when_the_tail_does_not_verify(tmp_path: Path) -> None:
    _store(tmp_path / "s")
    log_dir = tmp_path / "s" / "log"
    with MemoryLog.open(tmp_path / "s", embedder=None) as mem:
        head = mem.log.head().seq
    value = bytearray(get_value(log_dir, HEADERS, head))
    value[-1] ^= 1
    with raw_env(log_dir) as (env, dbs), env.begin(write=True) as txn:
        txn.put(head.to_bytes(8, "big"), bytes(value), db=dbs[HEADERS])
    out = CliRunner().invoke(cli, ["--dir", str(tmp_path / "s"), "--json", "health", "--tail", "3"])
    assert out.exit_code == 1
    assert json.loads(out.stdout)["status"] == "failing"


def test_sessions_over_their_limit_are_named_by_id(tmp_path: Path) -> None:
    sid, _ = _store(tmp_path / "s")
    with MemoryLog.open(tmp_path / "s", embedder=None) as mem:
        report = health_app.health(mem.store, session_limit=10)
    assert report["status"] == "degraded"
    assert report["sessions_over_limit"] == {"limit_bytes": 10, "count": 1, "ids": [sid]}


def test_metrics_are_prometheus_text_without_content(tmp_path: Path) -> None:
    _store(tmp_path / "s")
    with MemoryLog.open(tmp_path / "s", embedder=None) as mem:
        mem.search("ledger")
        text = mem.metrics()
    assert SECRET not in text and "ledger" not in text and "alice" not in text
    assert 'memlog_events_total{type="entry.recorded"} 2' in text
    assert "memlog_deletions_total 1" in text and "memlog_purges_total 1" in text
    assert re.search(r"^memlog_search_seconds_count [1-9]", text, flags=re.M)
    assert re.search(r'^memlog_append_seconds_bucket\{le="\+Inf"\} [1-9]', text, flags=re.M)
    for line in text.splitlines():  # every sample line: name{labels} number
        assert line.startswith("#") or re.fullmatch(r'[a-z_]+(\{[a-z]+="[^"]*"\})? [0-9.e+-]+', line), line
    out = CliRunner().invoke(cli, ["--dir", str(tmp_path / "s"), "metrics"])
    assert out.exit_code == 0 and "# TYPE memlog_search_seconds histogram" in out.output
