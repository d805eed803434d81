"""``memlog maintain``: every due step once, a dry run that writes nothing, one
run at a time across processes, failures reported and the run going on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from commands import MemoryLog
from commands.app.store.store import Store
from commands.app.upkeep.maintain import Due, Step, StepContext, maintain
from commands.app.upkeep.steps import default_steps
from commands.app.upkeep.summariser import ExtractiveSummariser
from eventstore import SessionNotFoundError, now_micros
from projections.search import fit as search_fit

from .conftest import Run, head_of

LIMIT = 4096


def _grow(path: Path, sessions: int = 2) -> list[str]:
    """Sessions past 90% of a small limit, written with automatic compaction off."""
    with MemoryLog.open(path, embedder=None, session_limit_bytes=LIMIT, auto_compact=False,
                        auto_summarise=False) as mem:
        sids = [mem.start_session(user_id="alice") for _ in range(sessions)]
        for sid in sids:
            for i in range(60):
                mem.add_message(sid, role="user", content=f"note {i} on the replica lag in rack {i % 7}, "
                                "measured twice and written down with care.")
    (path / "config.toml").write_text(f"session_limit_bytes = {LIMIT}\n")
    return sids


def test_dry_run_lists_what_is_due_and_writes_nothing(store: Path, run: Run) -> None:
    sids = _grow(store)
    head = head_of(store)
    code, out, _ = run("maintain", "--dry-run")
    assert code == 0 and out["dry_run"] is True
    compaction = next(s for s in out["steps"] if s["name"] == "compaction")
    assert sorted(d["target"] for d in compaction["due"]) == sorted(sids)
    assert out["due"] == len(sids)
    assert head_of(store) == head  # not one event
    assert not (store / "maintain.lock").exists()  # nor a lock file


def test_a_run_does_what_is_due_as_memlog_maintain(store: Path, run: Run) -> None:
    sids = _grow(store)
    code, out, _ = run("maintain")
    assert code == 0 and out["dry_run"] is False and out["failed"] == 0
    compaction = next(s for s in out["steps"] if s["name"] == "compaction")
    assert compaction["events"] == 2 * len(sids)
    with MemoryLog.open(store, create=False, embedder=None) as mem:
        written = [r for r in mem.log.read() if r.type == "session.compacted"]
    assert {r.stream for r in written} == {f"session:{s}" for s in sids}
    assert {r.actor for r in written} == {"memlog/maintain"}


def test_a_second_run_at_the_same_time_exits_with_a_clear_message(store: Path, tmp_path: Path) -> None:
    """Process A holds the run (a step waits on a file); process B, the CLI, exits
    5 with E_LOCK_TIMEOUT and writes nothing; once A ends, B runs."""
    _grow(store, sessions=1)
    gate = tmp_path / "gate"
    started = tmp_path / "started"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(store), str(started), str(gate)])
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert holder.poll() is None, "the holder died"
            assert time.monotonic() < deadline, "the holder never started"
            time.sleep(0.05)
        head = head_of(store)
        second = _cli(store, "maintain")
        assert second.returncode == 5
        assert "E_LOCK_TIMEOUT" in second.stderr and "another memlog maintain is running" in second.stderr
        assert head_of(store) == head
    finally:
        gate.touch()
        assert holder.wait(timeout=60) == 0
    third = _cli(store, "--json", "maintain")
    assert third.returncode == 0, third.stderr
    assert json.loads(third.stdout)["due"] >= 1


def test_two_runs_racing_leave_a_sound_log(store: Path) -> None:
    """Two real `memlog maintain` started together: each exits 0 or 5, the log
    verifies, and no session was compacted twice for the same bytes."""
    sids = _grow(store, sessions=6)
    procs = [subprocess.Popen([sys.executable, "-m", "commands", "--dir", str(store), "maintain"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    codes = sorted(p.wait(timeout=120) for p in procs)
    assert codes in ([0, 0], [0, 5]), [p.stderr.read() if p.stderr else "" for p in procs]
    with MemoryLog.open(store, create=False, embedder=None) as mem:
        assert mem.verify().ok
        compacted = [r.event for r in mem.log.read() if r.type == "session.compacted"]
    before = [(e.session_id, e.bytes_before) for e in compacted if e is not None]
    assert len(before) == len(set(before)) and {s for s, _ in before} <= set(sids)


def test_a_failing_item_is_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    def due(store: Store, now: int) -> list[Due]:
        return [Due("probe", "sess-gone", "probe"), Due("probe", "sess-fine", "probe")]

    def run_item(store: Store, item: Due, context: StepContext) -> int:
        if item.target == "sess-gone":
            raise SessionNotFoundError("session sess-gone not found")
        assert context.actor == "memlog/maintain"
        return 1

    seen: list[tuple[str, int, int]] = []
    with MemoryLog.open(tmp_path / "m", embedder=None) as mem:
        report = maintain(mem.store, ExtractiveSummariser(), [Step("probe", due, run_item)],
                          progress=lambda step, done, total: seen.append((step, done, total)))
    (step,) = report.steps
    assert step.events == 1 and step.failed == ["sess-gone: E_SESSION_NOT_FOUND"]
    assert report.failed == 1 and seen == [("probe", 1, 2), ("probe", 2, 2)]


def test_a_read_only_store_refuses_a_run_but_not_a_dry_run(store: Path, run: Run) -> None:
    _grow(store, sessions=1)
    head = head_of(store)
    code, _, err = run("--read-only", "maintain")
    assert code == 4 and "E_READ_ONLY" in err
    assert run("--read-only", "maintain", "--dry-run")[0] == 0
    assert head_of(store) == head


def test_the_default_steps_run_in_the_documented_order() -> None:
    assert [s.name for s in default_steps()] == [
        "shared_purge", "extraction", "compaction", "resources", "retention", "retention_count", "ephemeral",
        "archive", "search_refit"]


@pytest.mark.parametrize("flag", [("--json",), ()])
def test_nothing_due_says_so(store: Path, run: Run, flag: tuple[str, ...]) -> None:
    with MemoryLog.open(store, embedder=None) as mem:
        mem.start_session(user_id="alice")
    code, out, _ = run("maintain", *flag, as_json=bool(flag))
    assert code == 0
    assert (out["due"] == 0) if flag else ("nothing due" in out)


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "commands", "--dir", str(store), *args],
                          capture_output=True, text=True, timeout=120, env={**os.environ})


_HOLDER = """
import sys, time
from pathlib import Path
from commands import MemoryLog
from commands.app.upkeep.maintain import maintain
from commands.app.upkeep.summariser import ExtractiveSummariser
from commands.app.upkeep.maintain import Due, Step

store, started, gate = (Path(a) for a in sys.argv[1:4])

def due(s, now):
    return [Due("hold", "x", "hold")]

def run_item(s, item, context):
    started.touch()
    while not gate.exists():
        time.sleep(0.05)
    return 0

with MemoryLog.open(store, create=False, embedder=None) as mem:
    maintain(mem.store, ExtractiveSummariser(), [Step("hold", due, run_item)])
"""


def test_resource_items_past_their_ttl_are_evicted_by_a_run(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A resource instance with items past its TTL is due (found by key, its user
    kept); the run evicts them as ``memlog/maintain``; the next run finds nothing."""
    import commands.app.upkeep.resources as handle_module

    with MemoryLog.open(tmp_path / "m", embedder=None) as mem:
        mem.declare_resource({"id": "chat", "key": "{user_id}", "token_limit": 1000, "ttl_seconds": 60})
        mem.declare_resource({"id": "keep", "key": "{user_id}", "token_limit": 1000})
        chat = mem.resource("chat", user_id="alice")
        old = [chat.append(f"an old remark {i} about caching") for i in range(3)]
        mem.resource("keep", user_id="alice").append("no TTL here")
        later = now_micros() + 120_000_000
        monkeypatch.setattr(handle_module, "now_micros", lambda: later)
        dry = maintain(mem.store, ExtractiveSummariser(), default_steps(), dry_run=True, now=later)
        (due,) = next(s for s in dry.steps if s.name == "resources").due
        assert due.target == chat.key and due.items == 3
        done = maintain(mem.store, ExtractiveSummariser(), default_steps(), now=later)
        assert next(s for s in done.steps if s.name == "resources").events == 1
        (evicted,) = [r for r in mem.log.read() if r.type == "resource.evicted"]
        assert evicted.actor == "memlog/maintain" and set(evicted.event.removed_entry_ids) == set(old)  # type: ignore[union-attr]
        again = maintain(mem.store, ExtractiveSummariser(), default_steps(), dry_run=True, now=later)
        assert again.due == 0


def test_a_step_with_run_all_does_every_item_at_once(tmp_path: Path) -> None:
    """``run_all`` gets the whole due list once (one deletion, one purge); when it
    fails, every item it held is reported failed and the next step still runs."""
    calls: list[list[str]] = []

    def due(store: Store, now: int) -> list[Due]:
        return [Due("all", "a", "r"), Due("all", "b", "r")]

    def run_all(store: Store, items: list[Due], context: StepContext) -> int:
        calls.append([i.target for i in items])
        if len(calls) > 1:
            raise SessionNotFoundError("gone")
        return 7

    def never(store: Store, item: Due, context: StepContext) -> int:
        raise AssertionError("run_all was there")

    steps = [Step("all", due, never, run_all), Step("all2", due, never, run_all)]
    with MemoryLog.open(tmp_path / "m", embedder=None) as mem:
        report = maintain(mem.store, ExtractiveSummariser(), steps)
    first, second = report.steps
    assert calls == [["a", "b"], ["a", "b"]] and first.events == 7 and not first.failed
    assert second.failed == ["a: E_SESSION_NOT_FOUND", "b: E_SESSION_NOT_FOUND"]


def test_every_scope_past_its_lesson_limit_goes_in_one_deletion(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "m", embedder=None, lesson_limit=2) as mem:
        for user in ("ana", "bo", "cy"):
            sid = mem.start_session(user_id=user)
            for i in range(4):
                text = f"{user} learned fact number {i}" + " word" * (9 * i)
                mem.record_lesson(sid, content=text)
        report = mem.maintain()
        step = next(s for s in report.steps if s.name == "retention_count")
        assert len(step.due) == 3 and not step.failed
        requests = [r for r in mem.log.read() if r.type == "deletion.requested"]
        applied = [r for r in mem.log.read() if r.type == "retention.applied"]
        assert len(requests) == 1 and len(applied) == 3
        assert {r.actor for r in applied} == {"memlog/maintain"}
        assert mem.maintain(dry_run=True).due == 0


def test_ephemeral_sessions_past_the_count_go_in_one_purge(tmp_path: Path) -> None:
    """Three ephemeral sessions past the count: one transaction of three deletion
    requests (each with its reason), one purge, nothing of theirs left on disk,
    and the views equal a replay."""
    from ..conftest import scan_dir

    root = tmp_path / "m"
    with MemoryLog.open(root, embedder=None, ephemeral_max_count=1) as mem:
        sids = [mem.start_session(user_id="alice", ephemeral=True) for _ in range(4)]
        for n, sid in enumerate(sids):
            mem.add_message(sid, role="user", content=f"scratch note quokka{n} for the hook")
        report = mem.maintain()
        (step,) = [s for s in report.steps if s.name == "ephemeral"]
        assert sorted(d.target for d in step.due) == sorted(sids[:3]) and not step.failed
        requests = [r for r in mem.log.read() if r.type == "deletion.requested"]
        purges = [r for r in mem.log.read() if r.type == "purge.completed"]
        assert len(requests) == 3 and len(purges) == 1 and purges[0].event.verified  # type: ignore[union-attr]
        assert [s.id for s in mem.sessions(archived=None)] == [sids[3]]
        live = mem.proj.views.dump() if mem.proj.views else None
        mem.replay()
        assert (mem.proj.views.dump() if mem.proj.views else None) == live
    assert not scan_dir(root, [f"quokka{n}".encode() for n in range(3)])


def test_search_refit_is_due_when_the_store_outgrows_its_shards(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A search never refits; maintain does, and then nothing is due."""
    monkeypatch.setattr(search_fit, "SHARD_EVENTS", 8)
    with MemoryLog.open(tmp_path / "s", record_access=False) as mem:
        sid = mem.start_session()
        ids = [mem.add_message(sid, role="user", content=f"entry tok{i}x") for i in range(20)]
        assert mem.search("tok5x")[0].id == ids[5]
        dry = mem.maintain(dry_run=True)
        assert [d.step for s in dry.steps for d in s.due] == ["search_refit"]
        assert mem.proj.search_index is not None and len(mem.proj.search_index.shards) == 1
        mem.maintain()
        assert mem.proj.search_index is not None and len(mem.proj.search_index.shards) == 4
        assert mem.maintain(dry_run=True).due == 0
        assert mem.search("tok5x")[0].id == ids[5]
