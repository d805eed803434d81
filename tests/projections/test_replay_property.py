"""Live incremental state equals a full replay; as-of reads equal a replay stopped there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from eventstore import EventLog
from projections import Projections, SearchQuery, run_search

from .history import QUERIES, History, steps


def search_dump(proj: Projections, as_of: int | None = None, catch_up: bool = True) -> list[Any]:
    """Entry seqs returned by a fixed set of searches."""
    if catch_up:
        proj.catch_up(search=True)
    assert proj.search_index is not None
    out = []
    for text in QUERIES:
        hits = run_search(proj.search_index, SearchQuery(text=text, limit=50), as_of)
        out.append(sorted(h.rseq for h in hits))
    return out


def vector_dump(proj: Projections, as_of: int | None = None) -> list[list[int]]:
    """Document seqs the vector search returns (all it holds) for the fixed queries."""
    assert proj.vectors is not None and proj.embedder is not None
    queries = proj.embedder.embed(QUERIES)
    return [sorted(r for r, _ in proj.vectors.search(q, 1000, as_of)) for q in queries]


def index_dump(proj: Projections, as_of: int | None = None) -> list[int]:
    """Every document seq the search index holds, entries and memories (as of a seq, if given)."""
    assert proj.search_index is not None
    every = SearchQuery(limit=10_000, source="both")
    return sorted(h.rseq for h in run_search(proj.search_index, every, as_of))


def full_dump(proj: Projections) -> dict[str, Any]:
    """Every views database, the search results and every stored vector."""
    proj.catch_up(search=True)
    assert proj.views is not None and proj.vectors is not None
    return {"views": proj.views.dump(), "search": search_dump(proj), "vectors": proj.vectors.dump(),
            "vector_search": vector_dump(proj)}


# An entry edited twice, updated, redacted after its edit; another edited then deleted.
EDITS = [("entry", 0, "lesson", ["postgres", "cache"]), ("catch_up",), ("edit", 0, ["queue", "retry"]),
         ("update", 0, True), ("edit", 0, ["alpha"]), ("entry", 1, "task", ["deploy"]),
         ("edit", 1, ["schema"]), ("catch_up",), ("redact", 1), ("delete", 0)]


@settings(max_examples=25)
@given(history=steps)
@example(history=EDITS)
def test_replay_equals_live(tmp_path_factory: pytest.TempPathFactory, history: list[Any]) -> None:
    """After random events applied live, a full replay gives identical projections
    (the vector projection included: the same vectors, bytes for bytes)."""
    root: Path = tmp_path_factory.mktemp("store")
    with EventLog.open(root / "log") as log:
        proj = Projections(root, log, shards=2)
        try:
            runner = History(log, proj)
            for step in history:
                runner.run(step)
            live = full_dump(proj)
            proj.replay()
            assert full_dump(proj) == live
        finally:
            proj.close()


def visible(proj: Projections, as_of: int | None, ids: list[str], skip: set[str],
            touched: set[str], forgotten: set[tuple[str, str]],
            memory_ids: tuple[str, ...] = ()) -> dict[str, Any]:
    """What a reader sees at ``as_of`` (no catch-up): entry content, sessions, memories."""
    assert proj.views is not None
    with proj.views.read(as_of) as views:
        entries = {}
        for eid in ids:
            if eid in skip:
                continue
            view = views.entry(eid)
            entries[eid] = None if view is None or view.entry is None else (view.state, view.entry)
        sessions = {s.session_id: (s.archived, s.agent_ids) for s in views.sessions()}
        memories = {u: [(m.key, m.content) for m in views.memories(u) if (u, m.key) not in forgotten]
                    for u in ("alice", "bob")}
        saved = {mid: (m.state, m.superseded) for mid in memory_ids
                 if (m := views.memory_by_id(mid)) is not None and m.state != "forgotten"}
        stats = {sid: views.session_stats(sid).counts for sid in sessions if sid not in touched}
        resources = {k: views.resource_state(k) for k in ("k0", "k1")}  # memory resources
        specs = views.resource_specs()
        checkpoints = list(views.checkpoints("alice"))  # -- upkeep --
    return {"entries": entries, "sessions": sessions, "memories": memories, "saved": saved, "stats": stats,
            "resources": resources, "specs": specs, "checkpoints": checkpoints}


@settings(max_examples=20)
@given(history=steps, data=st.data())
def test_as_of_equals_replay_until(tmp_path_factory: pytest.TempPathFactory, history: list[Any],
                                   data: st.DataObject) -> None:
    """Views, search and vectors read as of @k equal a replay stopped at @k.

    Content erased, redacted or forgotten after k is left out of the comparison:
    as-of reads never show it (privacy wins), a replay stopped at k cannot either.
    """
    root: Path = tmp_path_factory.mktemp("store")
    with EventLog.open(root / "log") as log:
        proj = Projections(root, log, shards=2)
        try:
            runner = History(log, proj)
            for step in history:
                runner.run(step)
            head = log.head().seq
            k = data.draw(st.integers(1, head))
            ids = [e[0] for e in runner.entries]
            proj.catch_up(search=True)
            touched = {e[3] for e in runner.entries if e[0] in runner.erased}
            past = visible(proj, k, ids, runner.erased, touched, runner.forgotten, tuple(runner.memory_ids))
            past_search = search_dump(proj, k)
            # A vector for exactly each document version of the index, as of any seq (Contract 2).
            assert vector_dump(proj, k) == [index_dump(proj, k)] * len(QUERIES)
            proj.replay(until=k)
            assert visible(proj, None, ids, runner.erased, touched, runner.forgotten,
                           tuple(runner.memory_ids)) == past
            erased_seqs = {e[1] for e in runner.entries if e[0] in runner.erased}
            replayed = search_dump(proj, catch_up=False)
            assert [sorted(set(h) - erased_seqs) for h in replayed] == [
                sorted(set(h) - erased_seqs) for h in past_search
            ]
            assert vector_dump(proj) == [index_dump(proj)] * len(QUERIES)  # and after a replay to k
        finally:
            proj.close()
