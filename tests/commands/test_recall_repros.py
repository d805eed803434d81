"""Issue 15's repros R1-R6, each run on the CLI as a new user would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from commands import MemoryLog

from .conftest import Run


def _start(run: Run, user: str, *extra: str) -> str:
    code, out, err = run("session", "start", "--user", user, *extra)
    assert code == 0, err
    return str(out["id"])


def _add(run: Run, *args: str) -> str:
    code, out, err = run("add", *args)
    assert code == 0, err
    return str(out["id"])


def _context(run: Run, sid: str, *args: str) -> dict[str, Any]:
    code, out, err = run("context", sid, *args)
    assert code == 0, err
    assert isinstance(out, dict)
    return out


@pytest.mark.parametrize("archived", [True, False])
def test_r1_context_never_shows_another_users_decision(run: Run, archived: bool) -> None:
    """R1: Bob's context for "plan" holds nothing of Alice's, archived session or not."""
    alice = _start(run, "alice")
    _add(run, "decision", alice, "--decision", "Alice plan: migrate the ledger to PostgreSQL")
    _add(run, "lesson", alice, "--content", "Alice plan lesson: test the failover")
    if archived:
        assert run("session", "archive", alice)[0] == 0
    bob = _start(run, "bob")
    _add(run, "message", bob, "--role", "user", "--content", "what is the plan for today")
    block = _context(run, bob, "--query", "plan")
    assert "Alice" not in block["text"]
    assert "plan for today" in block["text"]


def test_r2_new_session_carries_over_handoff_recovery_and_project(run: Run) -> None:
    """R2: a new session of the same user gets the last handoff, the last 3 messages
    and the project context of the previous one."""
    first = _start(run, "alice")
    _add(run, "project", first, "--content", "Payments ledger on PostgreSQL and Kafka")
    for i in range(5):
        _add(run, "message", first, "--role", "user", "--content", f"first session message {i}")
    _add(run, "handoff", first, "--content", "Next: write the failover runbook")
    second = _start(run, "alice")
    text = _context(run, second)["text"]
    assert "Last session:\nNext: write the failover runbook" in text
    assert "Payments ledger on PostgreSQL and Kafka" in text
    assert "Recovering previous session:" in text
    for i in (2, 3, 4):
        assert f"first session message {i}" in text
    for i in (0, 1):
        assert f"first session message {i}" not in text


def test_r3_user_search_finds_the_users_session_entries(run: Run) -> None:
    """R3: ``search --user alice`` finds what plain search finds in Alice's sessions."""
    alice = _start(run, "alice")
    ids = {_add(run, "decision", alice, "--decision", "Adopt PostgreSQL for the ledger"),
           _add(run, "message", alice, "--role", "user", "--content", "is postgresql fast enough")}
    bob = _start(run, "bob")
    bobs = _add(run, "message", bob, "--role", "user", "--content", "postgresql for bob too")
    code, everything, _ = run("search", "postgresql")
    assert code == 0 and {h["id"] for h in everything} == ids | {bobs}
    code, scoped, err = run("search", "postgresql", "--user", "alice")
    assert code == 0, err
    assert {h["id"] for h in scoped} == ids


def test_r4_memories_are_paginated_with_a_total(run: Run) -> None:
    """R4: 55 memories are all reachable, and the listing says how many there are."""
    for i in range(55):
        assert run("remember", "--user", "alice", f"fact_{i:02d}", f"value {i}")[0] == 0
    code, page, err = run("memories", "--user", "alice")
    assert code == 0, err
    assert page["total"] == 55
    keys = [m["key"] for m in page["memories"]]
    while page["next_offset"] is not None:
        code, page, err = run("memories", "--user", "alice", "--offset", str(page["next_offset"]))
        assert code == 0, err
        keys += [m["key"] for m in page["memories"]]
    assert sorted(keys) == [f"fact_{i:02d}" for i in range(55)]
    code, text, _ = run("memories", "--user", "alice", as_json=False)
    assert code == 0 and "of 55" in text


def test_r5_a_long_project_does_not_empty_the_block(run: Run) -> None:
    """R5: a 560-token project and one message under a 300-token budget give a
    block that fits, holds the message and the project's start, cut with an ellipsis."""
    sid = _start(run, "alice")
    project = ("Stack: Python, PostgreSQL ledger, Kafka events. " * 60)[:2240]
    _add(run, "project", sid, "--content", project)
    _add(run, "message", sid, "--role", "user", "--content", "what is the plan")
    block = _context(run, sid, "--budget", "300")
    assert 0 < block["tokens"] <= 300
    assert "what is the plan" in block["text"]
    assert "Stack: Python, PostgreSQL ledger" in block["text"] and "…" in block["text"]
    assert "project" in block["trimmed"] and block["dropped"] == []


def test_r6_a_preference_key_holds_its_latest_value(run: Run) -> None:
    """R6: a second ``add preference`` with the same key replaces the first in the
    context; the history keeps both."""
    sid = _start(run, "alice")
    first = _add(run, "preference", "--user", "alice", "--key", "response_style", "--value", "concise")
    _add(run, "preference", "--user", "alice", "--key", "response_style", "--value", "verbose, with examples")
    text = _context(run, sid)["text"]
    assert "response_style: verbose, with examples" in text
    assert "concise" not in text
    code, shown, _ = run("show", first)
    assert code == 0 and shown["content"] == "response_style: concise"


@pytest.mark.parametrize("first", [0, 1])
def test_a_turn_between_two_sessions_hits_is_its_sessions_neighbour(tmp_path: Path, first: int) -> None:
    """A turn recorded right after a hit of its session and right before a hit of
    another session is that first hit's neighbour, whichever hit ranks first (it
    was dropped when the other session's hit claimed it last; as-of searches and
    replays could then disagree)."""
    with MemoryLog.open(tmp_path / "m", embedder=None) as mem:
        sessions = [mem.start_session(user_id="alice"), mem.start_session(user_id="alice")]
        hit = mem.add_message(sessions[first], role="user", content="the cache latency doubled")
        turn = mem.add_message(sessions[first], role="assistant", content="postgres was fine though")
        other = mem.add_message(sessions[1 - first], role="user", content="the cache latency doubled")
        found = [h.id for h in mem.search("cache latency", limit=50, record_access=False)]
    assert {hit, other, turn} <= set(found)
