"""The search cache (payloads, and the views' memo of current entries: see
``projections/views/current.py``) never changes a result: along random
histories of appends, changes, redactions, deletions, compactions and
archivings, a search through the process's cache ranks exactly as one that
reads everything afresh (the same views, relevances and factors), and
as-of searches stay untouched by it."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commands import MemoryLog
from eventstore import now_micros
from projections import SearchQuery
from projections.search import rank

NOW = now_micros() + 3_600_000_000  # in an hour
WORDS = ["quokka", "garden", "river", "lantern", "copper", "meadow"]

_op = st.one_of(
    st.tuples(st.just("add"), st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)),
    st.tuples(st.just("task"), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)),
    st.tuples(st.just("importance"), st.integers(0, 30), st.sampled_from([0.0, 0.4, 1.0])),
    st.tuples(st.just("complete"), st.integers(0, 30)),
    st.tuples(st.just("redact"), st.integers(0, 30), st.sampled_from(WORDS)),
    st.tuples(st.just("delete"), st.integers(0, 30)),
    st.tuples(st.just("compact")),
    st.tuples(st.just("archive")),
    st.tuples(st.just("search"), st.sampled_from(WORDS)),
)


def _apply(mem: MemoryLog, sid: str, op: tuple[Any, ...], made: list[str], tasks: list[str]) -> None:
    kind = op[0]
    if kind in ("add", "task"):
        text = " ".join(op[1])
        eid = (mem.add_message(sid, role="user", content=text) if kind == "add"
               else mem.add_task(sid, content=text))
        made.append(eid)
        if kind == "task":
            tasks.append(eid)
    elif kind == "compact":
        mem.compact(sid)
    elif kind == "archive":  # archived, then restored: its entries searched again
        mem.archive_session(sid)
        mem.restore_session(sid)
    elif kind != "search" and made:
        _change(mem, op, made[op[1] % len(made)], tasks)


def _change(mem: MemoryLog, op: tuple[Any, ...], eid: str, tasks: list[str]) -> None:
    try:
        if op[0] == "importance":
            mem.set_importance(eid, op[2])
        elif op[0] == "complete" and eid in tasks:
            mem.complete_task(eid)
        elif op[0] == "redact":
            mem.redact(eid, regex=op[2], reason="test", requested_by="t")
        elif op[0] == "delete":
            mem.delete(ids=[eid], reason="test", requested_by="t")
    except Exception as exc:  # a change to an entry already gone: refused, as it should be
        assert getattr(exc, "code", None), exc


def _ranked(mem: MemoryLog, word: str, as_of: int | None, cached: bool) -> list[tuple[Any, float, float]]:
    """Ranked at a fixed hour near the entries' times, so decay factors tell importance apart."""
    proj = mem.store.proj
    with proj.read(as_of, search=True) as views:
        assert proj.search_index is not None
        got = rank(proj.search_index, views, SearchQuery(text=word, limit=10, mode="text"), as_of, NOW,
                   cache=proj.search_cache if cached else None)
    return [(r.view, r.relevance, r.factor) for r in got.entries]  # the whole view: state, entry, changes


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_op, min_size=4, max_size=16))
def test_a_cached_search_ranks_as_a_fresh_one(ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp, MemoryLog.open(Path(tmp) / "s", record_access=False) as mem:
        sid = mem.start_session(user_id="u")
        made: list[str] = []
        tasks: list[str] = []
        marks: list[int] = []
        for op in ops:
            _apply(mem, sid, op, made, tasks)
            marks.append(mem.log.head().seq)
            for word in WORDS[:2] if op[0] != "search" else [op[1]]:
                assert _ranked(mem, word, None, True) == _ranked(mem, word, None, False)
        for mark in marks[:: max(1, len(marks) // 4)]:
            assert _ranked(mem, "quokka", mark, True) == _ranked(mem, "quokka", mark, False)
