"""Point-in-time audit: as-of reads equal a replay stopped there; deleted stays deleted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from commands import MemoryLog
from commands.app.results import entry_result, memory_result, session_result
from commands.cli import cli
from eventstore import NotFoundError, format_micros
from projections import SearchQuery

WORDS = ["postgres", "cache", "latency", "schema", "deploy", "queue"]
QUERIES = ["postgres", "cache latency", "schem", "queue deploy"]

ops = st.lists(st.one_of(
    st.tuples(st.just("message"), st.integers(0, 1),
              st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)),
    st.tuples(st.just("decision"), st.integers(0, 1), st.sampled_from(WORDS)),
    st.tuples(st.just("task_done"), st.integers(0, 20)),
    st.tuples(st.just("remember"), st.sampled_from(["k1", "k2"]), st.sampled_from(WORDS)),
    st.tuples(st.just("forget"), st.sampled_from(["k1", "k2"])),
    st.tuples(st.just("delete"), st.integers(0, 20)),
    st.tuples(st.just("archive"), st.integers(0, 1)),
    st.tuples(st.just("search"), st.sampled_from(WORDS)),
), min_size=1, max_size=25)


class Runner:
    """Applies random operations through the facade, remembering what was erased."""

    def __init__(self, mem: MemoryLog) -> None:
        self.mem = mem
        self.sessions = [mem.start_session(user_id="alice"), mem.start_session(user_id="alice")]
        self.ids: list[str] = []
        self.tasks: list[str] = []
        self.erased: set[str] = set()
        self.keys: set[str] = set()
        self.forgotten: set[str] = set()
        self.archived: set[int] = set()

    def apply(self, op: tuple[Any, ...]) -> None:
        name, *args = op
        mem = self.mem
        if name == "message" and args[0] not in self.archived:
            self.ids.append(mem.add_message(self.sessions[args[0]], role="user", content=" ".join(args[1])))
        elif name == "decision" and args[0] not in self.archived:
            self.ids.append(mem.record_decision(self.sessions[args[0]], decision=f"use {args[1]}"))
            self.tasks.append(mem.add_task(self.sessions[args[0]], content=f"do {args[1]}"))
            self.ids.append(self.tasks[-1])
        elif name == "task_done" and self.tasks:
            task = self.tasks[args[0] % len(self.tasks)]
            if task not in self.erased:
                mem.complete_task(task)
        elif name == "remember":
            mem.remember("alice", args[0], args[1])
            self.keys.add(args[0])
        elif name == "forget" and args[0] in self.keys:
            mem.forget("alice", args[0])
            self.keys.discard(args[0])
            self.forgotten.add(args[0])
        elif name == "delete":
            live = [i for i in self.ids if i not in self.erased]
            if live:
                target = live[args[0] % len(live)]
                mem.delete(ids=[target], reason="test", requested_by="t", include_derived=False)
                self.erased.add(target)
        elif name == "archive" and args[0] not in self.archived:
            mem.archive_session(self.sessions[args[0]])
            self.archived.add(args[0])
        elif name == "search":
            mem.search(args[0])


def as_of_reads(runner: Runner, k: int) -> dict[str, Any]:
    """What mem.as_of(@k) answers."""
    past = runner.mem.as_of(k)
    entries = {}
    for eid in runner.ids:
        if eid in runner.erased:
            continue
        try:
            shown = past.show(eid)
        except NotFoundError:
            shown = None
        entries[eid] = None if shown is None or shown.state == "absent" else shown
    return {
        "entries": entries,
        "sessions": {s.id: s for s in past.sessions()},
        "memories": [m for m in past.memories("alice") if m.key not in runner.forgotten],
        "search": [sorted(h.id for h in past.search(q, limit=50) if h.id not in runner.erased)
                   for q in QUERIES],
        "time": past.time,
    }


def replayed_reads(runner: Runner, time: int) -> dict[str, Any]:
    """The same reads from projections replayed up to k (no catch-up)."""
    proj = runner.mem.proj
    assert proj.views is not None
    with proj.views.read() as views:
        entries = {}
        for eid in runner.ids:
            if eid in runner.erased:
                continue
            view = views.entry(eid)
            entries[eid] = None if view is None else entry_result(view)
        sessions = {v.session_id: session_result(v, views.session_stats(v.session_id))
                    for v in views.sessions()}
        memories = [memory_result(m) for m in views.memories("alice") if m.key not in runner.forgotten]
        search = [sorted(r.view.entry_id
                         for r in proj.search(SearchQuery(text=q, limit=50), now=time, reader=views).entries
                         if r.view.entry_id not in runner.erased) for q in QUERIES]
    return {"entries": entries, "sessions": sessions, "memories": memories, "search": search, "time": time}


@settings(max_examples=20, deadline=None)
@given(history=ops, data=st.data())
def test_as_of_equals_replay_until(tmp_path_factory: pytest.TempPathFactory, history: list[Any],
                                   data: st.DataObject) -> None:
    """For random histories, as_of(@k) equals a replay stopped at k (erased content left out)."""
    with MemoryLog.open(tmp_path_factory.mktemp("audit") / "s") as mem:
        runner = Runner(mem)
        for op in history:
            runner.apply(op)
        k = data.draw(st.integers(1, mem.log.head().seq))
        past = as_of_reads(runner, k)
        mem.proj.replay(until=k)
        assert replayed_reads(runner, past["time"]) == past
        mem.replay()


def test_audit_at_before_a_deletion_shows_it_deleted(tmp_path: Path) -> None:
    """`audit at` a time before the deletion shows deleted, with request id, reason and time."""
    store = tmp_path / "s"
    with MemoryLog.open(store) as mem:
        sid = mem.start_session()
        did = mem.record_decision(sid, decision="the secret plan zqx1234567890")
        before = mem.log.head().recorded_at
        report = mem.delete(ids=[did], reason="gdpr erasure", requested_by="dpo")
    runner = CliRunner()
    for point in (f"@{report.seq - 3}", "@2"):
        result = runner.invoke(cli, ["--dir", str(store), "--json", "audit", "at", point, "entry", did])
        assert result.exit_code == 0, result.stderr
        shown = json.loads(result.stdout)
        assert shown["state"] == "deleted" and shown["content"] is None
        assert shown["deleted"]["request_id"] == report.request_id
        assert shown["deleted"]["reason"] == "gdpr erasure" and shown["deleted"]["at"]
        assert "zqx1234567890" not in result.stdout
    result = runner.invoke(cli, ["--dir", str(store), "audit", "at", format_micros(before), "search",
                                 "secret"])
    assert result.exit_code == 0 and "zqx1234567890" not in result.stdout


def test_history_lists_every_touch_with_both_times(tmp_path: Path) -> None:
    """history shows created, updated, accessed, deleted and purged, content only while it exists."""
    with MemoryLog.open(tmp_path / "s") as mem:
        sid = mem.start_session()
        tid = mem.add_task(sid, content="configure the pool", occurred_at="2026-01-10T09:00:00Z")
        mem.complete_task(tid)
        mem.search("pool")
        mem.store.access.flush()  # accesses are appended in batches, off the read path
        items = mem.history(tid)
        assert [i.type for i in items] == ["entry.recorded", "entry.updated", "entries.accessed"]
        assert items[0].content == "configure the pool" and items[0].occurred_at == "2026-01-10T09:00:00Z"
        assert items[0].recorded_at != items[0].occurred_at
        mem.delete(ids=[tid], reason="cleanup", requested_by="dpo")
        items = mem.history(tid)
    types = [i.type for i in items]
    assert types[:3] == ["entry.recorded", "entry.updated", "entries.accessed"]
    assert "deletion.requested" in types and "entries.deleted" in types and "purge.completed" in types
    assert items[0].content is None and "erased" in items[0].what


def test_audit_log_filters(tmp_path: Path) -> None:
    """audit log filters by stream, type and actor, and never prints content."""
    store = tmp_path / "s"
    with MemoryLog.open(store) as mem:
        sid = mem.start_session()
        mem.add_message(sid, role="user", content="hello secret words")
    result = CliRunner().invoke(cli, ["--dir", str(store), "--json", "audit", "log", "--type",
                                      "entry.recorded"])
    rows = json.loads(result.stdout)
    assert [r["type"] for r in rows] == ["entry.recorded"] and "secret" not in result.stdout
    result = CliRunner().invoke(cli, ["--dir", str(store), "--json", "audit", "log", "--stream",
                                      f"session:{sid}", "--actor", "memlog"])
    assert len(json.loads(result.stdout)) == 2
