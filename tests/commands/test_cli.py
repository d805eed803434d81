"""Every CLI command, with its --json shape, and bad input that writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Run, head_of


@pytest.fixture
def sid(run: Run) -> str:
    """A started session."""
    code, out, _ = run("session", "start", "--user", "alice", "--agent", "architect",
                       "--agent", "analyst", "--tag", "payments", "--meta", "project=pay")
    assert code == 0
    return str(out["id"])


def test_write_commands_return_id_and_seq(run: Run, sid: str) -> None:
    """Each add command prints {"id", "seq"} and the entry can be shown."""
    cases = [
        ("add", "message", sid, "--role", "user", "--content", "ledger must scale", "--topic", "db"),
        ("add", "decision", sid, "--decision", "Use PostgreSQL", "--rationale", "ACID",
         "--impact", "high", "--made-by", "architect", "--tag", "database"),
        ("add", "finding", sid, "--description", "Pool not configured", "--severity", "high",
         "--category", "scalability", "--evidence", "missing", "--recommendation", "add pool"),
        ("add", "lesson", sid, "--content", "Load-test pools"),
        ("add", "task", sid, "--content", "Configure pooling"),
        ("add", "handoff", sid, "--content", "Pooling next"),
        ("add", "project", sid, "--content", "Payments on PostgreSQL"),
        ("add", "preference", "--user", "alice", "--key", "style", "--value", "concise"),
    ]
    seqs = []
    for args in cases:
        code, out, err = run(*args)
        assert code == 0, err
        assert set(out) == {"id", "seq"} and out["seq"] > 0
        seqs.append(out["seq"])
        code, shown, _ = run("show", out["id"])
        assert code == 0 and shown["state"] == "live" and shown["id"] == out["id"]
    assert seqs == sorted(seqs)


def test_session_lifecycle(run: Run, sid: str) -> None:
    """Sessions list, show statistics, archive (hidden by default) and restore."""
    run("add", "message", sid, "--role", "user", "--content", "hello")
    code, shown, _ = run("session", "show", sid)
    assert code == 0 and shown["statistics"]["total_messages"] == 1
    assert shown["agent_ids"] == ["architect", "analyst"] and shown["metadata"] == {"project": "pay"}
    assert [s["id"] for s in run("session", "list")[1]] == [sid]
    assert run("session", "archive", sid)[0] == 0
    assert run("session", "list")[1] == []
    assert [s["id"] for s in run("session", "list", "--archived")[1]] == [sid]
    assert run("session", "restore", sid)[0] == 0
    # -- upkeep: a write into an archived session restores it (auto_restore)
    assert run("session", "archive", sid)[0] == 0
    code, _, err = run("add", "message", sid, "--role", "user", "--content", "late")
    assert code == 0, err
    assert [s["id"] for s in run("session", "list", "--user", "alice")[1]] == [sid]


def test_search_shapes_filters_and_archive(run: Run, sid: str) -> None:
    """search --json returns DESIGN's fields; filters and archived sessions behave."""
    run("add", "decision", sid, "--decision", "Use PostgreSQL for the ledger", "--tag", "db")
    run("add", "message", sid, "--role", "user", "--content", "postgres replication lag",
        "--agent", "analyst")
    code, hits, _ = run("search", "postgres")
    assert code == 0 and len(hits) == 2
    assert {"id", "type", "session_id", "content", "snippet", "score", "occurred_at",
            "tags"} <= set(hits[0])
    assert [h["type"] for h in run("search", "postgres", "--type", "decision")[1]] == ["decision"]
    assert len(run("search", "postgre")[1]) == 2  # prefix
    assert len(run("search", "postgrse")[1]) == 2  # fuzzy
    assert [h["type"] for h in run("search", "postgres", "--by-agent", "analyst")[1]] == ["message"]
    assert [h["type"] for h in run("search", "postgres", "--tag", "db")[1]] == ["decision"]
    assert run("search", "postgres", "--since", "2100-01-01T00:00:00Z")[1] == []
    newest = run("search", "postgres", "--sort", "newest")[1]
    assert newest[0]["type"] == "message"
    run("session", "archive", sid)
    assert run("search", "postgres")[1] == []
    assert len(run("search", "postgres", "--archived")[1]) == 2


def test_memories_remember_forget(run: Run) -> None:
    """remember, memories and forget work by key."""
    code, out, _ = run("remember", "--user", "alice", "favourite_db", "PostgreSQL")
    assert code == 0 and out["id"].startswith("mem-")
    assert [m["content"] for m in run("memories", "--user", "alice")[1]["memories"]] == ["PostgreSQL"]
    assert run("forget", "--user", "alice", "favourite_db")[0] == 0
    assert run("memories", "--user", "alice")[1]["memories"] == []


def test_context_task_decay_stats_replay(run: Run, sid: str) -> None:
    """context, task done, decay, stats and replay have their --json shapes."""
    code, task, _ = run("add", "task", sid, "--content", "Write runbook")
    assert run("task", "done", task["id"])[0] == 0
    assert run("show", task["id"])[1]["details"] == {"done": True}
    code, block, _ = run("context", sid, "--budget", "500")
    assert code == 0 and set(block) >= {"text", "tokens", "budget", "sections"}
    assert block["tokens"] <= 500 and block["budget"] == 500
    code, out, _ = run("decay", "--as-of", "2026-01-11T10:00:00Z", "--rate", "message=0.2")
    assert code == 0 and out["seq"] > 0
    code, stats, _ = run("stats")
    assert code == 0 and stats["events"] == stats["head_seq"] and stats["by_kind"]["task"] == 1
    assert stats["checkpoints"]["views"] == stats["head_seq"]
    code, out, _ = run("replay")
    assert code == 0 and out["events"] == stats["head_seq"]


def test_human_output_is_readable(run: Run, sid: str) -> None:
    """Without --json the commands print short human lines."""
    run("add", "decision", sid, "--decision", "Use PostgreSQL")
    code, out, _ = run("search", "postgres", as_json=False)
    assert code == 0 and "decision" in out and "Use PostgreSQL" in out
    code, out, _ = run("session", "show", sid, as_json=False)
    assert code == 0 and "entries: 1" in out
    code, out, _ = run("stats", as_json=False)
    assert code == 0 and "events:" in out


BAD = [
    (("remember", "--user", "alice", "Bad-Key", "x"), 2, "invalid key"),
    (("remember", "--user", "alice", "system_x", "x"), 2, "reserved"),
    (("remember", "--user", "alice", "k" * 65, "x"), 2, "at most 64"),
    (("add", "message", "sess-nope", "--role", "user", "--content", "x"), 3, "not found"),
    (("add", "message", "{sid}", "--role", "user", "--content", "   "), 2, "must not be empty"),
    (("add", "message", "{sid}", "--role", "user", "--content", "x" * 2000), 2, "the limit is 1024"),
    (("add", "message", "{sid}", "--role", "user", "--content", "x", "--at", "yesterday"), 2,
     "invalid time"),
    (("add", "message", "{sid}", "--role", "user", "--content", "x", "--at", "2026-01-01T10:00:00"),
     2, "zone"),
    (("add", "decision", "{sid}", "--decision", "x", "--impact", "huge"), 2, "huge"),
    (("add", "message", "{sid}", "--role", "robot", "--content", "x"), 2, "robot"),
    (("add", "preference", "--user", "alice", "--key", "k", "--value", "v", "--confidence", "3"), 2,
     "confidence"),
    (("search", "x", "--since", "not-a-time"), 2, "invalid time"),
    (("search", "x", "--limit", "0"), 2, "0"),
    (("show", "dec-doesnotexist"), 3, "no entry or memory"),
    (("forget", "--user", "alice", "never_saved"), 3, "no memory"),
    (("task", "done", "dec-doesnotexist"), 3, "not found"),
    (("context", "sess-nope"), 3, "not found"),
    (("session", "show", "bad id"), 2, "session id"),
    (("session", "start", "--meta", "novalue"), 2, "KEY=VALUE"),
    (("session", "start", "--meta", "db_password: hunter2"), 2, "a value of 20 characters has no ="),
    (("redact", "{sid}", "--regex", "SECRETX(", "--reason", "r", "--requested-by", "me"), 2, "missing )"),
    (("decay", "--rate", "message=fast"), 2, "KIND=RATE"),
    (("audit", "at", "@x", "entry", "x"), 2, "invalid seq"),
]


@pytest.mark.parametrize(("args", "code", "words"), BAD, ids=[" ".join(b[0])[:40] for b in BAD])
def test_bad_input_is_one_error_line_and_writes_nothing(
    run: Run, store: Path, sid: str, args: tuple[str, ...], code: int, words: str
) -> None:
    """Bad input exits non-zero with one Error line naming the problem; the log head is unchanged."""
    head = head_of(store)
    argv = [a.replace("{sid}", sid) for a in args]
    got, out, err = run(*argv, env={"MEMLOG_MAX_CONTENT_BYTES": "1024"})
    assert got == code, err
    assert out == ""
    assert words in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and "Traceback" not in err
    assert head_of(store) == head
    assert not any(secret in err for secret in ("hunter2", "SECRETX"))  # content is not repeated
