"""A deletion takes exactly what it names: every criterion narrows.

Two users share one store. A session narrowed by a kind, a user narrowed by
a kind, tags and times each take only the items that match all of them, in
the library and the CLI; ids with other criteria are refused and write
nothing; a dry run lists what a real run then erases; consent and switches are
real booleans. A hypothesis property checks random criteria over random
stores against a model of the selection.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from commands import MemoryLog
from eventstore import InvalidInputError

from .conftest import Run, head_of

DAY = 86_400_000_000
T0 = 1_700_000_000_000_000


def live(mem: MemoryLog) -> dict[str, str]:
    """Every live entry (id -> kind) and memory (id -> "memory") of the store."""
    with mem.store.read() as views:
        found = {v.entry_id: v.kind for v in views.latest_entries() if v.state != "deleted"}
        users = {s.user_id for s in views.sessions() if s.user_id is not None} | {"alice", "bob"}
        for user in users:
            found.update({m.memory_id: "memory" for m in views.memories(user)})
    return found


class Two:
    """Alice's two sessions and Bob's one, with messages, a decision, tags and a memory."""

    def __init__(self, mem: MemoryLog) -> None:
        self.a = mem.start_session(user_id="alice")
        self.a2 = mem.start_session(user_id="alice")
        self.b = mem.start_session(user_id="bob")
        self.a_msgs = [mem.add_message(self.a, role="user", content=f"alice says {i}") for i in range(3)]
        self.a_dec = mem.record_decision(self.a, decision="alice picks postgres")
        self.a2_msg = mem.add_message(self.a2, role="user", content="alice again", tags=["billing"])
        self.b_msg = mem.add_message(self.b, role="user", content="bob says hello", tags=["billing"])
        self.a_mem = mem.remember("alice", "city", "Lisbon")
        self.b_mem = mem.remember("bob", "city", "Oslo")


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[MemoryLog, Two]]:
    with MemoryLog.open(tmp_path / "store") as mem:
        yield mem, Two(mem)


WHY = {"reason": "erasure request", "requested_by": "dpo"}


def test_a_session_narrowed_by_kind_takes_only_its_messages(two: tuple[MemoryLog, Two]) -> None:
    mem, t = two
    before = live(mem)
    report = mem.delete(session_id=t.a, kinds=["message"], **WHY)
    assert set(report.ids) == set(t.a_msgs)
    assert report.counts_by_kind == {"message": 3}
    after = live(mem)
    assert after == {k: v for k, v in before.items() if k not in t.a_msgs}
    assert mem.session(t.a).id == t.a  # the session itself stays


def test_a_user_narrowed_by_kind_leaves_other_users(two: tuple[MemoryLog, Two]) -> None:
    mem, t = two
    report = mem.delete(user_id="alice", kinds=["message"], **WHY)
    assert set(report.ids) == {*t.a_msgs, t.a2_msg}
    after = live(mem)
    assert {t.b_msg, t.b_mem, t.a_dec, t.a_mem} <= set(after)


def test_user_and_tag_intersect(two: tuple[MemoryLog, Two]) -> None:
    mem, t = two
    report = mem.delete(user_id="alice", tags=["billing"], **WHY)
    assert report.ids == (t.a2_msg,)
    assert t.b_msg in live(mem)


def test_session_of_another_user_selects_nothing(two: tuple[MemoryLog, Two]) -> None:
    mem, t = two
    seq = mem.last_seq
    with pytest.raises(InvalidInputError):
        mem.delete(session_id=t.b, user_id="alice", **WHY)
    assert mem.last_seq == seq
    assert t.b_msg in live(mem)


@pytest.mark.parametrize("extra", [{"kinds": ["message"]}, {"session_id": "s"}, {"user_id": "alice"},
                                   {"tags": ["billing"]}, {"before": "2030-01-01T00:00:00Z"}])
def test_ids_with_other_criteria_are_refused(two: tuple[MemoryLog, Two], extra: dict[str, Any]) -> None:
    mem, t = two
    seq = mem.last_seq
    with pytest.raises(InvalidInputError) as caught:
        mem.delete(ids=[t.a_dec], **extra, **WHY)
    assert caught.value.code == "E_SCHEMA_INVALID"
    assert mem.last_seq == seq
    assert t.a_dec in live(mem)


def test_an_empty_time_window_is_refused(two: tuple[MemoryLog, Two]) -> None:
    mem, _ = two
    with pytest.raises(InvalidInputError):
        mem.delete(after="2030-01-01T00:00:00Z", before="2020-01-01T00:00:00Z", **WHY)


def test_dry_run_lists_what_the_real_run_erases(two: tuple[MemoryLog, Two]) -> None:
    mem, t = two
    seq = mem.last_seq
    preview = mem.delete(user_id="alice", kinds=["message", "decision"], dry_run=True, **WHY)
    assert preview.dry_run and preview.request_id == "" and not preview.purged
    assert mem.last_seq == seq and set(live(mem)) >= set(preview.ids)
    report = mem.delete(user_id="alice", kinds=["message", "decision"], **WHY)
    assert set(report.ids) == set(preview.ids) == {*t.a_msgs, t.a_dec, t.a2_msg}


@pytest.mark.parametrize("value", ["yes", "true", 1, None])
@pytest.mark.parametrize("flag", ["dry_run", "defer", "include_derived", "resummarise"])
def test_switches_are_real_booleans(two: tuple[MemoryLog, Two], flag: str, value: object) -> None:
    mem, t = two
    if flag == "resummarise" and value is None:
        return  # None is resummarise's own default: the setting
    seq = mem.last_seq
    with pytest.raises(InvalidInputError):
        mem.delete(ids=[t.a_dec], **{flag: value}, **WHY)
    assert mem.last_seq == seq


def test_a_whole_session_still_goes_whole(two: tuple[MemoryLog, Two]) -> None:
    mem, t = two
    report = mem.delete(session_id=t.a, **WHY)
    assert report.counts_by_kind == {"session": 1, "message": 3, "decision": 1}


def test_cli_accepts_a_session_with_a_type(run: Run, store: Path) -> None:
    with MemoryLog.open(store) as mem:
        t = Two(mem)
    seq = head_of(store)
    code, preview, err = run("delete", "--session", t.a, "--type", "message", "--reason", "r",
                             "--requested-by", "dpo", "--dry-run")
    assert code == 0, err
    assert preview["dry_run"] is True and set(preview["ids"]) == set(t.a_msgs)
    assert head_of(store) == seq
    code, report, err = run("delete", "--session", t.a, "--type", "message", "--reason", "r",
                            "--requested-by", "dpo", "--yes")
    assert code == 0, err
    assert set(report["ids"]) == set(t.a_msgs) and report["verified"] is True
    with MemoryLog.open(store) as mem:
        assert {t.a_dec, t.b_msg, t.a2_msg} <= set(live(mem))


def test_cli_refuses_ids_with_criteria(run: Run, store: Path) -> None:
    with MemoryLog.open(store) as mem:
        t = Two(mem)
    seq = head_of(store)
    code, _, err = run("delete", "--id", t.a_dec, "--type", "message", "--reason", "r",
                       "--requested-by", "dpo", "--yes")
    assert code == 2 and "E_SCHEMA_INVALID" in err
    assert head_of(store) == seq


# -- the property ------------------------------------------------------------

USERS = ("u0", "u1", "u2")
KINDS = ("message", "decision", "lesson")
TAGS = ("red", "blue")

items = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1), st.sampled_from(KINDS),
                           st.sets(st.sampled_from(TAGS), max_size=2), st.integers(0, 9)),
                 min_size=4, max_size=16)
criteria = st.fixed_dictionaries({}, optional={
    "user": st.integers(0, 2), "session": st.tuples(st.integers(0, 2), st.integers(0, 1)),
    "kinds": st.lists(st.sampled_from(KINDS), min_size=1, max_size=2, unique=True),
    "tags": st.lists(st.sampled_from(TAGS), min_size=1, max_size=1),
    "before": st.integers(1, 10), "after": st.integers(0, 9)}).filter(
    lambda c: any(k in c for k in ("kinds", "tags", "before", "after"))
    and c.get("after", -1) < c.get("before", 99))  # whole scopes and empty windows: tests above


def _request(c: dict[str, Any], sids: dict[tuple[int, int], str]) -> dict[str, Any]:
    request: dict[str, Any] = {"kinds": c.get("kinds"), "tags": c.get("tags")}
    if "user" in c:
        request["user_id"] = USERS[c["user"]]
    if "session" in c:
        request["session_id"] = sids[c["session"]]
    for edge in ("before", "after"):
        if edge in c:
            request[edge] = T0 + c[edge] * DAY
    return request


def _expected(made: list[tuple[str, tuple[int, int, str, set[str], int]]], c: dict[str, Any]) -> set[str]:
    def takes(user: int, sess: int, kind: str, tags: set[str], day: int) -> bool:
        return (c.get("user", user) == user and c.get("session", (user, sess)) == (user, sess)
                and kind in c.get("kinds", KINDS) and (not c.get("tags") or bool(tags & set(c["tags"])))
                and day < c.get("before", 99) and day >= c.get("after", -1))

    return {eid for eid, spec in made if takes(*spec)}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=items, c=criteria)
def test_deleted_set_is_the_intersection(tmp_path_factory: pytest.TempPathFactory,
                                         specs: list[tuple[int, int, str, set[str], int]],
                                         c: dict[str, Any]) -> None:
    with MemoryLog.open(tmp_path_factory.mktemp("prop") / "store") as mem:
        sids = {(u, s): mem.start_session(user_id=USERS[u]) for u in range(3) for s in range(2)}
        made = []
        for n, (user, sess, kind, tags, day) in enumerate(specs):
            when = T0 + day * DAY
            sid, tagged = sids[(user, sess)], sorted(tags)
            eid = (mem.add_message(sid, role="user", content=f"note {n}", tags=tagged, occurred_at=when)
                   if kind == "message" else
                   mem.record_decision(sid, decision=f"pick {n}", tags=tagged, occurred_at=when)
                   if kind == "decision" else
                   mem.record_lesson(sid, content=f"lesson{n} topic{n}", tags=tagged, occurred_at=when))
            made.append((eid, (user, sess, kind, tags, day)))
        mems = [mem.remember(u, "k", "v") for u in USERS]
        before = live(mem)
        want = _expected(made, c)
        request = _request(c, sids)
        if not want:
            with pytest.raises(InvalidInputError):
                mem.delete(**request, include_derived=False, defer=True, **WHY)
            assert live(mem) == before
            return
        event("deletes some")
        preview = mem.delete(**request, include_derived=False, dry_run=True, **WHY)
        report = mem.delete(**request, include_derived=False, defer=True, **WHY)
        assert set(preview.ids) == set(report.ids) == want
        assert live(mem) == {k: v for k, v in before.items() if k not in want}
        assert set(mems) <= set(live(mem))


def test_langgraph_delete_takes_only_the_named_item(tmp_path: Path) -> None:
    """Two users' LangGraph stores on one MemoryLog: alice's delete of one item
    leaves her other items, the same key of bob's, and the log's entries."""
    pytest.importorskip("langgraph")
    from commands.langgraph import MemlogStore

    with MemoryLog.open(tmp_path / "store") as mem:
        t = Two(mem)
        alice = MemlogStore(mem, user_id="alice", embedder=None)
        bob = MemlogStore(mem, user_id="bob", embedder=None)
        for store in (alice, bob):
            store.put(("notes",), "a", {"text": "first"})
            store.put(("notes",), "b", {"text": "second"})
        before = live(mem)
        alice.delete(("notes",), "a")
        assert alice.get(("notes",), "a") is None
        assert alice.get(("notes",), "b") is not None
        assert bob.get(("notes",), "a") is not None and bob.get(("notes",), "b") is not None
        after = live(mem)
        assert {t.b_msg, t.a_dec, t.a_mem, t.b_mem, *t.a_msgs} <= set(after)
        assert len(before) - len(after) <= 2  # the item and its search text, nothing else
