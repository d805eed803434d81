"""The scope filter (Contract 1): who is reading decides which documents a
search may see. Built on the index alone (documents of hand-made entries),
plus one end-to-end check that leaving out archived sessions still works."""

from __future__ import annotations

from pathlib import Path

import pytest

from commands import MemoryLog
from commands.app.recall.search import find, make_query
from eventstore import EntryRecorded, InvalidInputError
from projections import Scope, SearchIndex, SearchQuery, entry_document, run_search

# entry id, kind, session, user, agent
ENTRIES = [
    ("a1", "message", "s-alice", "alice", None),
    ("a2", "decision", "s-alice-old", "alice", None),
    ("a3", "lesson", None, "alice", None),         # a user entry outside any session
    ("b1", "message", "s-bob", "bob", None),
    ("b2", "decision", "s-bob", "bob", "planner"),
    ("g1", "finding", None, None, "planner"),      # an agent's entry, no user
    ("p1", "project", None, None, None),           # shared project context
    ("p2", "project", "s-bob", None, None),        # a project note inside Bob's session: not shared
    ("p3", "project", None, "bob", None),          # Bob's own project note: not shared
    ("n1", "message", "s-nobody", None, None),
    ("x1", "preference", "s-alice", "bob", None),  # Bob's entry in Alice's session (an older store)
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> SearchIndex:
    idx = SearchIndex(tmp_path_factory.mktemp("scope") / "search", shards=4)
    for seq, (eid, kind, session, user, agent) in enumerate(ENTRIES, start=1):
        event = EntryRecorded(entry_id=eid, kind=kind, content=f"plan {eid}",  # type: ignore[arg-type]
                              occurred_at=seq, session_id=session, user_id=user, agent_id=agent)
        idx.add(eid, entry_document(event, seq, seq))
    idx.commit(len(ENTRIES))
    return idx


def _found(index: SearchIndex, scope: Scope | None, text: str = "plan", **kw: object) -> set[str]:
    hits = run_search(index, SearchQuery(text=text, scope=scope, limit=100, **kw), None)  # type: ignore[arg-type]
    return {ENTRIES[h.rseq - 1][0] for h in hits}


@pytest.mark.parametrize("text", ["plan", ""])
def test_user_scope_sees_the_user_and_shared_context(index: SearchIndex, text: str) -> None:
    assert _found(index, Scope(user_id="alice"), text) == {"a1", "a2", "a3", "p1"}
    assert _found(index, Scope(user_id="alice", shared=False), text) == {"a1", "a2", "a3"}


def test_session_scope_adds_the_readers_sessions(index: SearchIndex) -> None:
    """A session clause alone sees every document of those sessions; with a user,
    the user's own documents wherever they are."""
    assert _found(index, Scope(session_ids=("s-bob", "s-nobody"), shared=False)) == {"b1", "b2", "p2", "n1"}
    assert _found(index, Scope(user_id="bob", session_ids=("s-bob",))) == {"b1", "b2", "p1", "p2", "p3", "x1"}


def test_a_users_sessions_never_show_another_users_entry(index: SearchIndex) -> None:
    """An entry carrying Bob's id is Bob's, even in Alice's session (stores from
    before such writes were refused may hold one)."""
    assert "x1" not in _found(index, Scope(user_id="alice", session_ids=("s-alice",)))
    assert "x1" in _found(index, Scope(user_id="bob", session_ids=("s-bob",)))
    assert "x1" in _found(index, Scope(session_ids=("s-alice",), shared=False))  # no user: the session's all


@pytest.mark.parametrize("sort", ["newest", "oldest"])
def test_browsing_by_time_finds_the_newest_and_oldest(index: SearchIndex, sort: str) -> None:
    """An empty query sorted by time asks each shard for its newest (oldest)
    documents, not the first it holds (before, ``search "" --sort newest``
    sorted the oldest few candidates)."""
    hits = run_search(index, SearchQuery(sort=sort, limit=2, kinds=("message", "decision", "lesson",  # type: ignore[arg-type]
                                                                    "finding", "project", "preference")),
                      None, depth=2)
    times = sorted(range(1, len(ENTRIES) + 1), reverse=sort == "newest")[:2]
    assert [h.rseq for h in hits] == times


def test_agent_scope(index: SearchIndex) -> None:
    assert _found(index, Scope(agent_id="planner", shared=False)) == {"b2", "g1"}


def test_shared_alone_is_the_project_context(index: SearchIndex) -> None:
    """Only kind "project" with no user and no session is shared."""
    assert _found(index, Scope()) == {"p1"}


def test_a_scope_without_clauses_matches_nothing(index: SearchIndex) -> None:
    assert _found(index, Scope(shared=False)) == set()
    assert _found(index, Scope(shared=False), "") == set()


def test_no_scope_sees_everything(index: SearchIndex) -> None:
    assert _found(index, None) == {e[0] for e in ENTRIES}


def test_scope_and_other_filters_combine(index: SearchIndex) -> None:
    assert _found(index, Scope(user_id="alice"), kinds=("decision", "project")) == {"a2", "p1"}
    assert _found(index, Scope(user_id="alice"), exclude_sessions=("s-alice-old",)) == {"a1", "a3", "p1"}


def test_make_query_validates_scope_source_and_mode() -> None:
    q = make_query("x", scope=Scope(user_id="alice", session_ids=("s1",)), source="both", mode="hybrid")
    assert q.scope == Scope(user_id="alice", session_ids=("s1",))
    assert q.source == "both" and q.mode == "hybrid"
    assert make_query("x").source == "entries" and make_query("x").mode is None
    for bad in ({"scope": "alice"}, {"source": "everything"}, {"mode": "fuzzy"},
                {"scope": Scope(user_id="")}, {"scope": Scope(session_ids=("",))}):
        with pytest.raises(InvalidInputError):
            make_query("x", **bad)  # type: ignore[arg-type]


def test_archived_sessions_stay_out_of_a_scoped_search(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "store") as mem:
        old = mem.start_session(user_id="alice")
        new = mem.start_session(user_id="alice")
        mem.add_message(old, role="user", content="the plan is postgres")
        mem.add_message(new, role="user", content="the plan is sqlite")
        mem.archive_session(old)
        scope = Scope(user_id="alice", session_ids=(old, new))
        narrow = make_query("plan", scope=scope, include_archived=False)
        assert {r.session_id for r in find(mem.store, narrow)} == {new}
        wide = make_query("plan", scope=scope, include_archived=True)
        assert {r.session_id for r in find(mem.store, wide)} == {old, new}
