"""Projections found broken at open are rebuilt from the log (the broken
directory is never opened, then wiped); when the rebuild cannot run, the error
names the broken file and `memlog replay`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import structlog

from commands import MemoryLog
from eventstore import CorruptionError, EventLog

T_PAST = "2020-01-01T00:00:00Z"  # decay sits at its floor: results do not move with the clock


def _build(path: Path, count: int = 12) -> list[str]:
    with MemoryLog.open(path, search_shards=2, record_access=False) as mem:
        sid = mem.start_session(user_id="u1")
        ids = [mem.add_message(sid, role="user", content=f"postgres replica note{i}", occurred_at=T_PAST)
               for i in range(count)]
        mem.remember("u1", "editor", "vim")
    return ids


def _reads(path: Path, ids: list[str]) -> dict[str, Any]:
    with MemoryLog.open(path, search_shards=2, record_access=False) as mem:
        return {"search": [(r.id, r.score) for r in mem.search("postgres note3", limit=20)],
                "show": msgspec.to_builtins(mem.show(ids[3])),
                "memories": [m.content for m in mem.memories("u1")],
                "skipped": mem.stats()["skipped"]}


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, list[str], dict[str, Any]]:
    path = tmp_path / "store"
    ids = _build(path)
    return path, ids, _reads(path, ids)


def _current(path: Path) -> Path:
    return path / os.readlink(path / "proj")


def _rebuilt(path: Path, ids: list[str], want: dict[str, Any], old: str) -> list[dict[str, Any]]:
    with structlog.testing.capture_logs() as logs:
        assert _reads(path, ids) == want
    assert os.readlink(path / "proj") != old
    assert sorted(p.name for p in path.glob("proj-*")) == [os.readlink(path / "proj")]
    return [e for e in logs if e["event"].startswith("projections_")]


def test_a_garbage_layout_is_rebuilt(store: tuple[Path, list[str], dict[str, Any]]) -> None:
    path, ids, want = store
    old = os.readlink(path / "proj")
    (_current(path) / "layout").write_bytes(b"\xff\xfe garbage")
    logs = _rebuilt(path, ids, want, old)
    assert logs[0]["event"] == "projections_rebuilding"
    assert f"{old}/layout is unreadable" in logs[0]["problem"]


@pytest.mark.parametrize("damage", ["dangling link", "no link", "link is a directory", "link outside"])
def test_a_broken_proj_link_is_rebuilt(store: tuple[Path, list[str], dict[str, Any]], tmp_path: Path,
                                       damage: str) -> None:
    path, ids, want = store
    old = os.readlink(path / "proj")
    link = path / "proj"
    if damage == "dangling link":
        shutil.rmtree(path / old)
    elif damage == "no link":
        link.unlink()
    elif damage == "link is a directory":
        link.unlink()
        (link / "views").mkdir(parents=True)
        (link / "views" / "data.mdb").write_bytes(b"x" * 5000)
    else:
        (tmp_path / "outside").mkdir()
        (tmp_path / "outside" / "keep").write_text("mine")
        link.unlink()
        link.symlink_to(tmp_path / "outside")
    _rebuilt(path, ids, want, old)
    assert not (path / old).exists()
    if damage == "link outside":
        assert (tmp_path / "outside" / "keep").read_text() == "mine"  # never wiped


def test_projections_ahead_of_the_log_are_rebuilt(tmp_path: Path) -> None:
    """A log restored from an older copy: the views claim seqs it does not
    hold, so they are rebuilt and show what the log holds."""
    path = tmp_path / "store"
    ids = _build(path, count=4)
    shutil.copytree(path / "log", tmp_path / "old-log")
    want = _reads(path, ids)
    with MemoryLog.open(path, search_shards=2, record_access=False) as mem:
        sid = mem.sessions()[0].id
        for i in range(5):
            mem.add_message(sid, role="user", content=f"postgres later note{i}", occurred_at=T_PAST)
        assert len(mem.search("postgres", limit=50)) == 9
    shutil.rmtree(path / "log")
    shutil.copytree(tmp_path / "old-log", path / "log")
    old = os.readlink(path / "proj")
    _rebuilt(path, ids, want, old)


def test_another_store_in_the_process_follows_the_rebuild(store: tuple[Path, list[str],
                                                                       dict[str, Any]]) -> None:
    path, _, want = store
    with MemoryLog.open(path, search_shards=2, record_access=False) as first:
        assert [r.id for r in first.search("postgres note3", limit=20)] == [i for i, _ in want["search"]]
        (_current(path) / "layout").write_text("3 shards=2\n")
        with MemoryLog.open(path, search_shards=2, record_access=False) as second:
            assert [r.id for r in second.search("postgres note3", limit=20)] == [i for i, _ in want["search"]]
        assert [r.id for r in first.search("postgres note3", limit=20)] == [i for i, _ in want["search"]]


def test_a_rebuild_that_cannot_read_the_log_names_the_file_and_replay(
        store: tuple[Path, list[str], dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    path, _, _ = store
    bad = _current(path) / "views" / "data.mdb"
    with open(bad, "r+b") as f:
        f.write(b"\0" * 64)

    def unreadable(*_: Any, **__: Any) -> Any:
        raise CorruptionError("record of seq 2 does not decode", seq=2)

    monkeypatch.setattr(EventLog, "read", unreadable)
    with pytest.raises(CorruptionError) as caught:
        MemoryLog.open(path, search_shards=2)
    message = caught.value.message
    assert str(bad) in message and "memlog replay" in message and "seq 2" in message
    monkeypatch.undo()
    with MemoryLog.open(path, search_shards=2) as mem:
        assert len(mem.search("postgres")) > 0


def test_processes_opening_a_broken_store_at_once_rebuild_it_once(
        store: tuple[Path, list[str], dict[str, Any]]) -> None:
    """Three CLI processes find the same garbage layout: one rebuilds (proj.lock),
    the others wait and open its result; all answer, one directory is left."""
    path, _, want = store
    (_current(path) / "layout").write_bytes(b"\x00\x01")
    env = {**os.environ, "MEMLOG_SEARCH_SHARDS": "2", "MEMLOG_RECORD_ACCESS": "false"}
    procs = [subprocess.Popen([sys.executable, "-m", "commands", "--dir", str(path), "--json", "search",
                               "postgres note3", "--limit", "20"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in outs]
    for out, _ in outs:
        assert [(r["id"], r["score"]) for r in json.loads(out)] == want["search"]
    assert sum(err.count("projections_rebuilding") for _, err in outs) == 1
    assert len(list(path.glob("proj-*"))) == 1
