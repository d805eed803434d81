"""Read-only mode: every write fails with E_READ_ONLY and writes nothing; reads record no accesses."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from commands import MemoryLog
from commands.cli import cli
from eventstore import E_READ_ONLY, ReadOnlyError, StoreNotFoundError


def _fill(path: Path) -> dict[str, str]:
    with MemoryLog.open(path, embedder=None) as mem:
        sid = mem.start_session(user_id="alice")
        task = mem.add_task(sid, content="configure the pool")
        mid = mem.add_message(sid, role="user", content="postgres for the ledger")
        fid = mem.record_finding(sid, description="no pool limits")
        mem.remember("alice", "db", "postgres")
    return {"sid": sid, "task": task, "mid": mid, "fid": fid}


WRITES: list[tuple[str, Callable[[MemoryLog, dict[str, str]], Any]]] = [
    ("start_session", lambda m, i: m.start_session(user_id="bob")),
    ("add_message", lambda m, i: m.add_message(i["sid"], role="user", content="x")),
    ("record_decision", lambda m, i: m.record_decision(i["sid"], decision="x")),
    ("record_finding", lambda m, i: m.record_finding(i["sid"], description="x")),
    ("record_lesson", lambda m, i: m.record_lesson(i["sid"], content="x")),
    ("record_handoff", lambda m, i: m.record_handoff(i["sid"], content="x")),
    ("add_task", lambda m, i: m.add_task(i["sid"], content="x")),
    ("set_project_context", lambda m, i: m.set_project_context(None, content="x")),
    ("set_preference", lambda m, i: m.set_preference("alice", key="k", value="v")),
    ("complete_task", lambda m, i: m.complete_task(i["task"])),
    ("edit", lambda m, i: m.edit(i["mid"], content="x")),
    ("update_finding", lambda m, i: m.update_finding(i["fid"], status="resolved")),
    ("set_importance", lambda m, i: m.set_importance(i["mid"], 0.9)),
    ("remember", lambda m, i: m.remember("alice", "k2", "x")),
    ("forget", lambda m, i: m.forget("alice", "db")),
    ("delete", lambda m, i: m.delete(ids=[i["mid"]], reason="r", requested_by="t")),
    ("redact", lambda m, i: m.redact(i["mid"], regex="postgres", reason="r", requested_by="t")),
    ("retention", lambda m, i: m.retention(days={"message": 0})),
    ("apply_decay", lambda m, i: m.apply_decay()),
    ("archive_session", lambda m, i: m.archive_session(i["sid"])),
    ("close_session", lambda m, i: m.close_session(i["sid"])),
    ("update_session", lambda m, i: m.update_session(i["sid"], tags=["t"])),
    ("replay", lambda m, i: m.replay()),
    ("purge", lambda m, i: m.purge()),
    ("compact", lambda m, i: m.compact(i["sid"])),
    ("summarise", lambda m, i: m.summarise(i["sid"], force=True)),
    ("declare_resource",
     lambda m, i: m.declare_resource({"id": "chat", "key": "{user_id}", "token_limit": 100})),
]


@pytest.mark.parametrize("name", [w[0] for w in WRITES])
def test_every_library_write_is_refused(tmp_path: Path, name: str) -> None:
    ids = _fill(tmp_path / "s")
    write = dict(WRITES)[name]
    with MemoryLog.open(tmp_path / "s", embedder=None, read_only=True) as mem:
        head = mem.log.head()
        with pytest.raises(ReadOnlyError) as err:
            write(mem, ids)
        assert err.value.code == E_READ_ONLY and err.value.exit_code == 4
        assert mem.log.head() == head


def test_reads_work_and_record_no_accesses(tmp_path: Path) -> None:
    ids = _fill(tmp_path / "s")
    with MemoryLog.open(tmp_path / "s", embedder=None, read_only=True) as mem:
        head = mem.log.head()
        assert mem.read_only
        assert [h.id for h in mem.search("ledger")] == [ids["mid"]]
        assert mem.context(ids["sid"]).text
        assert mem.transcript(ids["sid"]).total == 1
    with MemoryLog.open(tmp_path / "s", embedder=None) as mem:
        assert mem.log.head() == head  # no entries.accessed was flushed at close


def test_read_only_needs_a_store_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        MemoryLog.open(tmp_path / "none", read_only=True)
    assert not (tmp_path / "none").exists()


CLI_WRITES = [
    ["init"],
    ["session", "start", "--user", "bob"],
    ["session", "close", "{sid}"],
    ["session", "update", "{sid}", "--tag", "t"],
    ["session", "archive", "{sid}"],
    ["add", "message", "{sid}", "--role", "user", "--content", "x"],
    ["add", "lesson", "{sid}", "--content", "x"],
    ["add", "preference", "--user", "alice", "--key", "k", "--value", "v"],
    ["task", "done", "{task}"],
    ["edit", "{mid}", "--content", "x"],
    ["remember", "--user", "alice", "k3", "x"],
    ["forget", "--user", "alice", "db"],
    ["delete", "--id", "{mid}", "--reason", "r", "--requested-by", "t", "--yes"],
    ["redact", "{mid}", "--regex", "postgres", "--reason", "r", "--requested-by", "t"],
    ["retention", "--yes"],
    ["purge"],
    ["decay", "--rate", "message=0.2"],
    ["replay"],
    ["compact", "--session", "{sid}"],
    ["summarise", "{sid}", "--force"],
    ["resource", "declare", "chat", "--key", "{{user_id}}", "--limit", "100"],
]


def test_every_cli_write_is_refused(tmp_path: Path) -> None:
    ids = _fill(tmp_path / "s")
    runner = CliRunner()
    with MemoryLog.open(tmp_path / "s", embedder=None) as mem:
        head = mem.log.head()
    for argv in CLI_WRITES:
        args = [a.format(**ids) for a in argv]
        result = runner.invoke(cli, ["--dir", str(tmp_path / "s"), "--read-only", *args])
        assert result.exit_code == 4, (args, result.output)
        assert "E_READ_ONLY" in result.output, args
    ok = runner.invoke(cli, ["--dir", str(tmp_path / "s"), "--read-only", "search", "ledger"])
    assert ok.exit_code == 0 and ids["mid"] in ok.output
    with MemoryLog.open(tmp_path / "s", embedder=None) as mem:
        assert mem.log.head() == head
