"""The context builder: budget, drop order, summary only on truncation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commands import DROP_ORDER, MemoryLog

_ALL = {"project", "memories", "preferences", "handoff", "decisions", "lessons", "tasks", "summary",
        "messages"}


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryLog, str]]:
    """A session with every section filled."""
    with MemoryLog.open(tmp_path_factory.mktemp("ctx") / "store", max_context_messages=5) as mem:
        sid = mem.start_session(user_id="alice")
        mem.set_project_context(sid, content="Payments platform on PostgreSQL and Kafka.")
        mem.remember("alice", "favourite_db", "PostgreSQL")
        mem.set_preference("alice", key="style", value="concise")
        for i in range(3):
            mem.record_decision(sid, decision=f"Database decision number {i} about postgres tuning")
            mem.record_lesson(sid, content=f"Database lesson number {i} about connection pools")
        mem.add_task(sid, content="Write the runbook")
        mem.record_summary(sid, content="Earlier: the team compared databases and chose PostgreSQL.")
        for i in range(12):
            mem.add_message(sid, role="user" if i % 2 else "assistant", content=f"message {i} " * 8)
        mem.record_handoff(sid, content="Next: pooling and failover.")
        yield mem, sid


def test_everything_fits_a_large_budget(full: tuple[MemoryLog, str]) -> None:
    """With room, every section is present and the summary shows because history was cut."""
    mem, sid = full
    block = mem.context(sid, query="database", budget_tokens=5000)
    names = [s.name for s in block.sections]
    assert names == ["project", "memories", "preferences", "handoff", "decisions", "lessons", "tasks",
                     "summary", "messages", "instruction"]
    assert block.truncated and block.dropped == ()
    assert block.tokens <= 5000
    assert "message 11" in block.text and "message 6 " not in block.text


@settings(max_examples=30, deadline=None)
@given(budget=st.integers(min_value=1, max_value=1500))
def test_budget_is_never_exceeded_and_drop_order_holds(full: tuple[MemoryLog, str], budget: int) -> None:
    """For any budget the block fits, and sections go in seed 002's order."""
    mem, sid = full
    block = mem.context(sid, query="database", budget_tokens=budget)
    assert block.tokens <= budget
    assert len(block.text) <= budget * 4
    dropped = list(block.dropped)
    assert dropped == [n for n in DROP_ORDER if n in dropped]
    present = {s.name for s in block.sections}
    for name in dropped:  # nothing later in the drop order went before it
        later = DROP_ORDER[DROP_ORDER.index(name) + 1 :]
        assert all(n in present or n in dropped or n not in _ALL for n in later)


def test_lessons_go_before_decisions_and_handoff_last(full: tuple[MemoryLog, str]) -> None:
    """Shrinking the budget drops lessons first and keeps the handoff longest."""
    mem, sid = full
    sizes = [mem.context(sid, query="database", budget_tokens=b) for b in (5000, 400, 200, 60, 20)]
    # the query's matches (recall) go before any of seed 002's sections
    first_drops = [next(d for d in b.dropped if d != "recall") for b in sizes if set(b.dropped) - {"recall"}]
    assert all(d == "lessons" for d in first_drops)
    for block in sizes:
        names = {s.name for s in block.sections}
        assert "handoff" in names or not names  # the handoff goes last
    assert {s.name for s in sizes[-1].sections} <= {"handoff"}


def test_summary_only_on_truncation(tmp_path: Path) -> None:
    """A short history shows no summary even when one exists."""
    with MemoryLog.open(tmp_path / "s") as mem:
        sid = mem.start_session()
        mem.add_message(sid, role="user", content="hi")
        mem.record_summary(sid, content="a summary")
        block = mem.context(sid, budget_tokens=2000)
    assert not block.truncated and "summary" not in [s.name for s in block.sections]


def test_token_counter_is_pluggable(full: tuple[MemoryLog, str]) -> None:
    """A custom counter (words) drives the budget."""
    mem, sid = full
    block = mem.context(sid, budget_tokens=50, count_tokens=lambda t: len(t.split()))
    assert len(block.text.split()) <= 50 and block.tokens <= 50


def test_a_query_orders_the_searched_sections_and_does_not_empty_them(tmp_path: Path) -> None:
    """The session's only decision shows though it shares no word with the query;
    an open finding shows, a resolved one does not; the query's match comes first."""
    with MemoryLog.open(tmp_path / "s", embedder=None) as mem:
        sid = mem.start_session(user_id="alice")
        mem.record_decision(sid, decision="Use PostgreSQL for the ledger")
        mem.record_finding(sid, description="Connection pooling is not configured", severity="high")
        fixed = mem.record_finding(sid, description="The staging certificate expired")
        mem.update_finding(fixed, status="resolved")
        mem.record_finding(sid, description="The database backups are never restored in tests")
        block = mem.context(sid, query="database", budget_tokens=4000)
    sections = {s.name: s for s in block.sections}
    assert "Use PostgreSQL for the ledger" in block.text
    assert sections["findings"].items == 2 and "certificate" not in block.text
    findings = block.text[block.text.index("Open findings:"):]
    assert findings.index("backups") < findings.index("pooling")  # the match first, then the newest
