"""Scope and the context builder: shared project context, projects, agents,
trimming before dropping, the JSON report, as-of contexts, and bad input."""

from __future__ import annotations

from pathlib import Path

from commands import MemoryLog
from eventstore import InvalidInputError

from .conftest import Run, head_of


def _ids(mem: MemoryLog, text: str, **scope: str) -> set[str]:
    return {h.id for h in mem.search(text, record_access=False, **scope)}  # type: ignore[arg-type]


def test_shared_project_context_reaches_every_user(tmp_path: Path) -> None:
    """A project entry without a session is in every user's scope and context;
    one recorded in Alice's session stays hers."""
    with MemoryLog.open(tmp_path / "s") as mem:
        alice, bob = mem.start_session(user_id="alice"), mem.start_session(user_id="bob")
        shared = mem.set_project_context(None, content="Store-wide stack: Python and LMDB")
        own = mem.set_project_context(alice, content="Alice's ledger stack notes")
        assert _ids(mem, "stack", user_id="bob") == {shared}
        assert _ids(mem, "stack", user_id="alice") == {shared, own}
        assert "Store-wide stack" in mem.context(bob).text
        assert "Alice's ledger" not in mem.context(bob).text
        text = mem.context(alice).text
        assert "Store-wide stack" in text and "Alice's ledger stack notes" in text


def test_project_metadata_separates_carry_over(tmp_path: Path) -> None:
    """A new session carries over from the user's previous session of the same
    project (``--meta project=...``), not from another project's."""
    with MemoryLog.open(tmp_path / "s") as mem:
        pay = mem.start_session(user_id="alice", metadata={"project": "pay"})
        mem.set_project_context(pay, content="Payments: Kafka ledger")
        mem.record_handoff(pay, content="Next: payments failover")
        web = mem.start_session(user_id="alice", metadata={"project": "web"})
        mem.record_handoff(web, content="Next: web landing page")
        pay2 = mem.start_session(user_id="alice", metadata={"project": "pay"})
        text = mem.context(pay2).text
        assert "Next: payments failover" in text and "Payments: Kafka ledger" in text
        assert "landing page" not in text
        web2 = mem.start_session(user_id="alice", metadata={"project": "web"})
        assert "Kafka" not in mem.context(web2).text


def test_archived_previous_session_is_not_carried_over(tmp_path: Path) -> None:
    """The previous session's handoff and messages stay out once it is archived."""
    with MemoryLog.open(tmp_path / "s") as mem:
        first = mem.start_session(user_id="alice")
        mem.add_message(first, role="user", content="old conversation line")
        mem.record_handoff(first, content="Next: archived handoff")
        mem.archive_session(first)
        text = mem.context(mem.start_session(user_id="alice")).text
        assert "archived handoff" not in text and "old conversation" not in text


def test_agent_scope(tmp_path: Path) -> None:
    """``agent_id`` sees the sessions the agent took part in and what it wrote;
    ``agent_ids`` still filters by author."""
    with MemoryLog.open(tmp_path / "s") as mem:
        with_a1 = mem.start_session(user_id="alice", agent_ids=["a1"])
        other = mem.start_session(user_id="bob", agent_ids=["a2"])
        seen = mem.add_message(with_a1, role="user", content="deploy the cache")
        wrote = mem.add_message(other, role="assistant", content="deploy notes", agent_id="a1")
        hidden = mem.add_message(other, role="user", content="deploy secret of bob")
        assert hidden in _ids(mem, "deploy", agent_id="a1")  # writing there made a1 one of its agents
        mem.update_session(other, agent_ids=["a2"])  # a1 taken out again: only what it wrote stays seen
        assert _ids(mem, "deploy", agent_id="a1") == {seen, wrote}
        assert hidden in _ids(mem, "deploy", agent_id="a2")
        assert _ids(mem, "deploy", user_id="alice", agent_id="a1") == {seen}
        assert {h.id for h in mem.search("deploy", agent_ids=["a1"], record_access=False)} == {wrote}


def test_trim_before_drop_and_the_json_report(run: Run) -> None:
    """Over budget, old messages go one by one and a long item is cut before any
    section is dropped; --json says what was trimmed."""
    code, out, _ = run("session", "start", "--user", "alice")
    sid = out["id"]
    run("add", "lesson", sid, "--content", "Lesson: " + "pools need load tests " * 30)
    for i in range(8):
        run("add", "message", sid, "--role", "user", "--content", f"message number {i} " * 5)
    code, block, err = run("context", sid, "--budget", "150")
    assert code == 0, err
    assert block["tokens"] <= 150 and block["dropped"] == []
    assert "lessons" in block["trimmed"] and "…" in block["text"]
    assert "message number 7" in block["text"] and "message number 0" not in block["text"]
    names = {s["name"]: s for s in block["sections"]}
    assert names["messages"]["removed"] > 0 and names["lessons"]["cut"]
    assert sum(s["tokens"] for s in block["sections"]) <= block["tokens"]


def test_audit_at_context(run: Run) -> None:
    """``audit at @SEQ context SID`` builds the block as it was then."""
    code, out, _ = run("session", "start", "--user", "alice")
    sid = out["id"]
    code, first, _ = run("add", "handoff", sid, "--content", "Next: the first plan")
    run("add", "handoff", sid, "--content", "Next: the second plan")
    code, then, err = run("audit", "at", f"@{first['seq']}", "context", sid)
    assert code == 0, err
    assert then["as_of_seq"] == first["seq"]
    assert "first plan" in then["text"] and "second plan" not in then["text"]
    assert "second plan" in run("context", sid)[1]["text"]
    code, _, err = run("audit", "at", f"@{first['seq']}", "context", "sess-000000000000")
    assert code == 3 and "E_SESSION_NOT_FOUND" in err


def test_a_preference_in_another_users_session_is_refused(run: Run, store: Path) -> None:
    """A preference or memory for Bob in Alice's session is bad input and writes nothing."""
    sid = run("session", "start", "--user", "alice")[1]["id"]
    before = head_of(store)
    code, _, err = run("add", "preference", "--user", "bob", "--key", "k", "--value", "v", "--session", sid)
    assert code == 2 and "E_SCHEMA_INVALID" in err
    assert head_of(store) == before
    with MemoryLog.open(store) as mem:
        try:
            mem.remember("bob", "fact", "x", session_id=sid)
        except InvalidInputError:
            pass
        else:
            raise AssertionError("remember in another user's session was accepted")
        assert mem.memories("bob") == []


def test_memories_pagination_bad_input(run: Run, store: Path) -> None:
    """Bad --limit/--offset exit 2; the library refuses them too."""
    run("remember", "--user", "alice", "k1", "v1")
    assert run("memories", "--user", "alice", "--offset", "-1")[0] == 2
    assert run("memories", "--user", "alice", "--limit", "0")[0] == 2
    code, page, _ = run("memories", "--user", "alice", "--offset", "5")
    assert code == 0 and page["memories"] == [] and page["total"] == 1 and page["next_offset"] is None
    with MemoryLog.open(store) as mem:
        page_ = mem.memory_page("alice", limit=1)
        assert page_.total == 1 and page_.next_offset is None
        for bad in ({"limit": 0}, {"offset": -1}, {"limit": True}):
            try:
                mem.memory_page("alice", **bad)  # type: ignore[arg-type]
            except InvalidInputError:
                continue
            raise AssertionError(bad)


def test_context_without_query_shows_the_newest(tmp_path: Path) -> None:
    """Without a query, decisions are the 3 newest of the user's sessions, however many there are."""
    with MemoryLog.open(tmp_path / "s") as mem:
        first, second = mem.start_session(user_id="alice"), mem.start_session(user_id="alice")
        for i in range(40):
            mem.record_decision(first if i % 2 else second, decision=f"decision number {i}")
        text = mem.context(second).text
        assert [f"decision number {i}" in text for i in (39, 38, 37, 36)] == [True, True, True, False]


def test_user_scoped_memory_search(run: Run) -> None:
    """``search --user U --source memories`` finds U's memories and nobody else's."""
    run("remember", "--user", "alice", "favourite_db", "PostgreSQL for the ledger")
    run("remember", "--user", "bob", "favourite_db", "MySQL for the ledger")
    code, hits, err = run("search", "ledger", "--user", "alice", "--source", "memories")
    assert code == 0, err
    assert [h["content"] for h in hits] == ["PostgreSQL for the ledger"]
    code, hits, err = run("search", "ledger", "--user", "alice", "--source", "both")
    assert code == 0 and [h["type"] for h in hits] == ["memory"]
    assert run("search", "ledger", "--source", "everything")[0] == 2


def test_an_entry_derives_only_from_its_users_entries(tmp_path: Path) -> None:
    """Bob's decision cannot name Alice's as its source (a deletion of Alice
    would otherwise take Bob's with it); his own, or a userless one, it can."""
    with MemoryLog.open(tmp_path / "s", embedder=None) as mem:
        alice, bob = mem.start_session(user_id="alice"), mem.start_session(user_id="bob")
        hers = mem.record_decision(alice, decision="Alice's ledger plan")
        his = mem.record_decision(bob, decision="Bob's first plan")
        head = mem.log.head().seq
        try:
            mem.record_decision(bob, decision="Bob's plan", derived_from=[hers])
            raise AssertionError("a decision derived from another user's entry was recorded")
        except InvalidInputError as exc:
            assert hers not in str(exc) and mem.log.head().seq == head
        mine = mem.record_decision(bob, decision="Bob's second plan", derived_from=[his])
        mem.delete(user_id="alice", reason="erasure", requested_by="alice")
        assert mem.show(mine).state == "live" and mem.show(his).state == "live"
